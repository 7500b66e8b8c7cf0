// Tests of db::migrate and db::is_migrated against a real PostgreSQL: synthetic migrations and
// function files, and the engine's own schema.

#include "db/db_support.hpp"

#include "fulltime/db/migrations.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;
using asio::experimental::awaitable_operators::operator&&;
using resources::migration_source;
using resources::source_kind;

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

/// The two migrations and two function files; the function files come first, and one reads a
/// table that a migration creates: migrate applies every migration before any function file.
std::vector<migration_source> with_functions() {
    auto ms = two_migrations();
    ms.insert(ms.begin(),
              {{"hit_count.sql",
                "CREATE OR REPLACE FUNCTION hit_count() RETURNS bigint LANGUAGE sql "
                "AS 'SELECT count(*) FROM hits'",
                source_kind::function},
               {"answer.sql",
                "CREATE OR REPLACE FUNCTION answer() RETURNS int LANGUAGE sql AS 'SELECT 42'",
                source_kind::function}});
    return ms;
}

awaitable<std::int64_t> scalar(db::connection& conn, std::string sql) {
    auto r = co_await conn.query(std::move(sql));
    FT_REQUIRE_OK(r);
    co_return r->get<std::int64_t>(0, 0).value();
}

awaitable<void> functions_applied_and_skipped(std::string url) {
    auto conn = co_await open_connection(url);
    auto before = co_await db::is_migrated(*conn, with_functions());
    FT_REQUIRE_OK(before);
    CHECK_FALSE(*before);

    auto first = co_await db::migrate(*conn, with_functions());
    FT_REQUIRE_OK(first);
    CHECK(first->applied == std::vector<std::string>{"0001_create.sql", "0002_hits.sql"});
    CHECK(first->functions_applied == std::vector<std::string>{"answer.sql", "hit_count.sql"});
    CHECK(first->functions_unchanged == 0);
    CHECK(conn->idle());
    {
        const auto hits = co_await scalar(*conn, "SELECT hit_count()");
        CHECK(hits == 2);
    }
    auto recorded = co_await conn->query(
        "SELECT name, checksum, applied_at IS NOT NULL FROM fulltime_schema_functions "
        "ORDER BY name");
    FT_REQUIRE_OK(recorded);
    REQUIRE(recorded->rows() == 2);
    CHECK(recorded->text(0, 0) == "answer.sql");
    CHECK(recorded->text(1, 0) == "hit_count.sql");
    CHECK(recorded->get<bool>(0, 2).value());
    auto expected = co_await conn->query(
        "SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex')",
        db::params{"CREATE OR REPLACE FUNCTION answer() RETURNS int LANGUAGE sql AS 'SELECT 42'"});
    FT_REQUIRE_OK(expected);
    CHECK(recorded->text(0, 1) == expected->text(0, 0));
    // Function files are not numbered migrations.
    {
        const auto migrations =
            co_await scalar(*conn, "SELECT count(*) FROM fulltime_schema_migrations");
        CHECK(migrations == 2);
    }

    // Unchanged: nothing applied, the recorded time stays.
    auto applied_at = co_await conn->query(
        "SELECT applied_at::text FROM fulltime_schema_functions WHERE name = 'answer.sql'");
    FT_REQUIRE_OK(applied_at);
    auto second = co_await db::migrate(*conn, with_functions());
    FT_REQUIRE_OK(second);
    CHECK(second->applied.empty());
    CHECK(second->already_applied == 2);
    CHECK(second->functions_applied.empty());
    CHECK(second->functions_unchanged == 2);
    auto applied_at_after = co_await conn->query(
        "SELECT applied_at::text FROM fulltime_schema_functions WHERE name = 'answer.sql'");
    FT_REQUIRE_OK(applied_at_after);
    CHECK(applied_at_after->text(0, 0) == applied_at->text(0, 0));

    auto after = co_await db::is_migrated(*conn, with_functions());
    FT_REQUIRE_OK(after);
    CHECK(*after);
}

awaitable<void> changed_function_reapplied(std::string url) {
    auto conn = co_await open_connection(url);
    FT_AWAIT_OK(co_await db::migrate(*conn, with_functions()));

    auto edited = with_functions();
    auto answer = std::find_if(edited.begin(), edited.end(),
                               [](const auto& m) { return m.name == "answer.sql"; });
    answer->sql = "CREATE OR REPLACE FUNCTION answer() RETURNS int LANGUAGE sql AS 'SELECT 43'";
    // A changed file is not applied yet: the schema is not ready for this binary.
    auto stale = co_await db::is_migrated(*conn, edited);
    FT_REQUIRE_OK(stale);
    CHECK_FALSE(*stale);

    auto again = co_await db::migrate(*conn, edited);
    FT_REQUIRE_OK(again);
    CHECK(again->applied.empty());
    CHECK(again->functions_applied == std::vector<std::string>{"answer.sql"});
    CHECK(again->functions_unchanged == 1);
    {
        const auto value = co_await scalar(*conn, "SELECT answer()");
        CHECK(value == 43);
    }
    auto ready = co_await db::is_migrated(*conn, edited);
    FT_REQUIRE_OK(ready);
    CHECK(*ready);
}

awaitable<void> migration_reapplies_functions(std::string url) {
    auto conn = co_await open_connection(url);
    FT_AWAIT_OK(co_await db::migrate(*conn, with_functions()));

    // A signature change: the numbered migration drops the function, the file (unchanged here,
    // the worst case) must still bring it back.
    auto ms = with_functions();
    ms.push_back({"0003_drop_answer.sql", "DROP FUNCTION answer()"});
    auto report = co_await db::migrate(*conn, ms);
    FT_REQUIRE_OK(report);
    CHECK(report->applied == std::vector<std::string>{"0003_drop_answer.sql"});
    CHECK(report->functions_applied == std::vector<std::string>{"answer.sql", "hit_count.sql"});
    CHECK(report->functions_unchanged == 0);
    {
        const auto value = co_await scalar(*conn, "SELECT answer()");
        CHECK(value == 42);
    }
}

awaitable<void> failing_function_file(std::string url) {
    auto conn = co_await open_connection(url);
    auto ms = with_functions();
    ms.push_back({"broken.sql",
                  "CREATE OR REPLACE FUNCTION broken() RETURNS int LANGUAGE sql AS "
                  "'SELECT count(*) FROM no_such_table'",
                  source_kind::function});
    auto failed = co_await db::migrate(*conn, ms);
    FT_CHECK_FAILS_WITH(failed, db::errc::server_error);
    CHECK(failed.error().message.find("broken.sql") != std::string::npos);
    CHECK(conn->idle());
    // The migrations stay applied; no function of the failed phase was created or recorded.
    auto state = co_await conn->query(
        "SELECT (SELECT count(*) FROM fulltime_schema_migrations), "
        "(SELECT count(*) FROM fulltime_schema_functions), "
        "to_regprocedure('answer()') IS NULL");
    FT_REQUIRE_OK(state);
    CHECK(state->get<std::int64_t>(0, 0).value() == 2);
    CHECK(state->get<std::int64_t>(0, 1).value() == 0);
    CHECK(state->get<bool>(0, 2).value());
    auto migrated = co_await db::is_migrated(*conn, ms);
    FT_REQUIRE_OK(migrated);
    CHECK_FALSE(*migrated);
}

awaitable<void> pre_baseline_refused(std::string url) {
    auto conn = co_await open_connection(url);
    // What a database migrated with the migrations the baseline replaced looks like to the
    // runner: the old names recorded, and the tables they created.
    FT_AWAIT_OK(co_await conn->execute_script(
        "CREATE TABLE fulltime_schema_migrations (name text PRIMARY KEY, checksum text NOT NULL, "
        "applied_at timestamptz NOT NULL DEFAULT now());"
        "INSERT INTO fulltime_schema_migrations (name, checksum) VALUES "
        "('0001_schema.sql', 'x'), ('0002_placement.sql', 'y');"
        "CREATE TABLE accounts (account_id bigint PRIMARY KEY)"));
    auto refused = co_await db::migrate(*conn, resources::migrations());
    FT_CHECK_FAILS_WITH(refused, db::errc::bad_result);
    const auto& message = refused.error().message;
    CHECK(message.find("migrated before the baseline of 2026-12-01") != std::string::npos);
    CHECK(message.find("0001_schema.sql") != std::string::npos);
    CHECK(message.find("recreate it") != std::string::npos);
    CHECK(conn->idle());
    {
        const auto recorded =
            co_await scalar(*conn, "SELECT count(*) FROM fulltime_schema_migrations");
        CHECK(recorded == 2);
    }
    auto migrated = co_await db::is_migrated(*conn, resources::migrations());
    FT_REQUIRE_OK(migrated);
    CHECK_FALSE(*migrated);
}

/// Returns the numbered migrations before `first` (by name) and every function file: the schema
/// as an earlier release left it, with today's function files.
std::vector<migration_source> migrations_before(const std::vector<migration_source>& all,
                                                std::string_view first) {
    std::vector<migration_source> before;
    for (const auto& m : all) {
        if (m.kind == source_kind::function || m.name < first) {
            before.push_back(m);
        }
    }
    return before;
}

/// Brings `conn`'s database to the schema the release before `first` left: the numbered
/// migrations before it, with today's function files.
awaitable<void> migrate_before(db::connection& conn, std::string_view first) {
    auto earlier = co_await db::migrate(conn, migrations_before(resources::migrations(), first));
    FT_REQUIRE_OK(earlier);
}

/// Applies the migrations left and checks that the first of them is `first`.
awaitable<void> migrate_from(db::connection& conn, std::string_view first) {
    auto applied = co_await db::migrate(conn, resources::migrations());
    FT_REQUIRE_OK(applied);
    REQUIRE_FALSE(applied->applied.empty());
    CHECK(applied->applied.front() == first);
}

awaitable<void> minor_units_refused(std::string url) {
    auto conn = co_await open_connection(url);
    // The schema as the release before 0007 left it (with today's function files).
    co_await migrate_before(*conn, "0007");
    const auto all = resources::migrations();
    // Accounts whose amounts that release stored as hundredths: 0007 refuses to reinterpret
    // them, and nothing of it is applied.
    FT_AWAIT_OK(co_await conn->execute_script(
        "INSERT INTO accounts (account_id, currency) VALUES (1, 'EUR'), (2, 'KWD'), (3, 'JPY'), "
        "(4, 'JPY')"));
    auto refused = co_await db::migrate(*conn, all);
    REQUIRE_FALSE(refused.has_value());
    const auto message = describe_outcome(refused);
    CAPTURE(message);
    CHECK(message.find("accounts hold JPY, KWD amounts stored as hundredths") != std::string::npos);
    const auto recorded = co_await scalar(
        *conn, "SELECT count(*) FROM fulltime_schema_migrations WHERE name LIKE '0007%'");
    CHECK(recorded == 0);
    // Without them the release applies.
    FT_AWAIT_OK(co_await conn->execute_script("DELETE FROM accounts WHERE currency <> 'EUR'"));
    auto applied = co_await db::migrate(*conn, all);
    FT_REQUIRE_OK(applied);
    REQUIRE_FALSE(applied->applied.empty());
    CHECK(applied->applied.front() == "0007_currency_minor_units.sql");
}

awaitable<void> engine_schema(std::string url) {
    auto conn = co_await open_connection(url);
    const auto sources = resources::migrations();
    std::set<std::string> files;
    std::vector<std::string> numbered;
    for (const auto& m : sources) {
        if (m.kind == source_kind::function) {
            files.insert(std::string{m.name});
        } else {
            numbered.emplace_back(m.name);
        }
    }
    REQUIRE_FALSE(files.empty());
    std::sort(numbered.begin(), numbered.end());
    REQUIRE_FALSE(numbered.empty());
    CHECK(numbered.front() == "0001_baseline.sql");

    // On a fresh database every numbered migration applies, in name order (a migration that
    // drops an old function signature must cope with its absence there).
    auto first = co_await db::migrate(*conn, sources);
    FT_REQUIRE_OK(first);
    CHECK(first->applied == numbered);
    CHECK(std::set<std::string>(first->functions_applied.begin(), first->functions_applied.end()) ==
          files);
    auto second = co_await db::migrate(*conn, sources);
    FT_REQUIRE_OK(second);
    CHECK(second->applied.empty());
    CHECK(second->functions_applied.empty());
    CHECK(second->functions_unchanged == files.size());
    auto ready = co_await db::is_migrated(*conn, sources);
    FT_REQUIRE_OK(ready);
    CHECK(*ready);

    // Each file is named after the one function it defines, and every function of the schema
    // has its file.
    auto functions = co_await conn->query(
        "SELECT p.proname || '.sql', count(*) FROM pg_proc p "
        "WHERE p.pronamespace = 'public'::regnamespace GROUP BY p.proname ORDER BY 1");
    FT_REQUIRE_OK(functions);
    std::set<std::string> defined;
    for (int i = 0; i < functions->rows(); ++i) {
        const std::string file{functions->text(i, 0)};
        CAPTURE(file);
        CHECK(functions->get<std::int64_t>(i, 1).value() == 1);
        defined.insert(file);
    }
    CHECK(defined == files);
}

awaitable<std::string> text(db::connection& conn, std::string sql) {
    auto r = co_await conn.query(sql);
    FT_REQUIRE_OK(r);
    REQUIRE(r->rows() == 1);
    co_return r->get<std::string>(0, 0).value();
}

awaitable<void> read_model_split(std::string url) {
    auto conn = co_await open_connection(url);
    // The schema as the release before 0009 left it (with today's function files, which only
    // need the new tables when they run).
    co_await migrate_before(*conn, "0009");
    // bet_views as that release's projector left it: a bet never changed, a settled one, one a
    // reversal opened again, one settled again after a correction.
    FT_AWAIT_OK(co_await conn->execute_script(
        "INSERT INTO bet_views (account_id, bet_id, market_id, selection_id, currency, stake, "
        "odds, placed_at, version, outcome, payout, applied_version, applied_reversal) VALUES "
        "(1, 10, 1, 11, 'EUR', 100, 20000, '2026-12-01 10:00:00.000001+00', NULL, NULL, NULL, "
        "0, false), "
        "(1, 11, 1, 11, 'EUR', 100, 20000, '2026-12-01 10:00:01+00', 1, 'won', 200, 1, false), "
        "(2, 12, 1, 12, 'EUR', 50, 20000, '2026-12-01 10:00:02+00', NULL, NULL, NULL, 1, true), "
        "(2, 13, 2, 21, 'EUR', 70, 15000, '2026-12-01 10:00:03+00', 2, 'void', 70, 2, false)"));
    const std::string rows_sql =
        "SELECT string_agg(v::text, ';' ORDER BY v.account_id, v.bet_id) FROM bet_views v";
    const auto old_rows = co_await text(*conn, rows_sql);

    co_await migrate_from(*conn, "0009_read_model_split.sql");
    // The view shows every row as the table held it, and only the open bets are marked open.
    const auto new_rows = co_await text(*conn, rows_sql);
    CHECK(new_rows == old_rows);
    const auto open = co_await text(
        *conn, "SELECT string_agg(bet_id::text, ',' ORDER BY bet_id) FROM bet_view_open");
    CHECK(open == "10,12");
    const auto results = co_await text(
        *conn, "SELECT string_agg(bet_id::text, ',' ORDER BY bet_id) FROM bet_view_results");
    CHECK(results == "11,12,13");
    const auto markets = co_await scalar(*conn, "SELECT count(*) FROM market_views_expected");
    CHECK(markets == 2);
}

awaitable<void> settlement_batch_arrays(std::string url) {
    auto conn = co_await open_connection(url);
    co_await migrate_before(*conn, "0010");
    // Outbox rows as the release before 0010 wrote them: a batch with a settle, a reversal that
    // left its bet open and a cancel; one of the topic's first release, with no event id; an
    // empty list; and rows of other topics, which stay as they are.
    FT_AWAIT_OK(co_await conn->execute_script(
        "INSERT INTO outbox (topic, account_id, payload) VALUES "
        "('settlement_batch', NULL, '{\"result_event_id\": 4, \"settlements\": ["
        "{\"account_id\": 7, \"bet_id\": 100, \"version\": 1, \"kind\": \"settle\", "
        "\"outcome\": \"won\", \"payout\": 25000}, "
        "{\"account_id\": 8, \"bet_id\": 101, \"version\": 2, \"kind\": \"reverse\", "
        "\"outcome\": null, \"payout\": null}, "
        "{\"account_id\": 7, \"bet_id\": 102, \"version\": 1, \"kind\": \"cancel\", "
        "\"outcome\": \"void\", \"payout\": 1000}]}'), "
        "('settlement_batch', NULL, '{\"settlements\": [{\"account_id\": 9, \"bet_id\": 5, "
        "\"version\": 1, \"kind\": \"settle\", \"outcome\": \"lost\", "
        "\"payout\": 0}]}'), "
        "('settlement_batch', NULL, '{\"result_event_id\": 5, \"settlements\": []}'), "
        "('bet_placed', 7, '{\"bet_id\": 100, \"settlements\": [1]}'), "
        "('bet_settled', 9, '{\"bet_id\": 6, \"version\": 1, \"kind\": \"settle\", "
        "\"outcome\": \"won\", \"payout\": 3}')"));
    const std::string rows_sql =
        "SELECT string_agg(outbox_id || ' ' || xact_id || ' ' || created_at, ';' ORDER BY "
        "outbox_id) FROM outbox";
    const auto keys_before = co_await text(*conn, rows_sql);

    co_await migrate_from(*conn, "0010_settlement_batch_arrays.sql");
    // Every row keeps its place in the cursors' order.
    CHECK(co_await text(*conn, rows_sql) == keys_before);
    const auto payloads = co_await text(
        *conn, "SELECT string_agg(payload::text, ' | ' ORDER BY outbox_id) FROM outbox");
    CHECK(payloads ==
          "{\"kind\": [\"settle\", \"reverse\", \"cancel\"], \"bet_id\": [100, 101, 102], "
          "\"payout\": [25000, null, 1000], \"outcome\": [\"won\", null, \"void\"], "
          "\"version\": [1, 2, 1], \"account_id\": [7, 8, 7], \"result_event_id\": 4} | "
          "{\"kind\": [\"settle\"], \"bet_id\": [5], \"payout\": [0], "
          "\"outcome\": [\"lost\"], \"version\": [1], \"account_id\": [9]} | "
          "{\"kind\": [], \"bet_id\": [], \"payout\": [], \"outcome\": [], "
          "\"version\": [], \"account_id\": [], \"result_event_id\": 5} | "
          "{\"bet_id\": 100, \"settlements\": [1]} | "
          "{\"kind\": \"settle\", \"bet_id\": 6, \"payout\": 3, \"outcome\": \"won\", "
          "\"version\": 1}");
}

}  // namespace

TEST_CASE("migrations: 0007 refuses accounts whose currency has no two decimals") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, minor_units_refused(db.url()));
}

TEST_CASE("migrations: 0009 moves the read model's bets into three tables, shown as before") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, read_model_split(db.url()));
}

TEST_CASE("migrations: 0010 rewrites settlement batches as parallel arrays, each entry in place") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, settlement_batch_arrays(db.url()));
}

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

TEST_CASE(
    "migrations: function files are applied after the migrations, recorded, and skipped "
    "when unchanged") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, functions_applied_and_skipped(db.url()));
}

TEST_CASE("migrations: a changed function file is applied again and the others are skipped") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, changed_function_reapplied(db.url()));
}

TEST_CASE("migrations: applying a numbered migration applies every function file again") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, migration_reapplies_functions(db.url()));
}

TEST_CASE("migrations: a failing function file rolls back the whole function phase") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, failing_function_file(db.url()));
}

TEST_CASE("migrations: a database migrated before the baseline is refused with a clear error") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, pre_baseline_refused(db.url()));
}

TEST_CASE("migrations: the engine's schema applies, then is up to date, one file per function") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, engine_schema(db.url()));
}
