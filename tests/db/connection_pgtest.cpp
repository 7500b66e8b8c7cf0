// Tests of db::connection, db::params and db::result against a real PostgreSQL.

#include "db/db_support.hpp"

#include "fulltime/db/connection.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <limits>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;
using asio::experimental::awaitable_operators::operator&&;

namespace {

// The values typed_round_trip sent, as each type reads them.
void check_typed_values(const db::result& r, std::int64_t big, std::int32_t small,
                        const std::string& text) {
    auto v0 = r.get<std::int64_t>(0, 0);
    FT_REQUIRE_OK(v0);
    CHECK(*v0 == big);
    auto v1 = r.get<std::int32_t>(0, 1);
    FT_REQUIRE_OK(v1);
    CHECK(*v1 == small);
    auto v2 = r.get<bool>(0, 2);
    FT_REQUIRE_OK(v2);
    CHECK(*v2 == true);
    auto v3 = r.get<std::string>(0, 3);
    FT_REQUIRE_OK(v3);
    CHECK(*v3 == text);
    auto v3_view = r.get<std::string_view>(0, 3);
    FT_REQUIRE_OK(v3_view);
    CHECK(*v3_view == text);
}

// NULL: nullopt when read as optional, bad_result otherwise.
void check_nulls(const db::result& r) {
    CHECK(r.is_null(0, 4));
    CHECK(r.text(0, 4).empty());
    auto null_text = r.get<std::optional<std::string>>(0, 4);
    FT_REQUIRE_OK(null_text);
    CHECK_FALSE(null_text->has_value());
    auto null_view = r.get<std::optional<std::string_view>>(0, 4);
    FT_REQUIRE_OK(null_view);
    CHECK_FALSE(null_view->has_value());
    auto null_int = r.get<std::optional<std::int64_t>>(0, 5);
    FT_REQUIRE_OK(null_int);
    CHECK_FALSE(null_int->has_value());
    auto null_as_int = r.get<std::int64_t>(0, 5);
    FT_CHECK_FAILS_WITH(null_as_int, db::errc::bad_result);
    auto null_as_string = r.get<std::string>(0, 4);
    FT_CHECK_FAILS_WITH(null_as_string, db::errc::bad_result);
}

// Optional values that are there, a numeric past int64 as text, an empty string.
void check_present_values(const db::result& r) {
    auto opt_false = r.get<std::optional<bool>>(0, 6);
    FT_REQUIRE_OK(opt_false);
    REQUIRE(opt_false->has_value());
    CHECK(**opt_false == false);
    CHECK(r.text(0, 7) == "18446744073709551615");
    auto opt_int = r.get<std::optional<std::int64_t>>(0, 8);
    FT_REQUIRE_OK(opt_int);
    CHECK(*opt_int == std::optional<std::int64_t>{42});
    auto opt_int32 = r.get<std::optional<std::int32_t>>(0, 8);
    FT_REQUIRE_OK(opt_int32);
    CHECK(*opt_int32 == std::optional<std::int32_t>{42});
    auto empty = r.get<std::string>(0, 9);
    FT_REQUIRE_OK(empty);
    CHECK(empty->empty());
    CHECK_FALSE(r.is_null(0, 9));
}

// Values that do not fit the requested type, and positions outside the result.
void check_misfits(const db::result& r) {
    auto too_big = r.get<std::int32_t>(0, 0);
    FT_CHECK_FAILS_WITH(too_big, db::errc::bad_result);
    auto text_as_int = r.get<std::int64_t>(0, 3);
    FT_CHECK_FAILS_WITH(text_as_int, db::errc::bad_result);
    auto text_as_bool = r.get<bool>(0, 3);
    FT_CHECK_FAILS_WITH(text_as_bool, db::errc::bad_result);
    auto no_column = r.get<std::int64_t>(0, 10);
    FT_CHECK_FAILS_WITH(no_column, db::errc::bad_result);
    auto no_row = r.get<std::optional<std::int64_t>>(1, 0);
    FT_CHECK_FAILS_WITH(no_row, db::errc::bad_result);
}

awaitable<void> typed_round_trip(std::string url) {
    auto conn = co_await open_connection(url);
    const std::int64_t big = std::numeric_limits<std::int64_t>::min();
    const std::int32_t small = std::numeric_limits<std::int32_t>::max();
    const std::string text = "it's \"quoted\", ünïcode; $1 -- not a comment";
    auto r = co_await conn->query(
        "SELECT $1::bigint, $2::int, $3::bool, $4::text, $5::text, $6::bigint, $7::bool, "
        "$8::numeric, $9::bigint, $10::text",
        db::params{big, small, true, text, std::nullopt, std::optional<std::int64_t>{},
                   std::optional<bool>{false}, std::numeric_limits<std::uint64_t>::max(),
                   std::optional<std::int64_t>{42}, ""});
    FT_REQUIRE_OK(r);
    CHECK(r->rows() == 1);
    CHECK(r->columns() == 10);

    check_typed_values(*r, big, small, text);
    check_nulls(*r);
    check_present_values(*r);
    check_misfits(*r);

    // Affected rows and an empty result.
    FT_AWAIT_OK(co_await conn->query("CREATE TABLE t (id bigint PRIMARY KEY, note text)"));
    auto inserted = co_await conn->query(
        "INSERT INTO t VALUES ($1, $2), ($3, NULL), ($4, $5)",
        db::params{1, "one", std::int64_t{2}, std::uint32_t{3}, std::string{"three"}});
    FT_REQUIRE_OK(inserted);
    CHECK(inserted->affected_rows() == 3);
    CHECK(inserted->rows() == 0);
    auto none = co_await conn->query("SELECT id FROM t WHERE id > $1", db::params{100});
    FT_REQUIRE_OK(none);
    CHECK(none->rows() == 0);
    CHECK(none->affected_rows() == 0);
    auto rows = co_await conn->query("SELECT id, note FROM t ORDER BY id");
    FT_REQUIRE_OK(rows);
    REQUIRE(rows->rows() == 3);
    auto third = rows->get<std::int64_t>(2, 0);
    FT_REQUIRE_OK(third);
    CHECK(*third == 3);
    auto second_note = rows->get<std::optional<std::string>>(1, 1);
    FT_REQUIRE_OK(second_note);
    CHECK_FALSE(second_note->has_value());

    // A NUL byte cannot travel in text format: refused, and the connection stays usable.
    auto nul = co_await conn->query("SELECT $1::text", db::params{std::string_view{"a\0b", 3}});
    FT_CHECK_FAILS_WITH(nul, db::errc::bad_result);
    CHECK_FALSE(conn->broken());
    auto after = co_await conn->query("SELECT 1");
    FT_REQUIRE_OK(after);
    CHECK(conn->idle());
}

awaitable<void> server_errors(std::string url) {
    auto conn = co_await open_connection(url);
    FT_AWAIT_OK(co_await conn->execute_script(
        "CREATE TABLE parent (id int PRIMARY KEY);"
        "CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent(id),"
        "  amount bigint CHECK (amount >= 0));"
        "INSERT INTO parent VALUES (1)"));

    auto dup = co_await conn->query("INSERT INTO parent VALUES ($1)", db::params{1});
    FT_CHECK_FAILS_WITH(dup, db::errc::unique_violation);
    CHECK(dup.error().sqlstate == "23505");
    CHECK_FALSE(dup.error().retryable());
    CHECK_FALSE(conn->broken());
    CHECK(conn->idle());

    auto negative = co_await conn->query("INSERT INTO child VALUES (1, 1, $1)", db::params{-5});
    FT_CHECK_FAILS_WITH(negative, db::errc::check_violation);
    CHECK(negative.error().sqlstate == "23514");

    auto orphan = co_await conn->query("INSERT INTO child VALUES (2, 99, 1)");
    FT_CHECK_FAILS_WITH(orphan, db::errc::foreign_key_violation);
    CHECK(orphan.error().sqlstate == "23503");

    auto syntax = co_await conn->query("SELEC 1");
    FT_CHECK_FAILS_WITH(syntax, db::errc::server_error);
    CHECK(syntax.error().sqlstate == "42601");

    auto serial = co_await conn->query(
        "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'serialization_failure'; END $$");
    FT_CHECK_FAILS_WITH(serial, db::errc::serialization_failure);
    CHECK(serial.error().retryable());
    auto deadlock = co_await conn->query(
        "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'deadlock_detected'; END $$");
    FT_CHECK_FAILS_WITH(deadlock, db::errc::deadlock);

    // None of these broke the connection.
    auto ok = co_await conn->query("SELECT count(*) FROM child");
    FT_REQUIRE_OK(ok);
    CHECK(ok->get<std::int64_t>(0, 0).value() == 0);
}

awaitable<void> lock_timeout_maps(std::string url) {
    auto waiter = co_await open_connection(url);
    auto holder = co_await open_connection(url);
    FT_AWAIT_OK(co_await waiter->execute_script(
        "CREATE TABLE accounts (id int PRIMARY KEY, available bigint);"
        "INSERT INTO accounts VALUES (1, 100)"));

    FT_AWAIT_OK(co_await holder->execute_script(
        "BEGIN; UPDATE accounts SET available = available - 1 WHERE id = 1"));
    CHECK(holder->in_transaction());

    FT_AWAIT_OK(co_await waiter->execute_script("BEGIN; SET LOCAL lock_timeout = '50ms'"));
    const auto start = steady::now();
    auto blocked = co_await waiter->query(
        "UPDATE accounts SET available = available + 1 WHERE id = $1", db::params{1});
    const auto waited_ms = elapsed_ms(start);
    FT_CHECK_FAILS_WITH(blocked, db::errc::lock_timeout);
    CHECK(blocked.error().sqlstate == "55P03");
    CHECK(blocked.error().retryable());
    CHECK(waited_ms >= 40);
    CHECK(waited_ms < 2000);
    // Left inside a failed transaction: broken() until rolled back, then usable again.
    CHECK(waiter->in_failed_transaction());
    CHECK(waiter->broken());
    FT_AWAIT_OK(co_await waiter->query("ROLLBACK"));
    CHECK(waiter->idle());
    CHECK_FALSE(waiter->broken());

    FT_AWAIT_OK(co_await holder->query("ROLLBACK"));
    auto balance = co_await waiter->query("SELECT available FROM accounts WHERE id = 1");
    FT_REQUIRE_OK(balance);
    CHECK(balance->get<std::int64_t>(0, 0).value() == 100);
}

awaitable<void> statement_timeout_maps(std::string url) {
    auto conn = co_await open_connection(url);
    FT_AWAIT_OK(co_await conn->execute_script("BEGIN; SET LOCAL statement_timeout = '50ms'"));
    const auto start = steady::now();
    auto slow = co_await conn->query("SELECT pg_sleep(3)");
    CHECK(elapsed_ms(start) < 1500);
    FT_CHECK_FAILS_WITH(slow, db::errc::statement_timeout);
    CHECK(slow.error().sqlstate == "57014");
    CHECK_FALSE(slow.error().retryable());
    FT_AWAIT_OK(co_await conn->query("ROLLBACK"));
    CHECK(conn->idle());
    // The setting was local to the transaction.
    auto setting = co_await conn->query("SHOW statement_timeout");
    FT_REQUIRE_OK(setting);
    CHECK(setting->text(0, 0) == "0");
}

awaitable<void> client_deadline(std::string url) {
    auto conn = co_await open_connection(url, 200ms);
    const auto start = steady::now();
    auto slow = co_await conn->query("SELECT pg_sleep(5)");
    const auto took_ms = elapsed_ms(start);
    FT_CHECK_FAILS_WITH(slow, db::errc::deadline_exceeded);
    CHECK(took_ms >= 190);
    CHECK(took_ms < 1000);
    CHECK(conn->broken());
    CHECK_FALSE(conn->idle());
    // Never reused half-read: every later call fails at once.
    auto after = co_await conn->query("SELECT 1");
    FT_CHECK_FAILS_WITH(after, db::errc::connection_lost);

    // The per-call deadline overrides the connection's.
    auto patient = co_await open_connection(url, 10s);
    const auto start2 = steady::now();
    auto slow2 = co_await patient->query("SELECT pg_sleep(5)", {}, 100ms);
    FT_CHECK_FAILS_WITH(slow2, db::errc::deadline_exceeded);
    CHECK(elapsed_ms(start2) < 1000);
    CHECK(patient->broken());
}

awaitable<void> deadline_cancels_on_server(std::string url) {
    auto admin = co_await open_connection(url);
    auto conn = co_await open_connection(url, 200ms);
    const std::int64_t pid = conn->backend_pid();
    auto slow = co_await conn->query("SELECT pg_sleep(60)");
    FT_CHECK_FAILS_WITH(slow, db::errc::deadline_exceeded);
    // The server cancels the statement and, its client gone, ends the session (without the
    // cancel the backend would sleep for a minute).
    CHECK(co_await backend_gone(*admin, pid, 20s));
}

awaitable<db::outcome<db::result>> sleep_query(db::connection& conn) {
    co_return co_await conn.query("SELECT pg_sleep(10)");
}

awaitable<bool> terminate_after(db::connection& admin, int pid, std::chrono::milliseconds delay) {
    co_await sleep_for(delay);
    auto killed = co_await admin.query("SELECT pg_terminate_backend($1)", db::params{pid});
    FT_REQUIRE_OK(killed);
    co_return killed->get<bool>(0, 0).value();
}

awaitable<void> terminated_in_flight(std::string url) {
    auto victim = co_await open_connection(url);
    auto admin = co_await open_connection(url);
    const int pid = victim->backend_pid();
    REQUIRE(pid > 0);
    const auto start = steady::now();
    auto [slept, killed] = co_await (sleep_query(*victim) && terminate_after(*admin, pid, 200ms));
    const auto took_ms = elapsed_ms(start);
    CHECK(killed);
    FT_CHECK_FAILS_WITH(slept, db::errc::connection_lost);
    CHECK(took_ms < 1000);
    CHECK(victim->broken());
    auto again = co_await victim->query("SELECT 1");
    FT_CHECK_FAILS_WITH(again, db::errc::connection_lost);
}

// libpq closes its socket by itself when the server ends the session. The descriptor number
// is then free, and the next socket the process opens takes it: here a pipe, in the engine a
// bettor's WebSocket. Letting go of the broken connection afterwards must leave that new
// descriptor watched by its reactor. (Before the reactor was given its own duplicate, the
// connection deregistered the number it had watched, and the engine never read that bettor
// again: a rehearsal through PgBouncer found it.)
awaitable<void> reused_descriptor_stays_watched(std::string url) {
    auto victim = co_await open_connection(url);
    auto admin = co_await open_connection(url);
    const int pid = victim->backend_pid();
    REQUIRE(pid > 0);
    FT_AWAIT_OK(co_await admin->query("SELECT pg_terminate_backend($1)", db::params(pid)));
    // The next round trip meets the terminated session: libpq closes its socket.
    for (int i = 0; i < 50 && !victim->broken(); ++i) {
        auto r = co_await victim->query("SELECT 1");
        if (!r) {
            break;
        }
    }
    CHECK(victim->broken());
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    auto ex = co_await asio::this_coro::executor;
    asio::posix::stream_descriptor reader(ex, fds[0]);
    char byte = 0;
    bool read_done = false;
    reader.async_read_some(asio::buffer(&byte, 1), [&read_done](boost::system::error_code ec,
                                                                std::size_t) { read_done = !ec; });
    // Let go of the broken connection while the pipe's read waits for readiness.
    victim.reset();
    REQUIRE(::write(fds[1], "x", 1) == 1);
    asio::steady_timer wait(ex);
    for (int i = 0; i < 200 && !read_done; ++i) {
        wait.expires_after(10ms);
        co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    CHECK(read_done);
    CHECK(byte == 'x');
    reader.close();
    ::close(fds[1]);
}

awaitable<void> application_name(std::string url) {
    auto conn = co_await open_connection(url);
    auto name = co_await conn->query("SELECT current_setting('application_name')");
    FT_REQUIRE_OK(name);
    CHECK(name->text(0, 0) == "fulltime");
    auto custom = co_await open_connection(url + " application_name=settler");
    auto custom_name = co_await custom->query("SHOW application_name");
    FT_REQUIRE_OK(custom_name);
    CHECK(custom_name->text(0, 0) == "settler");
}

awaitable<void> scripts_and_close(std::string url) {
    auto conn = co_await open_connection(url);
    auto last = co_await conn->execute_script(
        "CREATE TABLE s (n int); INSERT INTO s VALUES (1), (2); SELECT sum(n) FROM s");
    FT_REQUIRE_OK(last);
    CHECK(last->get<std::int64_t>(0, 0).value() == 3);
    // A script is one implicit transaction: an error undoes the statements before it.
    auto failed = co_await conn->execute_script(
        "INSERT INTO s VALUES (10); SELECT 1/0; INSERT INTO s VALUES (20)");
    FT_CHECK_FAILS_WITH(failed, db::errc::server_error);
    CHECK(failed.error().sqlstate == "22012");
    CHECK(conn->idle());
    auto sum = co_await conn->query("SELECT sum(n) FROM s");
    FT_REQUIRE_OK(sum);
    CHECK(sum->get<std::int64_t>(0, 0).value() == 3);
    auto empty = co_await conn->execute_script("");
    FT_REQUIRE_OK(empty);

    conn->close();
    CHECK(conn->broken());
    auto closed = co_await conn->query("SELECT 1");
    FT_CHECK_FAILS_WITH(closed, db::errc::connection_lost);
}

awaitable<void> connect_failures(std::string silent_server) {
    auto executor = co_await asio::this_coro::executor;
    auto start = steady::now();
    auto nowhere = co_await db::connection::open(
        executor, "host=/nonexistent-fulltime-dir port=5432 user=x dbname=y", 2s, 2s);
    FT_CHECK_FAILS_WITH(nowhere, db::errc::connect_failed);
    CHECK(elapsed_ms(start) < 1000);

    // A server that accepts TCP connections but never answers: only our deadline ends it.
    start = steady::now();
    auto silent = co_await db::connection::open(executor, silent_server, 200ms, 2s);
    const auto took_ms = elapsed_ms(start);
    FT_CHECK_FAILS_WITH(silent, db::errc::connect_failed);
    CHECK(took_ms >= 190);
    CHECK(took_ms < 1500);

    auto garbage = co_await db::connection::open(executor, "host='unterminated", 1s, 1s);
    FT_CHECK_FAILS_WITH(garbage, db::errc::connect_failed);
}

/// Listens on a loopback TCP port and never accepts or answers.
constexpr db::statement add_statement{"ft_test_add", "SELECT $1::bigint + $2::bigint"};

/// Returns how many statements this session has prepared under `name`.
awaitable<std::int64_t> prepared_count(db::connection& conn, std::string name) {
    auto r = co_await conn.query("SELECT count(*) FROM pg_prepared_statements WHERE name = $1",
                                 db::params{name});
    FT_REQUIRE_OK(r);
    auto n = r->get<std::int64_t>(0, 0);
    FT_REQUIRE_OK(n);
    co_return *n;
}

awaitable<void> prepared_statements(std::string url) {
    auto conn = co_await open_connection(url);
    CHECK(co_await prepared_count(*conn, "ft_test_add") == 0);
    for (std::int64_t i = 0; i < 3; ++i) {
        auto r = co_await conn->query_prepared(add_statement, db::params{i, std::int64_t{40}}, 5s);
        FT_REQUIRE_OK(r);
        CHECK(r->get<std::int64_t>(0, 0).value() == i + 40);
    }
    // Prepared once, on first use, then run by name.
    CHECK(co_await prepared_count(*conn, "ft_test_add") == 1);
    auto generic =
        co_await conn->query("SELECT count(*) FROM pg_prepared_statements WHERE from_sql IS FALSE");
    FT_REQUIRE_OK(generic);
    CHECK(generic->get<std::int64_t>(0, 0).value() == 1);

    // The server forgot it (a bouncer's DISCARD ALL would do the same): prepared again, once.
    FT_AWAIT_OK(co_await conn->query("DEALLOCATE ALL"));
    CHECK(co_await prepared_count(*conn, "ft_test_add") == 0);
    auto again = co_await conn->query_prepared(add_statement, db::params{1, 1}, 5s);
    FT_REQUIRE_OK(again);
    CHECK(again->get<std::int64_t>(0, 0).value() == 2);
    CHECK(co_await prepared_count(*conn, "ft_test_add") == 1);
    CHECK_FALSE(conn->broken());

    // Inside a transaction the missing statement's error has aborted it: no silent retry.
    FT_AWAIT_OK(co_await conn->query("DEALLOCATE ALL"));
    FT_AWAIT_OK(co_await conn->query("BEGIN"));
    auto in_tx = co_await conn->query_prepared(add_statement, db::params{1, 1}, 5s);
    REQUIRE_FALSE(in_tx.has_value());
    CHECK(in_tx.error().sqlstate == "26000");
    FT_AWAIT_OK(co_await conn->query("ROLLBACK"));
    auto after = co_await conn->query_prepared(add_statement, db::params{2, 2}, 5s);
    FT_REQUIRE_OK(after);
    CHECK(after->get<std::int64_t>(0, 0).value() == 4);

    // A statement that does not prepare fails like a query, and is not remembered.
    constexpr db::statement bad{"ft_test_bad", "SELECT * FROM no_such_table"};
    for (int i = 0; i < 2; ++i) {
        auto failed = co_await conn->query_prepared(bad, {}, 5s);
        REQUIRE_FALSE(failed.has_value());
        CHECK(failed.error().sqlstate == "42P01");
    }
    CHECK(co_await prepared_count(*conn, "ft_test_bad") == 0);
    CHECK_FALSE(conn->broken());
}

awaitable<void> unprepared_statements(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto opened = co_await db::connection::open(executor, url, 5s, 5s, false);
    FT_REQUIRE_OK(opened);
    auto& conn = **opened;
    auto r = co_await conn.query_prepared(add_statement, db::params{20, 22}, 5s);
    FT_REQUIRE_OK(r);
    CHECK(r->get<std::int64_t>(0, 0).value() == 42);
    // Nothing lives in the session: fine behind a bouncer in transaction mode.
    auto any = co_await conn.query("SELECT count(*) FROM pg_prepared_statements");
    FT_REQUIRE_OK(any);
    CHECK(any->get<std::int64_t>(0, 0).value() == 0);
}

struct silent_listener {
    silent_listener() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd_, 8) == 0);
        socklen_t len = sizeof addr;
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        port_ = ntohs(addr.sin_port);
    }
    ~silent_listener() { ::close(fd_); }
    silent_listener(const silent_listener&) = delete;
    silent_listener& operator=(const silent_listener&) = delete;

    std::string conninfo() const {
        return "host=127.0.0.1 port=" + std::to_string(port_) + " user=x dbname=y sslmode=disable";
    }

    int fd_ = -1;
    int port_ = 0;
};

}  // namespace

TEST_CASE("connection: typed parameters and results round trip with NULL and optional") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, typed_round_trip(db.url()));
}

TEST_CASE("connection: server errors map to SQLSTATE codes and keep the connection") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, server_errors(db.url()));
}

TEST_CASE("connection: a held row lock with SET LOCAL lock_timeout gives errc::lock_timeout") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, lock_timeout_maps(db.url()));
}

TEST_CASE("connection: statement_timeout gives errc::statement_timeout") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, statement_timeout_maps(db.url()));
}

TEST_CASE("connection: the client-side deadline breaks the connection") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, client_deadline(db.url()));
}

TEST_CASE("connection: a client-side deadline cancels the statement on the server") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, deadline_cancels_on_server(db.url()));
}

TEST_CASE("connection: a query in flight fails promptly when its backend is terminated") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, terminated_in_flight(db.url()));
}

TEST_CASE("connection: a descriptor reused after libpq dropped its socket stays watched") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, reused_descriptor_stays_watched(db.url()));
}

TEST_CASE("connection: application_name defaults to fulltime and can be overridden") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, application_name(db.url()));
}

TEST_CASE("connection: scripts return their last result and close() fails later calls") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, scripts_and_close(db.url()));
}

TEST_CASE("connection: query_prepared prepares once per session and again when it was lost") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, prepared_statements(db.url()));
}

TEST_CASE("connection: without prepared statements query_prepared is an unnamed query") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, unprepared_statements(db.url()));
}

TEST_CASE("connection: connect failures and the connect deadline give connect_failed") {
    silent_listener silent;
    asio::io_context ioc;
    run(ioc, connect_failures(silent.conninfo()));
}
