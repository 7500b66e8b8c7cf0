#pragma once
/// Helpers shared by the db/ tests that need PostgreSQL.

#include "fulltime/db/connection.hpp"
#include "support/pg_support.hpp"

// GCC 12 reports a false -Wmismatched-new-delete on Asio's coroutine frame allocator wherever a
// coroutine gets inlined (GCC PR middle-end/109224); the tests inline many. Ignored for the rest
// of each test file that includes this header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace fulltime::test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// Returns "ok" or the failure of an outcome, for assertion messages.
template <class T>
std::string describe_outcome(const db::outcome<T>& o) {
    return o ? std::string{"ok"} : db::describe(o.error());
}

/// Requires an outcome to hold a value, printing its failure otherwise.
#define FT_REQUIRE_OK(o) REQUIRE_MESSAGE((o).has_value(), ::fulltime::test::describe_outcome(o))
/// Awaits an expression (outside doctest's lambdas, where co_await cannot go) and requires it
/// to succeed.
#define FT_AWAIT_OK(expr)           \
    do {                            \
        auto ft_awaited_ = (expr);  \
        FT_REQUIRE_OK(ft_awaited_); \
    } while (false)
/// Checks that an outcome failed with the given code.
#define FT_CHECK_FAILS_WITH(o, c)                                                       \
    do {                                                                                \
        REQUIRE_MESSAGE(!(o).has_value(), "expected " << ::fulltime::db::to_string(c)); \
        CHECK_MESSAGE((o).error().code == (c), ::fulltime::db::describe((o).error()));  \
    } while (false)

/// Opens a connection on the current executor or fails the test.
inline boost::asio::awaitable<std::unique_ptr<db::connection>> open_connection(
    std::string url, std::chrono::milliseconds query_timeout = 10s) {
    auto executor = co_await boost::asio::this_coro::executor;
    auto opened = co_await db::connection::open(executor, url, 5s, query_timeout);
    FT_REQUIRE_OK(opened);
    co_return std::move(*opened);
}

/// Waits on a timer (tests only).
inline boost::asio::awaitable<void> sleep_for(std::chrono::milliseconds duration) {
    boost::asio::steady_timer timer{co_await boost::asio::this_coro::executor, duration};
    co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
}

/// Returns whether the backend `pid` left pg_stat_activity within `bound`, asked on `admin`
/// every 50 ms: the test waits on the event, and the bound only ends a test that fails.
inline boost::asio::awaitable<bool> backend_gone(db::connection& admin, std::int64_t pid,
                                                 std::chrono::milliseconds bound) {
    const auto until = std::chrono::steady_clock::now() + bound;
    for (;;) {
        auto n = co_await admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                                      db::params(pid));
        FT_REQUIRE_OK(n);
        if (n->get<std::int64_t>(0, 0).value() == 0) {
            co_return true;
        }
        if (std::chrono::steady_clock::now() >= until) {
            co_return false;
        }
        co_await sleep_for(std::chrono::milliseconds(50));
    }
}

/// Runs coroutines concurrently on the current executor and returns their values in order.
template <class T>
boost::asio::awaitable<std::vector<T>> run_all(std::vector<boost::asio::awaitable<T>> tasks) {
    auto executor = co_await boost::asio::this_coro::executor;
    using op_type =
        decltype(boost::asio::co_spawn(executor, std::move(tasks.front()), boost::asio::deferred));
    std::vector<op_type> ops;
    for (auto& t : tasks) {
        ops.push_back(boost::asio::co_spawn(executor, std::move(t), boost::asio::deferred));
    }
    auto [order, errors, values] =
        co_await boost::asio::experimental::make_parallel_group(std::move(ops))
            .async_wait(boost::asio::experimental::wait_for_all(), boost::asio::use_awaitable);
    for (const auto& e : errors) {
        if (e) {
            std::rethrow_exception(e);
        }
    }
    co_return std::move(values);
}

/// Returns the milliseconds elapsed since `start`.
inline std::int64_t elapsed_ms(steady::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start).count();
}

}  // namespace fulltime::test
