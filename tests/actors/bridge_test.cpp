#include "fulltime/actors/bridge.hpp"
#include "fulltime/actors/runtime.hpp"

#include <doctest/doctest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using fulltime::actors::ask;

namespace {

using slow_atom = caf::atom_constant<caf::atom("slow")>;
using never_atom = caf::atom_constant<caf::atom("never")>;

// Doubles integers at once; answers `slow` after 200 ms without blocking its thread;
// never answers `never`.
caf::behavior calculator(caf::event_based_actor* self) {
    return {
        [](int x) { return x * 2; },
        [self](slow_atom, int x) {
            auto promise = self->make_response_promise<int>();
            self->delayed_send(self, 200ms, caf::atom("deliver"), x);
            self->become(caf::keep_behavior, [self, promise](caf::atom_value, int y) mutable {
                promise.deliver(y + 1);
                self->unbecome();
            });
            return promise;
        },
        [](never_atom) -> caf::result<int> { return caf::delegated<int>(); },
        [](const std::string& s) -> caf::result<int> {
            return caf::make_error(caf::sec::invalid_argument, s);
        },
    };
}

fulltime::actor_settings settings() {
    fulltime::actor_settings s;
    s.scheduler_threads = 2;
    s.request_timeout_ms = 1000;
    return s;
}

}  // namespace

TEST_CASE("a coroutine awaits many actor replies concurrently on one thread") {
    fulltime::actors::runtime rt(settings());
    auto calc = rt.system().spawn(calculator);
    boost::asio::io_context ioc;
    std::atomic<int> sum{0};
    std::atomic<int> done{0};
    const int n = 200;
    for (int i = 0; i < n; ++i) {
        boost::asio::co_spawn(
            ioc,
            [&, i]() -> boost::asio::awaitable<void> {
                auto reply = co_await ask<int>(rt.system(), calc, 1000ms, i);
                if (reply) {
                    sum += *reply;
                }
                ++done;
            },
            boost::asio::detached);
    }
    ioc.run();
    CHECK(done == n);
    CHECK(sum == n * (n - 1));  // 2 * (0 + 1 + ... + n-1)
    caf::anon_send_exit(calc, caf::exit_reason::user_shutdown);
}

TEST_CASE("waiting for an actor's reply does not block the event loop") {
    fulltime::actors::runtime rt(settings());
    auto calc = rt.system().spawn(calculator);
    boost::asio::io_context ioc;
    int reply_value = 0;
    int ticks_before_reply = 0;
    bool replied = false;
    boost::asio::co_spawn(
        ioc,
        [&]() -> boost::asio::awaitable<void> {
            auto reply = co_await ask<int>(rt.system(), calc, 2000ms, slow_atom::value, 41);
            REQUIRE(reply);
            reply_value = *reply;
            replied = true;
        },
        boost::asio::detached);
    // A timer on the same single thread keeps firing while the reply is pending.
    boost::asio::co_spawn(
        ioc,
        [&]() -> boost::asio::awaitable<void> {
            boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
            while (!replied) {
                t.expires_after(10ms);
                co_await t.async_wait(boost::asio::use_awaitable);
                if (!replied) {
                    ++ticks_before_reply;
                }
            }
        },
        boost::asio::detached);
    ioc.run();
    CHECK(reply_value == 42);
    CHECK(ticks_before_reply >= 5);
    caf::anon_send_exit(calc, caf::exit_reason::user_shutdown);
}

TEST_CASE("a request that gets no reply in time fails with request_timeout") {
    fulltime::actors::runtime rt(settings());
    auto calc = rt.system().spawn(calculator);
    boost::asio::io_context ioc;
    caf::error err;
    const auto start = std::chrono::steady_clock::now();
    boost::asio::co_spawn(
        ioc,
        [&]() -> boost::asio::awaitable<void> {
            auto reply = co_await ask<int>(rt.system(), calc, 100ms, never_atom::value);
            REQUIRE_FALSE(reply);
            err = reply.error();
        },
        boost::asio::detached);
    ioc.run();
    const auto elapsed = std::chrono::steady_clock::now() - start;
    CHECK(err == caf::sec::request_timeout);
    CHECK(elapsed >= 100ms);
    CHECK(elapsed < 5s);
    caf::anon_send_exit(calc, caf::exit_reason::user_shutdown);
}

TEST_CASE("an actor's error and a dead actor reach the coroutine as errors") {
    fulltime::actors::runtime rt(settings());
    auto calc = rt.system().spawn(calculator);
    boost::asio::io_context ioc;
    caf::error refused;
    caf::error gone;
    boost::asio::co_spawn(
        ioc,
        [&]() -> boost::asio::awaitable<void> {
            auto r1 = co_await ask<int>(rt.system(), calc, 1000ms, std::string("no"));
            REQUIRE_FALSE(r1);
            refused = r1.error();
            caf::anon_send_exit(calc, caf::exit_reason::user_shutdown);
            // Give the exit a moment to land, then ask the dead actor.
            boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, 50ms);
            co_await t.async_wait(boost::asio::use_awaitable);
            auto r2 = co_await ask<int>(rt.system(), calc, 1000ms, 1);
            REQUIRE_FALSE(r2);
            gone = r2.error();
        },
        boost::asio::detached);
    ioc.run();
    CHECK(refused == caf::sec::invalid_argument);
    CHECK(gone == caf::sec::request_receiver_down);
}
