#pragma once
/// Runs a body in one short transaction: BEGIN (Read Committed) with SET LOCAL timeouts, the
/// body, COMMIT; ROLLBACK on any failure. Settings are SET LOCAL only, so nothing outlives the
/// transaction (required by PgBouncer transaction mode).

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

namespace fulltime::db {

/// Holds the per-transaction settings, applied with SET LOCAL. Zero leaves the server's
/// (or role's) setting in place.
struct transaction_options {
    std::int64_t lock_timeout_ms = 0;       ///< SET LOCAL lock_timeout; 0: not set
    std::int64_t statement_timeout_ms = 0;  ///< SET LOCAL statement_timeout; 0: not set
};

namespace detail {

/// Sends BEGIN ISOLATION LEVEL READ COMMITTED and the SET LOCALs in one round trip. Refuses a
/// connection already inside a transaction (bad_result); rolls back what it began if a SET fails.
boost::asio::awaitable<outcome<void>> begin_transaction(connection& conn,
                                                        transaction_options options);

/// Commits. A transaction that an error aborted is not committed (COMMIT would silently roll it
/// back): it is reported as bad_result and rolled back.
boost::asio::awaitable<outcome<void>> commit_transaction(connection& conn);

/// Rolls back the open transaction, if any; closes the connection when ROLLBACK fails so that
/// no pool lends it again.
boost::asio::awaitable<void> rollback_transaction(connection& conn);

}  // namespace detail

/// Runs `body(conn)` inside one transaction on `conn` and commits when it succeeds; rolls back
/// when BEGIN, the body, or COMMIT fails, or when the body throws (then rethrows).
///
/// `body` is called as `body(conn)` and returns `awaitable<outcome<T>>`. It is taken by value
/// and kept alive in this coroutine's frame until its coroutine has finished, so a callable
/// object's members stay valid while it runs. Prefer a free coroutine bound with
/// std::bind_front, or an object whose operator() takes its arguments by value (CP.51).
template <class F>
auto in_transaction(connection& conn, transaction_options options, F body)
    -> std::invoke_result_t<F&, connection&> {
    using body_outcome = typename std::invoke_result_t<F&, connection&>::value_type;

    if (auto begun = co_await detail::begin_transaction(conn, options); !begun) {
        co_return body_outcome{begun.error()};
    }

    std::exception_ptr thrown;
    std::optional<body_outcome> outcome_of_body;
    try {
        outcome_of_body.emplace(co_await std::invoke(body, conn));
    } catch (...) {
        // No co_await inside a handler: remember the exception and roll back below.
        thrown = std::current_exception();
    }
    if (thrown) {
        co_await detail::rollback_transaction(conn);
        std::rethrow_exception(thrown);
    }
    if (!*outcome_of_body) {
        co_await detail::rollback_transaction(conn);
        co_return std::move(*outcome_of_body);
    }
    if (auto committed = co_await detail::commit_transaction(conn); !committed) {
        co_await detail::rollback_transaction(conn);
        co_return body_outcome{committed.error()};
    }
    co_return std::move(*outcome_of_body);
}

}  // namespace fulltime::db
