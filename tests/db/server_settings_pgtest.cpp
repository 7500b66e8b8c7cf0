// The engine's session guard rails against a real PostgreSQL: every pool session names its pool
// and carries the engine's statement and idle-in-transaction timeouts; a session left idle in a
// transaction is ended by the server; and the start-up check reads what a plain session gets
// and warns about exactly the risky settings.

#include "db/db_support.hpp"

#include "fulltime/core/resources.hpp"
#include "fulltime/db/migrations.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/server_settings.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;

namespace {

std::unique_ptr<db::pool> make_pool(asio::any_io_executor executor, const std::string& url,
                                    db::session_options session) {
    return std::make_unique<db::pool>(std::move(executor), "test", url, pool_settings{2, 8, 2000},
                                      5s, 10s, true, std::move(session));
}

awaitable<void> sessions_carry_the_bounds(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, {"fulltime-placement", 4321, 1234, false, {}});
    auto c = co_await p->acquire();
    FT_REQUIRE_OK(c);
    auto r = co_await (*c)->query(
        "SELECT current_setting('application_name'), "
        "       (SELECT setting FROM pg_settings WHERE name = 'statement_timeout'), "
        "       (SELECT setting FROM pg_settings WHERE name = "
        "        'idle_in_transaction_session_timeout'), "
        "       current_setting('jit')");
    FT_REQUIRE_OK(r);
    CHECK(r->text(0, 0) == "fulltime-placement");
    CHECK(r->text(0, 1) == "4321");
    CHECK(r->text(0, 2) == "1234");
    // No JIT compilation (the engine's pools ask for it: session_options::jit says why).
    CHECK(r->text(0, 3) == "off");
    // A transaction may still ask for a longer bound of its own.
    auto longer = co_await (*c)->execute_script(
        "BEGIN; SET LOCAL statement_timeout = 60000; SELECT pg_sleep(0.01); COMMIT");
    CHECK(longer.has_value());

    // Without timeouts, the session keeps the server's (0 on the test server).
    auto plain = make_pool(executor, url, {"fulltime-read", 0, 0, {}, {}});
    auto d = co_await plain->acquire();
    FT_REQUIRE_OK(d);
    auto q = co_await (*d)->query(
        "SELECT current_setting('application_name'), "
        "current_setting('statement_timeout')");
    FT_REQUIRE_OK(q);
    CHECK(q->text(0, 0) == "fulltime-read");
    CHECK(q->text(0, 1) == "0");
}

awaitable<void> idle_in_transaction_is_ended(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, {"fulltime-background", 0, 200, {}, {}});
    auto admin = co_await open_connection(url);
    auto c = co_await p->acquire();
    FT_REQUIRE_OK(c);
    const std::int64_t pid = (*c)->backend_pid();
    FT_AWAIT_OK(co_await (*c)->execute_script("BEGIN; SELECT 1"));
    // The server ends the session once it has been idle in its transaction for 200 ms.
    const bool gone = co_await backend_gone(*admin, pid, 30s);
    REQUIRE(gone);
    auto after = co_await (*c)->query("SELECT 1");
    CHECK(!after);
}

awaitable<void> check_reads_and_warns(std::string url, std::string dbname) {
    {
        auto engine_role = co_await open_connection(url);
        FT_AWAIT_OK(co_await db::migrate(*engine_role, resources::migrations()));
    }
    // log_lock_waits may be set only by a superuser, which the engine's role is not.
    auto admin = co_await open_connection(with_dbname(admin_url(), dbname));
    const db::engine_sessions engine{true, 30000, 5000, 18};
    // The guard rails the private cluster (and the test server, scripts/lib.sh) starts with,
    // here set on the database so that the test holds on any server.
    FT_AWAIT_OK(co_await admin->execute_script("ALTER DATABASE " + dbname +
                                               " SET idle_in_transaction_session_timeout = '60s'; "
                                               "ALTER DATABASE " +
                                               dbname + " SET log_lock_waits = on"));
    {
        auto conn = co_await open_connection(url);
        auto s = co_await db::read_server_settings(*conn);
        FT_REQUIRE_OK(s);
        CHECK(s->idle_in_transaction_timeout_ms == 60000);
        CHECK(s->log_lock_waits);
        CHECK(s->max_connections >= 40);
        CHECK(s->hot_tables_on_defaults.empty());
        // scripts/test runs the tests as the role docs/operations.md asks for.
        CHECK(s->role == user_of(url));
        CHECK(!s->role_is_superuser);
        CHECK(s->role_monitors);
        CHECK(db::judge_server_settings(*s, engine).empty());
    }
    // A database whose sessions get neither, and a hot table that lost its thresholds (the
    // outbox is partitioned: its thresholds are its partitions', and one partition lost them).
    FT_AWAIT_OK(co_await admin->execute_script(
        "ALTER DATABASE " + dbname +
        " SET idle_in_transaction_session_timeout = 0; "
        "ALTER DATABASE " +
        dbname +
        " SET log_lock_waits = off; "
        "ALTER TABLE outbox_history RESET (autovacuum_vacuum_threshold, "
        "autovacuum_vacuum_scale_factor, "
        "autovacuum_vacuum_insert_scale_factor, autovacuum_analyze_scale_factor, "
        "autovacuum_vacuum_cost_limit)"));
    auto conn = co_await open_connection(url);
    auto s = co_await db::read_server_settings(*conn);
    FT_REQUIRE_OK(s);
    CHECK(s->idle_in_transaction_timeout_ms == 0);
    CHECK(!s->log_lock_waits);
    CHECK(s->hot_tables_on_defaults == std::vector<std::string>{"outbox"});
    const auto warnings = db::judge_server_settings(*s, engine);
    CHECK(warnings.size() == 3);
    const auto json = db::server_settings_json(*s, warnings);
    CHECK(json.find("\"hot_tables_on_default_autovacuum\":[\"outbox\"]") != json.npos);
}

}  // namespace

TEST_CASE("server settings: pool sessions name their pool and carry the engine's timeouts") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, sessions_carry_the_bounds(db.url()));
}

TEST_CASE("server settings: an engine session left idle in a transaction is ended") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, idle_in_transaction_is_ended(db.url()));
}

TEST_CASE("server settings: the start-up check reads a plain session's settings and warns") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, check_reads_and_warns(db.url(), db.name()));
}
