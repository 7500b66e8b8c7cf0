// Tests of db::in_transaction against a real PostgreSQL.

#include "db/db_support.hpp"

#include "fulltime/db/transaction.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <stdexcept>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;

namespace {

awaitable<db::outcome<std::int64_t>> insert_and_count(std::int64_t id, db::connection& conn) {
    auto inserted = co_await conn.query("INSERT INTO items VALUES ($1)", db::params{id});
    if (!inserted) {
        co_return inserted.error();
    }
    auto counted = co_await conn.query("SELECT count(*) FROM items");
    if (!counted) {
        co_return counted.error();
    }
    co_return counted->get<std::int64_t>(0, 0);
}

awaitable<db::outcome<std::int64_t>> insert_twice(std::int64_t id, db::connection& conn) {
    auto first = co_await conn.query("INSERT INTO items VALUES ($1)", db::params{id});
    if (!first) {
        co_return first.error();
    }
    // Same key again: a unique violation after a successful insert.
    auto second = co_await conn.query("INSERT INTO items VALUES ($1)", db::params{id});
    if (!second) {
        co_return second.error();
    }
    co_return 2;
}

/// Reads lock_timeout and statement_timeout as the transaction sees them.
awaitable<db::outcome<std::string>> read_settings(db::connection& conn) {
    auto r = co_await conn.query(
        "SELECT current_setting('lock_timeout') || ' ' || current_setting('statement_timeout')");
    if (!r) {
        co_return r.error();
    }
    co_return r->get<std::string>(0, 0);
}

/// Swallows an error and claims success: the helper must not commit.
awaitable<db::outcome<int>> swallow_error(db::connection& conn) {
    auto inserted = co_await conn.query("INSERT INTO items VALUES (500)");
    if (!inserted) {
        co_return inserted.error();
    }
    auto ignored = co_await conn.query("SELECT 1/0");
    CHECK_FALSE(ignored.has_value());
    co_return 1;
}

/// Inserts a row and then throws.
awaitable<db::outcome<int>> insert_then_throw(db::connection& conn) {
    auto inserted = co_await conn.query("INSERT INTO items VALUES (600)");
    if (!inserted) {
        co_return inserted.error();
    }
    throw std::logic_error("body failed");
}

/// Tries to nest a transaction inside the body.
awaitable<db::outcome<int>> nested(db::connection& conn) {
    auto inner = co_await db::in_transaction(conn, db::transaction_options{},
                                             std::bind_front(&insert_and_count, 700));
    if (!inner) {
        co_return inner.error();
    }
    co_return 1;
}

awaitable<db::outcome<db::result>> update_account(db::connection& conn) {
    co_return co_await conn.query("UPDATE items SET id = id WHERE id = 1");
}

awaitable<void> commits_and_rolls_back(std::string url) {
    auto conn = co_await open_connection(url);
    auto other = co_await open_connection(url);
    FT_AWAIT_OK(co_await conn->query("CREATE TABLE items (id bigint PRIMARY KEY)"));

    auto committed = co_await db::in_transaction(*conn, db::transaction_options{},
                                                 std::bind_front(&insert_and_count, 1));
    FT_REQUIRE_OK(committed);
    CHECK(*committed == 1);
    CHECK(conn->idle());
    auto seen = co_await other->query("SELECT count(*) FROM items");
    FT_REQUIRE_OK(seen);
    CHECK(seen->get<std::int64_t>(0, 0).value() == 1);

    auto failed = co_await db::in_transaction(*conn, db::transaction_options{},
                                              std::bind_front(&insert_twice, 2));
    FT_CHECK_FAILS_WITH(failed, db::errc::unique_violation);
    CHECK(conn->idle());
    CHECK_FALSE(conn->broken());
    auto after_rollback = co_await other->query("SELECT count(*) FROM items WHERE id = 2");
    FT_REQUIRE_OK(after_rollback);
    CHECK(after_rollback->get<std::int64_t>(0, 0).value() == 0);

    auto swallowed = co_await db::in_transaction(*conn, db::transaction_options{}, &swallow_error);
    FT_CHECK_FAILS_WITH(swallowed, db::errc::bad_result);
    CHECK(conn->idle());
    auto not_committed = co_await other->query("SELECT count(*) FROM items WHERE id = 500");
    FT_REQUIRE_OK(not_committed);
    CHECK(not_committed->get<std::int64_t>(0, 0).value() == 0);

    bool threw = false;
    try {
        co_await db::in_transaction(*conn, db::transaction_options{}, &insert_then_throw);
    } catch (const std::logic_error&) {
        threw = true;
    }
    CHECK(threw);
    CHECK(conn->idle());
    auto not_after_throw = co_await other->query("SELECT count(*) FROM items WHERE id = 600");
    FT_REQUIRE_OK(not_after_throw);
    CHECK(not_after_throw->get<std::int64_t>(0, 0).value() == 0);

    auto refused = co_await db::in_transaction(*conn, db::transaction_options{}, &nested);
    FT_CHECK_FAILS_WITH(refused, db::errc::bad_result);
    CHECK(conn->idle());
    auto total = co_await other->query("SELECT count(*) FROM items");
    FT_REQUIRE_OK(total);
    CHECK(total->get<std::int64_t>(0, 0).value() == 1);
}

awaitable<void> set_local_does_not_leak(std::string url) {
    auto conn = co_await open_connection(url);
    auto defaults = co_await db::in_transaction(*conn, db::transaction_options{}, &read_settings);
    FT_REQUIRE_OK(defaults);
    CHECK(*defaults == "0 0");

    auto inside = co_await db::in_transaction(
        *conn, db::transaction_options{.lock_timeout_ms = 1234, .statement_timeout_ms = 4321},
        &read_settings);
    FT_REQUIRE_OK(inside);
    CHECK(*inside == "1234ms 4321ms");

    // The next transaction on the same connection, and a statement outside any, see defaults.
    auto next = co_await db::in_transaction(*conn, db::transaction_options{}, &read_settings);
    FT_REQUIRE_OK(next);
    CHECK(*next == "0 0");
    auto outside = co_await read_settings(*conn);
    FT_REQUIRE_OK(outside);
    CHECK(*outside == "0 0");

    auto out_of_range = co_await db::in_transaction(
        *conn, db::transaction_options{.lock_timeout_ms = -1}, &read_settings);
    FT_CHECK_FAILS_WITH(out_of_range, db::errc::bad_result);
    CHECK(conn->idle());
}

awaitable<void> lock_timeout_through_helper(std::string url) {
    auto conn = co_await open_connection(url);
    auto holder = co_await open_connection(url);
    FT_AWAIT_OK(co_await conn->execute_script(
        "CREATE TABLE items (id bigint PRIMARY KEY); INSERT INTO items VALUES (1)"));
    FT_AWAIT_OK(co_await holder->execute_script("BEGIN; DELETE FROM items WHERE id = 1"));

    const auto start = steady::now();
    auto blocked = co_await db::in_transaction(
        *conn, db::transaction_options{.lock_timeout_ms = 50, .statement_timeout_ms = 5000},
        &update_account);
    CHECK(elapsed_ms(start) < 2000);
    FT_CHECK_FAILS_WITH(blocked, db::errc::lock_timeout);
    CHECK(conn->idle());
    CHECK_FALSE(conn->broken());

    FT_AWAIT_OK(co_await holder->query("ROLLBACK"));
    auto retried = co_await db::in_transaction(
        *conn, db::transaction_options{.lock_timeout_ms = 50}, &update_account);
    FT_REQUIRE_OK(retried);
    CHECK(retried->affected_rows() == 1);
}

}  // namespace

TEST_CASE("transaction: commits on success and rolls back on failure or throw or swallowed error") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, commits_and_rolls_back(db.url()));
}

TEST_CASE("transaction: SET LOCAL timeouts apply inside and never leak to the next one") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, set_local_does_not_leak(db.url()));
}

TEST_CASE("transaction: lock_timeout from the options turns a lock wait into lock_timeout") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, lock_timeout_through_helper(db.url()));
}
