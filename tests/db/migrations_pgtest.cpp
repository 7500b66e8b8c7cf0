// Tests of db::migrate and db::is_migrated against a real PostgreSQL, with synthetic migrations.

#include "db/db_support.hpp"

#include "fulltime/db/migrations.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;
using asio::experimental::awaitable_operators::operator&&;
using resources::migration_source;

namespace {

std::vector<migration_source> two_migrations() {
    // Given out of order: migrate applies by name.
    return {
        {"0002_hits.sql", "INSERT INTO hits VALUES ('0002')"},
        {"0001_create.sql",
         "CREATE TABLE hits (source text NOT NULL); INSERT INTO hits VALUES ('0001')"},
    };
}

awaitable<std::int64_t> count_hits(db::connection& conn) {
    auto r = co_await conn.query("SELECT count(*) FROM hits");
    FT_REQUIRE_OK(r);
    co_return r->get<std::int64_t>(0, 0).value();
}

awaitable<void> twice_is_noop(std::string url) {
    auto conn = co_await open_connection(url);
    auto before = co_await db::is_migrated(*conn, two_migrations());
    FT_REQUIRE_OK(before);
    CHECK_FALSE(*before);

    auto first = co_await db::migrate(*conn, two_migrations());
    FT_REQUIRE_OK(first);
    CHECK(first->applied == std::vector<std::string>{"0001_create.sql", "0002_hits.sql"});
    CHECK(first->already_applied == 0);
    {
        const auto hits = co_await count_hits(*conn);
        CHECK(hits == 2);
    }
    CHECK(conn->idle());

    auto second = co_await db::migrate(*conn, two_migrations());
    FT_REQUIRE_OK(second);
    CHECK(second->applied.empty());
    CHECK(second->already_applied == 2);
    {
        const auto hits = co_await count_hits(*conn);
        CHECK(hits == 2);
    }

    auto after = co_await db::is_migrated(*conn, two_migrations());
    FT_REQUIRE_OK(after);
    CHECK(*after);
    auto with_new = two_migrations();
    with_new.push_back({"0003_more.sql", "SELECT 1"});
    auto missing = co_await db::is_migrated(*conn, with_new);
    FT_REQUIRE_OK(missing);
    CHECK_FALSE(*missing);

    auto recorded = co_await conn->query(
        "SELECT name, checksum, applied_at IS NOT NULL FROM fulltime_schema_migrations "
        "ORDER BY name");
    FT_REQUIRE_OK(recorded);
    REQUIRE(recorded->rows() == 2);
    CHECK(recorded->text(0, 0) == "0001_create.sql");
    CHECK(recorded->text(0, 1).size() == 64);
    CHECK(recorded->text(0, 1) != recorded->text(1, 1));
    CHECK(recorded->get<bool>(0, 2).value());
    // SHA-256 of the second file's text, computed independently by the server.
    auto expected = co_await conn->query("SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex')",
                                         db::params{"INSERT INTO hits VALUES ('0002')"});
    FT_REQUIRE_OK(expected);
    CHECK(recorded->text(1, 1) == expected->text(0, 0));
}

awaitable<db::outcome<db::migration_report>> migrate_on(db::connection& conn,
                                                        std::vector<migration_source> ms) {
    co_return co_await db::migrate(conn, std::move(ms));
}

awaitable<void> concurrent_once(std::string url) {
    auto a = co_await open_connection(url);
    auto b = co_await open_connection(url);
    // The first migration is slow, so the second caller queues on the advisory lock.
    const std::vector<migration_source> ms = {
        {"0001_create.sql",
         "CREATE TABLE hits (source text NOT NULL); SELECT pg_sleep(0.3); "
         "INSERT INTO hits VALUES ('0001')"},
        {"0002_hits.sql", "INSERT INTO hits VALUES ('0002')"},
        {"0003_table.sql", "CREATE TABLE other (id int)"},
    };
    auto [ra, rb] = co_await (migrate_on(*a, ms) && migrate_on(*b, ms));
    FT_REQUIRE_OK(ra);
    FT_REQUIRE_OK(rb);
    CHECK(ra->applied.size() + rb->applied.size() == 3);
    CHECK(ra->already_applied + rb->already_applied == 3);
    std::vector<std::string> all = ra->applied;
    all.insert(all.end(), rb->applied.begin(), rb->applied.end());
    std::sort(all.begin(), all.end());
    CHECK(all == std::vector<std::string>{"0001_create.sql", "0002_hits.sql", "0003_table.sql"});
    {
        const auto hits = co_await count_hits(*a);
        CHECK(hits == 2);
    }
    auto recorded = co_await a->query("SELECT count(*) FROM fulltime_schema_migrations");
    FT_REQUIRE_OK(recorded);
    CHECK(recorded->get<std::int64_t>(0, 0).value() == 3);
}

awaitable<void> checksum_mismatch(std::string url) {
    auto conn = co_await open_connection(url);
    FT_AWAIT_OK(co_await db::migrate(*conn, two_migrations()));

    auto edited = two_migrations();
    edited[0].sql = "INSERT INTO hits VALUES ('0002'), ('edited')";
    edited.push_back({"0003_after.sql", "CREATE TABLE after_edit (id int)"});
    auto refused = co_await db::migrate(*conn, edited);
    FT_CHECK_FAILS_WITH(refused, db::errc::bad_result);
    CHECK(refused.error().message.find("0002_hits.sql") != std::string::npos);
    CHECK(conn->idle());
    // Nothing after the edited file was applied or recorded.
    auto table = co_await conn->query("SELECT to_regclass('after_edit') IS NULL");
    FT_REQUIRE_OK(table);
    CHECK(table->get<bool>(0, 0).value());
    auto recorded = co_await conn->query("SELECT count(*) FROM fulltime_schema_migrations");
    FT_REQUIRE_OK(recorded);
    CHECK(recorded->get<std::int64_t>(0, 0).value() == 2);
    {
        const auto hits = co_await count_hits(*conn);
        CHECK(hits == 2);
    }
}

awaitable<void> failing_migration(std::string url) {
    auto conn = co_await open_connection(url);
    auto ms = two_migrations();
    ms.push_back({"0003_broken.sql", "CREATE TABLE half (id int); SELEC oops"});
    ms.push_back({"0004_never.sql", "CREATE TABLE never (id int)"});
    auto failed = co_await db::migrate(*conn, ms);
    FT_CHECK_FAILS_WITH(failed, db::errc::server_error);
    CHECK(failed.error().message.find("0003_broken.sql") != std::string::npos);
    CHECK(conn->idle());
    auto state = co_await conn->query(
        "SELECT to_regclass('half') IS NULL, to_regclass('never') IS NULL, "
        "(SELECT count(*) FROM fulltime_schema_migrations)");
    FT_REQUIRE_OK(state);
    CHECK(state->get<bool>(0, 0).value());
    CHECK(state->get<bool>(0, 1).value());
    CHECK(state->get<std::int64_t>(0, 2).value() == 2);
    auto migrated = co_await db::is_migrated(*conn, ms);
    FT_REQUIRE_OK(migrated);
    CHECK_FALSE(*migrated);
}

}  // namespace

TEST_CASE("migrations: applied in name order once and a second run is a no-op") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, twice_is_noop(db.url()));
}

TEST_CASE("migrations: two concurrent migrate calls apply each migration once") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, concurrent_once(db.url()));
}

TEST_CASE("migrations: an edited applied migration is refused and nothing more is applied") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, checksum_mismatch(db.url()));
}

TEST_CASE("migrations: a failing migration is rolled back and stops the run") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, failing_migration(db.url()));
}
