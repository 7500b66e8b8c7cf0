// Tests of db::pool against a real PostgreSQL.

#include "db/db_support.hpp"

#include "fulltime/db/pool.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <set>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;

namespace {

std::unique_ptr<db::pool> make_pool(asio::any_io_executor executor, const std::string& url,
                                    std::size_t size_max, std::size_t queue_max,
                                    std::int64_t wait_ms_max,
                                    std::chrono::milliseconds query_timeout = 10s,
                                    std::chrono::milliseconds connect_timeout = 5s) {
    return std::make_unique<db::pool>(std::move(executor), "test", url,
                                      pool_settings{size_max, queue_max, wait_ms_max},
                                      connect_timeout, query_timeout);
}

awaitable<void> deadline_replaced(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, 1, 8, 1000, 200ms);
    int first_pid = 0;
    {
        auto c = co_await p->acquire();
        FT_REQUIRE_OK(c);
        first_pid = (*c)->backend_pid();
        const auto start = steady::now();
        auto slow = co_await (*c)->query("SELECT pg_sleep(5)");
        FT_CHECK_FAILS_WITH(slow, db::errc::deadline_exceeded);
        CHECK(elapsed_ms(start) < 1000);
        CHECK((*c)->broken());
    }
    auto stats = p->stats();
    CHECK(stats.broken_total == 1);
    CHECK(stats.in_use == 0);
    CHECK(stats.idle == 0);

    auto c = co_await p->acquire();
    FT_REQUIRE_OK(c);
    CHECK((*c)->backend_pid() != first_pid);
    auto r = co_await (*c)->query("SELECT 41 + 1");
    FT_REQUIRE_OK(r);
    CHECK(r->get<std::int32_t>(0, 0).value() == 42);
    CHECK(p->stats().in_use == 1);
}

awaitable<void> survives_terminate(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, 3, 8, 2000);
    auto admin = co_await open_connection(url);

    // Open three connections by holding them at once.
    std::set<int> old_pids;
    {
        auto a = co_await p->acquire();
        auto b = co_await p->acquire();
        auto c = co_await p->acquire();
        FT_REQUIRE_OK(a);
        FT_REQUIRE_OK(b);
        FT_REQUIRE_OK(c);
        for (auto* conn : {&*a, &*b, &*c}) {
            FT_AWAIT_OK(co_await (*conn)->query("SELECT 1"));
            old_pids.insert((*conn)->backend_pid());
        }
    }
    REQUIRE(old_pids.size() == 3);
    CHECK(p->stats().idle == 3);

    // Terminate them all while idle; the timeout argument makes the call wait until they exit.
    for (int pid : old_pids) {
        auto killed =
            co_await admin->query("SELECT pg_terminate_backend($1, 5000)", db::params{pid});
        FT_REQUIRE_OK(killed);
        CHECK(killed->get<bool>(0, 0).value());
    }

    // The pool notices the dead idle connections without a round trip and opens a fresh one.
    const auto start = steady::now();
    {
        auto c = co_await p->acquire();
        FT_REQUIRE_OK(c);
        auto r = co_await (*c)->query("SELECT 1");
        FT_REQUIRE_OK(r);
        CHECK(old_pids.count((*c)->backend_pid()) == 0);
    }
    CHECK(elapsed_ms(start) < 1000);
    auto stats = p->stats();
    CHECK(stats.broken_total == 3);
    CHECK(stats.idle == 1);
    CHECK(stats.in_use == 0);

    // A connection terminated while lent: its next request fails quickly with connection_lost,
    // it is discarded on return, and the request after that gets a fresh working connection.
    int lent_pid = 0;
    {
        auto c = co_await p->acquire();
        FT_REQUIRE_OK(c);
        lent_pid = (*c)->backend_pid();
        auto killed =
            co_await admin->query("SELECT pg_terminate_backend($1, 5000)", db::params{lent_pid});
        FT_REQUIRE_OK(killed);
        const auto lost_start = steady::now();
        auto r = co_await (*c)->query("SELECT 1");
        FT_CHECK_FAILS_WITH(r, db::errc::connection_lost);
        CHECK(elapsed_ms(lost_start) < 500);
    }
    CHECK(p->stats().broken_total == 4);
    {
        auto c = co_await p->acquire();
        FT_REQUIRE_OK(c);
        CHECK((*c)->backend_pid() != lent_pid);
        FT_AWAIT_OK(co_await (*c)->query("SELECT 1"));
    }
    CHECK(p->stats().in_use == 0);
}

struct acquire_report {
    bool ok = false;
    db::errc code = db::errc::server_error;
    std::int64_t took_ms = 0;
};

awaitable<acquire_report> timed_acquire(db::pool& p) {
    const auto start = steady::now();
    auto c = co_await p.acquire();
    acquire_report out;
    out.ok = c.has_value();
    out.code = c ? db::errc::server_error : c.error().code;
    out.took_ms = elapsed_ms(start);
    co_return out;
}

/// Reads the gauges while two acquires wait behind a held connection.
awaitable<acquire_report> observe_waiting(db::pool& p) {
    co_await sleep_for(30ms);
    const auto stats = p.stats();
    CHECK(stats.waiting == 2);
    CHECK(stats.in_use == 1);
    CHECK(stats.idle == 0);
    CHECK(stats.opening == 0);
    co_return acquire_report{};
}

awaitable<void> timeouts_and_queue_bound(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, 1, 2, 150);
    auto held = co_await p->acquire();
    FT_REQUIRE_OK(held);

    std::vector<awaitable<acquire_report>> tasks;
    tasks.push_back(timed_acquire(*p));
    tasks.push_back(timed_acquire(*p));
    tasks.push_back(timed_acquire(*p));  // third in line: beyond queue_max
    tasks.push_back(observe_waiting(*p));
    auto reports = co_await run_all(std::move(tasks));

    for (int i : {0, 1}) {
        CHECK_FALSE(reports[i].ok);
        CHECK(reports[i].code == db::errc::pool_timeout);
        CHECK(reports[i].took_ms >= 140);
        CHECK(reports[i].took_ms < 1000);
    }
    CHECK_FALSE(reports[2].ok);
    CHECK(reports[2].code == db::errc::pool_queue_full);
    CHECK(reports[2].took_ms < 50);

    auto stats = p->stats();
    CHECK(stats.timeouts_total == 2);
    CHECK(stats.rejected_total == 1);
    CHECK(stats.waiting == 0);
    CHECK(stats.wait_us_max >= 140'000);
    CHECK(stats.wait_us_max < 1'000'000);
    CHECK(stats.acquired_total == 1);

    // Once the connection is back, the next acquire gets it at once.
    held = db::pooled_connection{};
    auto again = co_await timed_acquire(*p);
    CHECK(again.ok);
    CHECK(again.took_ms < 100);
}

awaitable<void> gauges(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, 2, 4, 1000);
    auto s0 = p->stats();
    CHECK(s0.name == "test");
    CHECK(s0.size_max == 2);
    CHECK(s0.in_use == 0);
    CHECK(s0.idle == 0);
    CHECK(s0.waiting == 0);
    CHECK(s0.acquired_total == 0);
    {
        auto a = co_await p->acquire();
        FT_REQUIRE_OK(a);
        auto s1 = p->stats();
        CHECK(s1.in_use == 1);
        CHECK(s1.idle == 0);
        CHECK(s1.opening == 0);
        auto b = co_await p->acquire();
        FT_REQUIRE_OK(b);
        CHECK(p->stats().in_use == 2);
        CHECK((*a)->backend_pid() != (*b)->backend_pid());
    }
    auto s2 = p->stats();
    CHECK(s2.in_use == 0);
    CHECK(s2.idle == 2);
    CHECK(s2.acquired_total == 2);
    {
        // A connection left inside a transaction is discarded on return, not reused.
        auto c = co_await p->acquire();
        FT_REQUIRE_OK(c);
        FT_AWAIT_OK(co_await (*c)->query("BEGIN"));
        CHECK(p->stats().idle == 1);
    }
    auto s3 = p->stats();
    CHECK(s3.idle == 1);
    CHECK(s3.in_use == 0);
    CHECK(s3.broken_total == 1);
    CHECK(s3.acquired_total == 3);
    CHECK(s3.timeouts_total == 0);
    CHECK(s3.connect_failures_total == 0);
}

awaitable<int> busy_worker(db::pool& p, int n) {
    auto c = co_await p.acquire();
    if (!c) {
        FAIL_CHECK("acquire failed: " << db::describe(c.error()));
        co_return -1;
    }
    auto r = co_await (*c)->query("SELECT $1::int * 2, pg_sleep(0.01)", db::params{n});
    if (!r) {
        FAIL_CHECK("query failed: " << db::describe(r.error()));
        co_return -1;
    }
    co_return r->get<std::int32_t>(0, 0).value();
}

awaitable<void> many_share_few(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, 4, 100, 10'000);
    std::vector<awaitable<int>> tasks;
    for (int i = 0; i < 50; ++i) {
        tasks.push_back(busy_worker(*p, i));
    }
    auto results = co_await run_all(std::move(tasks));
    for (int i = 0; i < 50; ++i) {
        CHECK(results[i] == 2 * i);
    }
    auto stats = p->stats();
    CHECK(stats.acquired_total == 50);
    CHECK(stats.in_use == 0);
    CHECK(stats.waiting == 0);
    CHECK(stats.opening == 0);
    CHECK(stats.idle <= 4);
    CHECK(stats.idle >= 1);
    CHECK(stats.timeouts_total == 0);
    CHECK(stats.wait_us_max > 0);

    // The server never saw more than size_max sessions from this pool.
    auto admin = co_await open_connection(url);
    auto sessions = co_await admin->query(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid()");
    FT_REQUIRE_OK(sessions);
    CHECK(sessions->get<std::int64_t>(0, 0).value() <= 4);
}

awaitable<void> failed_connects_fail_waiters(std::string bad_url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, bad_url, 2, 8, 5000);
    std::vector<awaitable<acquire_report>> tasks;
    for (int i = 0; i < 3; ++i) {
        tasks.push_back(timed_acquire(*p));
    }
    auto reports = co_await run_all(std::move(tasks));
    for (const auto& r : reports) {
        CHECK_FALSE(r.ok);
        CHECK(r.code == db::errc::connect_failed);
        CHECK(r.took_ms < 1000);  // not stranded until wait_ms_max
    }
    auto stats = p->stats();
    CHECK(stats.connect_failures_total >= 3);
    CHECK(stats.opening == 0);
    CHECK(stats.waiting == 0);
    CHECK(stats.in_use == 0);
}

awaitable<acquire_report> close_after(db::pool& p, std::chrono::milliseconds delay) {
    co_await sleep_for(delay);
    p.close();
    co_return acquire_report{};
}

awaitable<void> close_fails_waiters(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, 1, 8, 5000);
    auto held = co_await p->acquire();
    FT_REQUIRE_OK(held);
    std::vector<awaitable<acquire_report>> tasks;
    tasks.push_back(timed_acquire(*p));
    tasks.push_back(close_after(*p, 50ms));
    auto reports = co_await run_all(std::move(tasks));
    CHECK_FALSE(reports[0].ok);
    CHECK(reports[0].code == db::errc::pool_closed);
    CHECK(reports[0].took_ms < 1000);

    auto later = co_await p->acquire();
    FT_CHECK_FAILS_WITH(later, db::errc::pool_closed);

    // A lent connection may outlive its pool; returning it then just closes it.
    p.reset();
    FT_AWAIT_OK(co_await (*held)->query("SELECT 1"));
    held = db::pooled_connection{};
}

/// Waits `delay`, acquires, appends `id` to `order` once served, and returns the connection.
awaitable<int> queue_in_order(db::pool& p, std::vector<int>& order, int id,
                              std::chrono::milliseconds delay) {
    co_await sleep_for(delay);
    auto c = co_await p.acquire();
    if (!c) {
        FAIL_CHECK("acquire failed: " << db::describe(c.error()));
        co_return -1;
    }
    order.push_back(id);
    co_await sleep_for(5ms);
    co_return id;
}

awaitable<int> release_after(db::pooled_connection held, std::chrono::milliseconds delay) {
    co_await sleep_for(delay);
    held = db::pooled_connection{};
    co_return 0;
}

awaitable<void> waiters_served_in_order(std::string url) {
    auto executor = co_await asio::this_coro::executor;
    auto p = make_pool(executor, url, 1, 8, 5000);
    auto held = co_await p->acquire();
    FT_REQUIRE_OK(held);
    std::vector<int> order;
    std::vector<awaitable<int>> tasks;
    // Queue in the order 3, 1, 2 (by start delay), then free the only connection.
    tasks.push_back(queue_in_order(*p, order, 1, 20ms));
    tasks.push_back(queue_in_order(*p, order, 2, 40ms));
    tasks.push_back(queue_in_order(*p, order, 3, 0ms));
    tasks.push_back(release_after(std::move(*held), 80ms));
    auto served = co_await run_all(std::move(tasks));
    CHECK(served == std::vector<int>{1, 2, 3, 0});
    CHECK(order == std::vector<int>{3, 1, 2});
    CHECK(p->stats().acquired_total == 4);
    CHECK(p->stats().timeouts_total == 0);
}

}  // namespace

TEST_CASE("pool: a deadline breaks the connection and the pool replaces it") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, deadline_replaced(db.url()));
}

TEST_CASE("pool: survives pg_terminate_backend of all its connections") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, survives_terminate(db.url()));
}

TEST_CASE("pool: waits time out and are counted and the queue bound is enforced") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, timeouts_and_queue_bound(db.url()));
}

TEST_CASE("pool: gauges follow acquire and return") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, gauges(db.url()));
}

TEST_CASE("pool: 50 coroutines share a pool of 4") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, many_share_few(db.url()));
}

TEST_CASE("pool: failed connects fail waiters promptly") {
    asio::io_context ioc;
    run(ioc, failed_connects_fail_waiters("host=/nonexistent-fulltime-dir user=x dbname=y"));
}

TEST_CASE("pool: close fails waiters and later acquires") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, close_fails_waiters(db.url()));
}

TEST_CASE("pool: waiters are served oldest first") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, waiters_served_in_order(db.url()));
}
