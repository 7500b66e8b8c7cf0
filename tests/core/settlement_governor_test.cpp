// The settlement governor (core/settlement_governor.cpp) driven by a fake placement latency: its
// first burst starts small and doubles, it slows settlement when the p99 rises over the budget,
// recovers when it falls well under it,
// holds close under it and while settlement is idle, holds the floor under a budget it cannot
// meet, and does nothing when off; a budget in percent follows the baseline. And the fine latency
// window it reads the p99 from (core/latency_window.cpp), and the baseline of quiet placement time
// (core/latency_baseline.cpp).

#include "fulltime/core/settlement_governor.hpp"
#include "fulltime/core/latency_baseline.hpp"
#include "fulltime/core/latency_window.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <optional>

using namespace std::chrono_literals;
using fulltime::metrics::latency_baseline;
using fulltime::metrics::latency_window;
using fulltime::settlement::governor;
using fulltime::settlement::governor_settings;
using us = std::chrono::microseconds;

namespace {

governor_settings budget_of(us budget, double floor = 0) {
    governor_settings s;
    s.budget = budget;
    s.batch_max = 500;
    s.batch_min = 25;
    s.min_bets_per_s = floor;
    s.window = 1s;
    s.pause_max = 1s;
    s.pause_step = 5ms;
    return s;
}

/// Drives `g` for `periods` periods of 100 ms from `start`, with `p99` each time and one batch of
/// its current size per period costing `cost` per bet. Returns the time after the last period.
us drive(governor& g, us start, int periods, std::optional<us> p99, us cost = 20us) {
    us now = start;
    for (int i = 0; i < periods; ++i) {
        g.on_batch(g.batch_bets(), cost * g.batch_bets());
        now += 100ms;
        g.on_period(p99, now);
    }
    return now;
}

/// Drives `g` within its budget (6 ms here) until its slow start reaches full batches; returns the
/// time after the last period.
us at_full_speed(governor& g, us start = 0us) {
    const auto now = drive(g, start, 50, 1ms);
    REQUIRE(g.batch_bets() == 500);
    REQUIRE(g.pause() == 0us);
    REQUIRE_FALSE(g.slow_start());
    return now;
}

}  // namespace

TEST_CASE("settlement governor: off, it always runs full batches back to back") {
    governor g(budget_of(0us));
    CHECK_FALSE(g.enabled());
    drive(g, 0us, 20, 50ms);
    CHECK(g.batch_bets() == 500);
    CHECK(g.pause() == 0us);
    CHECK_FALSE(g.floored());
}

TEST_CASE(
    "settlement governor: its first burst starts small and doubles per window within the budget") {
    governor g(budget_of(6ms));
    CHECK(g.slow_start());
    CHECK(g.batch_bets() == 25);
    CHECK(g.pause() == 0us);
    // No batch yet: nothing says what settling costs, it holds.
    us now = 0us;
    for (int i = 0; i < 30; ++i) {
        now += 100ms;
        g.on_period(1ms, now);
    }
    CHECK(g.batch_bets() == 25);
    // Within the budget with batches: twice the batch per window, spread over its periods.
    now = drive(g, now, 10, 4ms);
    CHECK(g.batch_bets() == 50);
    now = drive(g, now, 5, 4ms);
    CHECK(g.batch_bets() == 70);  // 50 x 2^0.5
    now = drive(g, now, 5, 4ms);
    CHECK(g.batch_bets() == 100);
    // Over three quarters of the budget: it holds, still in its slow start.
    now = drive(g, now, 20, 5ms);
    CHECK(g.batch_bets() == 100);
    CHECK(g.slow_start());
    // The first decrease ends the slow start: from then on the increase is additive (a tenth of
    // 500 per window, once the pause is gone).
    now = drive(g, now, 1, 9ms);
    CHECK(g.batch_bets() == 50);
    CHECK_FALSE(g.slow_start());
    now = drive(g, now, 10, 4ms);
    CHECK(g.pause() == 0us);
    CHECK(g.batch_bets() == 50);
    drive(g, now, 10, 4ms);
    CHECK(g.batch_bets() == 100);
}

TEST_CASE("settlement governor: within the budget it reaches full batches and keeps them") {
    governor g(budget_of(6ms));
    auto now = drive(g, 0us, 50, 4ms);
    CHECK(g.batch_bets() == 500);
    CHECK(g.pause() == 0us);
    CHECK_FALSE(g.slow_start());
    now = drive(g, now, 30, 4ms);
    CHECK(g.batch_bets() == 500);
    drive(g, now + 3s, 30, std::nullopt);  // no placements at all: nothing to protect
    CHECK(g.batch_bets() == 500);
    CHECK(g.pause() == 0us);
}

TEST_CASE("settlement governor: slows down when placement latency rises, once per window") {
    governor g(budget_of(6ms));
    const auto t0 = at_full_speed(g);
    g.on_batch(500, 10ms);
    g.on_period(9ms, t0 + 100ms);  // over: halve the batch, start pausing
    CHECK(g.batch_bets() == 250);
    CHECK(g.pause() == 5ms);
    // Still over during the same window: the window still holds placements from before the
    // decrease, so nothing more until a whole window has passed.
    for (int i = 2; i <= 10; ++i) {
        g.on_period(9ms, t0 + us(i * 100'000));
        CHECK(g.batch_bets() == 250);
    }
    g.on_period(9ms, t0 + 1100ms);
    CHECK(g.batch_bets() == 125);
    CHECK(g.pause() == 10ms);
    // Over for long: down to the smallest batch and the longest pause, never below or beyond.
    drive(g, t0 + 1100ms, 200, 20ms);
    CHECK(g.batch_bets() == 25);
    CHECK(g.pause() == 1s);
    CHECK_FALSE(g.floored());  // no floor set
}

TEST_CASE("settlement governor: recovers additively when latency falls") {
    governor g(budget_of(6ms));
    auto now = drive(g, 0us, 60, 20ms);  // several windows over
    const auto slow_batch = g.batch_bets();
    const auto slow_pause = g.pause();
    REQUIRE(slow_batch < 500);
    REQUIRE(slow_pause > 0us);
    // Back within the budget: the pause shrinks by one step (5 ms) per window, a tenth of it per
    // 100 ms period, before the batch grows by a tenth of 500 per window.
    g.on_period(3ms, now + 100ms);
    CHECK(g.pause() == slow_pause - 500us);
    CHECK(g.batch_bets() == slow_batch);
    now = drive(g, now + 100ms, 10 * static_cast<int>(slow_pause / 5ms) - 1, 3ms);
    CHECK(g.pause() == 0us);
    CHECK(g.batch_bets() == slow_batch);
    now = drive(g, now, 10, 3ms);  // one window: +50
    CHECK(g.batch_bets() == slow_batch + 50);
    now = drive(g, now, 1000, 3ms);
    CHECK(g.batch_bets() == 500);
}

TEST_CASE("settlement governor: close under the budget it holds its speed") {
    governor g(budget_of(6ms));
    auto now = drive(g, 0us, 30, 20ms);  // slowed down
    const auto batch = g.batch_bets();
    const auto pause = g.pause();
    REQUIRE(pause > 0us);
    // Within the budget but over three quarters of it (4.5 ms): neither faster nor slower, for
    // as long as it lasts.
    now = drive(g, now, 50, 5ms);
    CHECK(g.batch_bets() == batch);
    CHECK(g.pause() == pause);
    // With a quarter of the budget to spare it speeds up again.
    drive(g, now, 10, 4ms);
    CHECK(g.pause() < pause);
}

TEST_CASE(
    "settlement governor: while settlement is idle it holds either way, and the next burst "
    "starts where the last one left off") {
    governor g(budget_of(6ms));
    auto now = drive(g, 0us, 30, 20ms);  // a burst that had to slow down
    REQUIRE(g.batch_bets() < 500);
    REQUIRE(g.pause() >= 20ms);
    const auto idle = [&](int periods) {
        for (int i = 0; i < periods; ++i) {
            now += 100ms;
            g.on_period(2ms, now);
        }
    };
    // Placements fast and no batch: the window after the last batch still shows settlement
    // running (it may speed up a step), the ones after it nothing of what settling would cost.
    idle(20);
    const auto batch = g.batch_bets();
    const auto pause = g.pause();
    CHECK(pause > 10ms);
    idle(100);
    CHECK(g.batch_bets() == batch);
    CHECK(g.pause() == pause);
    // Nor does a slow placement slow it down further while nothing settles.
    for (int i = 0; i < 30; ++i) {
        now += 100ms;
        g.on_period(50ms, now);
    }
    CHECK(g.batch_bets() == batch);
    CHECK(g.pause() == pause);
    // Batches again, within the budget: the recovery starts from there.
    drive(g, now, 10, 2ms);
    CHECK(g.pause() == pause - 5ms);
}

TEST_CASE("settlement governor: batches a long pause apart still count as running") {
    governor g(budget_of(6ms));
    auto now = drive(g, 0us, 200, 20ms);  // slowed to the longest pause, 1 s
    REQUIRE(g.pause() == 1s);
    // One batch, then the pause of 1 s and more: the periods up to a window and a pause after
    // the batch's (1.9 s here, past the window alone) still count as running, and speed up.
    g.on_batch(g.batch_bets(), 500us);
    for (int i = 0; i < 19; ++i) {
        now += 100ms;
        g.on_period(2ms, now);
    }
    CHECK(g.pause() == 1s - 9500us);
}

TEST_CASE("settlement governor: the floor holds under a budget that cannot be met") {
    // 20 us per bet: back to back, a market settles 50,000 bets/s. Floor 2,000 bets/s: a batch of
    // b bets may pause at most b / 2000 s - b * 20 us.
    governor g(budget_of(1ms, 2000));
    drive(g, 0us, 300, 50ms);  // always over an impossible budget
    const double rate =
        static_cast<double>(g.batch_bets()) / (static_cast<double>(g.batch_bets()) * 20e-6 +
                                               static_cast<double>(g.pause().count()) * 1e-6);
    CHECK(rate >= doctest::Approx(2000).epsilon(0.01));
    CHECK(g.floored());
    CHECK(g.pause() < 1s);
    CHECK(g.pause() > 0us);
}

TEST_CASE("settlement governor: a floor above what the database can do takes full batches") {
    // 1 ms per bet: 1,000 bets/s at most, under a floor of 5,000.
    governor g(budget_of(1ms, 5000));
    drive(g, 0us, 50, 50ms, 1ms);
    CHECK(g.batch_bets() == 500);
    CHECK(g.pause() == 0us);
}

TEST_CASE("settlement governor: the cost per bet is the median of the last 8 batches") {
    governor g(budget_of(6ms));
    CHECK(g.cost_per_bet() == 0us);
    g.on_batch(100, 2ms);
    CHECK(g.cost_per_bet() == 20us);
    g.on_batch(100, 12ms);  // 120 us per bet: of two, the upper one
    CHECK(g.cost_per_bet() == 120us);
    g.on_batch(100, 3ms);  // 20, 30, 120: the middle one
    CHECK(g.cost_per_bet() == 30us);
    g.on_batch(0, 5ms);  // an empty step says nothing about the cost
    CHECK(g.cost_per_bet() == 30us);
    for (int i = 0; i < 8; ++i) {
        g.on_batch(100, 4ms);
    }
    CHECK(g.cost_per_bet() == 40us);  // the first three are out of the last 8
}

TEST_CASE(
    "settlement governor: one stalled batch does not send it from the floor to full batches") {
    // 200 us per bet in batches of 25 (a step's fixed cost weighs there), floor 1,000 bets/s,
    // an impossible budget: the smallest batch, paused as the floor allows.
    governor g(budget_of(1ms, 1000));
    auto now = drive(g, 0us, 300, 50ms, 200us);
    REQUIRE(g.batch_bets() == 25);
    REQUIRE(g.floored());
    const auto pause = g.pause();
    REQUIRE(pause > 0us);
    // One step of 25 bets that took 150 ms (6 ms a bet: it waited on something): a moving average
    // weighing it a fifth put the cost over 1 ms a bet, slower than the floor back to back, and
    // answered with full batches at once.
    g.on_batch(25, 150ms);
    CHECK(g.batch_bets() == 25);
    CHECK(g.pause() == pause);
    now = drive(g, now, 10, 50ms, 200us);
    CHECK(g.batch_bets() == 25);
    // Steps that are that slow for good are: back to back, and twice the batch per window (a
    // step's fixed cost weighs less on a larger one), not full batches at once.
    for (int i = 0; i < 4; ++i) {
        g.on_batch(25, 150ms);
    }
    CHECK(g.pause() == 0us);
    CHECK(g.batch_bets() == 25);
    now = drive(g, now, 10, 50ms, 6ms);
    CHECK(g.batch_bets() == 50);
    CHECK(g.floored());
    drive(g, now, 50, 50ms, 6ms);
    CHECK(g.batch_bets() == 500);
}

TEST_CASE("settlement governor: a budget in percent is a share of the baseline, off without one") {
    auto s = budget_of(0us);
    s.budget_percent = 150;
    governor g(s);
    CHECK(g.settings().any_budget());
    CHECK_FALSE(g.enabled());  // no baseline yet: full speed
    g.on_baseline(std::nullopt);
    auto now = drive(g, 0us, 30, 50ms);
    CHECK_FALSE(g.enabled());
    CHECK(g.batch_bets() == 500);
    CHECK(g.pause() == 0us);
    g.on_baseline(4ms);
    CHECK(g.enabled());
    CHECK(g.budget() == 6ms);
    // It starts to steer with a slow start, and by that budget: 7 ms is over, 5 ms holds, 4 ms
    // (under three quarters) speeds up.
    CHECK(g.slow_start());
    CHECK(g.batch_bets() == 25);
    now = at_full_speed(g, now);
    now = drive(g, now, 1, 7ms);
    CHECK(g.batch_bets() == 250);
    const auto pause = g.pause();
    now = drive(g, now, 30, 5ms);
    CHECK(g.batch_bets() == 250);
    CHECK(g.pause() == pause);
    drive(g, now, 10, 4ms);
    CHECK(g.pause() < pause);
    // A baseline that moves moves the budget, and the governor goes on from where it is.
    const auto batch = g.batch_bets();
    g.on_baseline(10ms);
    CHECK(g.budget() == 15ms);
    CHECK(g.batch_bets() == batch);
    CHECK_FALSE(g.slow_start());
}

TEST_CASE("settlement governor: with budgets in both units the smaller one holds") {
    auto s = budget_of(20ms);
    s.budget_percent = 200;
    governor g(s);
    CHECK(g.budget() == 20ms);  // no baseline yet: the one in milliseconds
    g.on_baseline(4ms);
    CHECK(g.budget() == 8ms);
    g.on_baseline(15ms);
    CHECK(g.budget() == 20ms);
    g.on_baseline(std::nullopt);
    CHECK(g.budget() == 20ms);
}

TEST_CASE("latency baseline: the p99 of the last span of quiet time with placements") {
    latency_window w;
    latency_baseline b(10s, 200, 10);  // slices of 1 s
    auto last = w.read();
    const auto period = [&](us latency, int placements, us length = 100ms) {
        for (int i = 0; i < placements; ++i) {
            w.record(latency);
        }
        const auto now = w.read();
        b.add_quiet(last, now, length);
        last = now;
    };
    // Under a slice: nothing yet, and then too few placements for a p99.
    period(2ms, 5, 900ms);
    CHECK_FALSE(b.p99().has_value());
    period(2ms, 5);
    CHECK(b.count() == 10);
    CHECK_FALSE(b.p99().has_value());
    // Ten seconds of 30 placements per 100 ms, under 1 % of them at 8 ms.
    for (int i = 0; i < 100; ++i) {
        period(i % 10 == 0 ? 8ms : 2ms, i % 10 == 0 ? 2 : 30);
    }
    REQUIRE(b.p99().has_value());
    CHECK(b.p99()->count() >= 2000);
    CHECK(b.p99()->count() <= 2100);
    // Periods without placements take no room in the span: an hour of them changes nothing.
    const auto before = *b.p99();
    for (int i = 0; i < 36'000; ++i) {
        period(2ms, 0);
    }
    CHECK(*b.p99() == before);
    // Ten seconds of slower placements push the older ones out whole.
    for (int i = 0; i < 100; ++i) {
        period(5ms, 30);
    }
    REQUIRE(b.p99().has_value());
    CHECK(b.p99()->count() >= 5000);
    CHECK(b.p99()->count() <= 5250);
    CHECK(b.count() <= 3100);
}

TEST_CASE("latency window: buckets are 5 % wide and a quantile reads a window") {
    for (std::int64_t v : {1, 10, 11, 999, 1000, 1001, 4321, 65'432, 2'000'000}) {
        const auto i = latency_window::bucket_of(us(v));
        CAPTURE(v);
        CHECK(v <= latency_window::upper_bound_us(i));
        if (i > 0) {
            CHECK(v > latency_window::upper_bound_us(i - 1));
            CHECK(latency_window::upper_bound_us(i) <=
                  latency_window::upper_bound_us(i - 1) * 106 / 100 + 1);
        }
    }
    CHECK(latency_window::bucket_of(100s) == latency_window::bucket_count - 1);

    latency_window w;
    for (int i = 0; i < 1000; ++i) {
        w.record(1ms);  // before the window
    }
    const auto before = w.read();
    for (int i = 1; i <= 100; ++i) {
        w.record(us(i * 100));  // 0.1 .. 10 ms
    }
    const auto after = w.read();
    std::uint64_t n = 0;
    const auto p99 = latency_window::quantile(before, after, 0.99, &n);
    CHECK(n == 100);
    REQUIRE(p99.has_value());
    CHECK(p99->count() >= 9900);
    CHECK(p99->count() <= 9900 * 105 / 100 + 1);
    const auto p50 = latency_window::quantile(before, after, 0.5);
    REQUIRE(p50.has_value());
    CHECK(p50->count() >= 5000);
    CHECK(p50->count() <= 5000 * 105 / 100 + 1);
    CHECK_FALSE(latency_window::quantile(after, after, 0.99).has_value());
}
