// The settlement coordinator: the market actors, the step slots, the periodic scan. See
// settlement.hpp for the shape.

#include "actors/settlement_coordinator.hpp"

#include "actors/io_handoff.hpp"
#include "actors/settlement_market_actor.hpp"
#include "fulltime/core/latency_baseline.hpp"
#include "fulltime/core/latency_window.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/settlement_governor.hpp"
#include "fulltime/limits.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <optional>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

using tick_atom = caf::atom_constant<caf::atom("st_tick")>;
using scanned_atom = caf::atom_constant<caf::atom("st_scan")>;
using govern_atom = caf::atom_constant<caf::atom("st_govern")>;

/// Holds one reading of the placement latency and of the bets settled, for the sliding window.
struct reading {
    std::chrono::steady_clock::time_point at;
    metrics::latency_window::snapshot placement;
    std::uint64_t settled = 0;
};

struct market_entry {
    caf::actor actor;
    std::uint64_t wakes = 0;
};

struct coordinator_state {
    settlement_actor_settings settings;
    std::map<std::int64_t, market_entry> markets;
    std::size_t slots_free = 0;
    std::deque<caf::actor> waiting;  ///< market actors waiting for a slot, FIFO
    bool scanning = false;
    std::optional<settlement::governor> governor;  ///< when this process places bets
    std::deque<reading> readings;                  ///< the last window's, oldest first
    /// The placement p99 with nothing settling, for a budget in percent.
    std::optional<metrics::latency_baseline> baseline;
    /// When settlement last ran: a step in a slot, or the bets counter moved since the previous
    /// period.
    std::chrono::steady_clock::time_point settled_moved_at{};
    static inline const char* name = "fulltime.settlement";
};

using coordinator_actor = caf::stateful_actor<coordinator_state>;

// Tells the steps how many markets wait for a slot: a market holding one hands it back between
// batches only when some do (steps_in_slot).
void publish_waiting(coordinator_state& st) {
    st.settings.worker->markets_waiting.store(static_cast<std::int64_t>(st.waiting.size()),
                                              std::memory_order_relaxed);
}

void wake(coordinator_actor* self, std::int64_t market_id) {
    auto& st = self->state;
    auto it = st.markets.find(market_id);
    if (it == st.markets.end()) {
        auto actor = spawn_market_actor(self, market_id, st.settings);
        it = st.markets.emplace(market_id, market_entry{std::move(actor), 0}).first;
    }
    ++it->second.wakes;
    self->send(it->second.actor, wake_atom::value, it->second.wakes);
}

// One control period of the governor: the placement p99 and the bets settled over the last
// window (from the oldest reading at least a window old), its decision published to the steps
// (pacing) and to /metrics.
void govern(coordinator_actor* self) {
    auto& st = self->state;
    auto& g = *st.governor;
    auto& m = *st.settings.metrics;
    const auto now = std::chrono::steady_clock::now();
    reading current{now, st.settings.placement_latency->read(), m.bets.value()};
    const auto window =
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(g.settings().window);
    while (st.readings.size() > 1 && now - st.readings[1].at >= window) {
        st.readings.pop_front();
    }
    std::optional<std::chrono::microseconds> p99;
    std::int64_t settled_per_s = 0;
    if (!st.readings.empty()) {
        const auto& oldest = st.readings.front();
        p99 = metrics::latency_window::quantile(oldest.placement, current.placement, 0.99);
        const auto span = std::chrono::duration<double>(now - oldest.at).count();
        if (span > 0) {
            settled_per_s = static_cast<std::int64_t>(
                static_cast<double>(current.settled - oldest.settled) / span);
        }
    }
    // The baseline takes the placements of periods that ran with settlement quiet: no step
    // holding a slot, and no bet settled for settlement_baseline_quiet_ms. The previous period's
    // reading is the newest of the window's (the window keeps at least one).
    if (!st.readings.empty()) {
        const auto& previous = st.readings.back();
        if (current.settled != previous.settled || m.batches_running.value() != 0) {
            st.settled_moved_at = now;
        } else if (st.baseline &&
                   now - st.settled_moved_at >=
                       std::chrono::milliseconds(limits::settlement_baseline_quiet_ms)) {
            st.baseline->add_quiet(
                previous.placement, current.placement,
                std::chrono::duration_cast<std::chrono::microseconds>(now - previous.at));
        }
    }
    if (st.baseline) {
        g.on_baseline(st.baseline->p99());
        m.governor_baseline_p99_us.set(st.baseline->p99() ? st.baseline->p99()->count()
                                                          : settlement_metrics::no_placement_p99);
    }
    st.readings.push_back(std::move(current));
    g.on_period(p99, std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()));
    if (st.settings.pacing) {
        st.settings.pacing->batch_bets.store(g.batch_bets(), std::memory_order_relaxed);
        st.settings.pacing->pause_us.store(g.pause().count(), std::memory_order_relaxed);
    }
    m.governor_placement_p99_us.set(p99 ? p99->count() : settlement_metrics::no_placement_p99);
    m.governor_budget_us.set(g.budget().count());
    m.governor_batch_bets.set(g.batch_bets());
    m.governor_pause_us.set(g.pause().count());
    m.governor_settled_bets_per_s.set(settled_per_s);
    m.governor_floored.set(g.floored() ? 1 : 0);
    m.governor_slow_start.set(g.slow_start() ? 1 : 0);
}

void start_scan(coordinator_actor* self) {
    auto& st = self->state;
    if (st.scanning) {
        return;
    }
    st.scanning = true;
    run_on_io<scanned_atom>(self, st.settings.io,
                            [worker = st.settings.worker] { return scan_backlog(worker); });
}

// Sets the governor's gauges to their starting values, and starts the governor when this
// process places bets.
void start_governor(coordinator_actor* self) {
    auto& m = *self->state.settings.metrics;
    m.governor_batch_bets.set(self->state.settings.governor.batch_max);
    m.governor_placement_p99_us.set(settlement_metrics::no_placement_p99);
    m.governor_baseline_p99_us.set(settlement_metrics::no_placement_p99);
    // The governor measures whenever this process places bets (its placement p99 and settled
    // rate are in /metrics either way) and steers only when a budget is set (the service then
    // made the pacing its decisions go to).
    if (self->state.settings.placement_latency != nullptr) {
        const auto& g = self->state.settings.governor;
        self->state.governor.emplace(g);
        m.governor_budget_us.set(self->state.governor->budget().count());
        // The baseline is measured whenever it can be, so /metrics shows it before anyone sets
        // a budget in percent.
        self->state.baseline.emplace(std::chrono::duration_cast<std::chrono::microseconds>(
                                         self->state.settings.baseline_span),
                                     limits::settlement_baseline_placements_min);
        // Nor do the first seconds of the process count as quiet: a backlog may be about to run.
        self->state.settled_moved_at = std::chrono::steady_clock::now();
        self->send(self, govern_atom::value);
    }
}

// A market actor asks for a settlement slot: granted now, or queued until one is released.
void grant_slot(coordinator_actor* self) {
    auto& st = self->state;
    auto asker = caf::actor_cast<caf::actor>(self->current_sender());
    if (!asker) {
        return;
    }
    if (st.slots_free > 0) {
        --st.slots_free;
        self->send(asker, granted_atom::value);
    } else {
        st.waiting.push_back(std::move(asker));
        publish_waiting(st);
    }
}

// A slot comes back: it goes to the longest waiting actor, else back to the free ones.
void release_slot(coordinator_actor* self) {
    auto& st = self->state;
    if (!st.waiting.empty()) {
        auto next = std::move(st.waiting.front());
        st.waiting.pop_front();
        publish_waiting(st);
        self->send(next, granted_atom::value);
    } else {
        ++st.slots_free;
    }
}

// A market actor found nothing to do: it retires unless it was woken since it last looked.
void on_idle(coordinator_actor* self, std::int64_t market_id, std::uint64_t seen) {
    auto& st = self->state;
    auto it = st.markets.find(market_id);
    if (it == st.markets.end()) {
        return;
    }
    if (it->second.wakes == seen) {
        // Nothing arrived since the actor last looked: it retires. (An exit with reason
        // `normal` would be ignored by the actor.)
        self->send_exit(it->second.actor, caf::exit_reason::user_shutdown);
        st.markets.erase(it);
    } else {
        self->send(it->second.actor, wake_atom::value, it->second.wakes);
    }
}

// The backlog scan's answer: its gauges, a wake for each backlogged market without a working
// actor, and the next scan.
void on_scanned(coordinator_actor* self, const backlog& b) {
    auto& st = self->state;
    st.scanning = false;
    if (b.ok) {
        st.settings.metrics->backlog_events.set(b.events);
        st.settings.metrics->backlog_markets.set(static_cast<std::int64_t>(b.markets.size()));
        st.settings.metrics->backlog_age_ms.set(b.oldest_age_ms);
        for (auto market_id : b.markets) {
            // A market whose actor is working needs no wake: it will find the event.
            if (st.markets.find(market_id) == st.markets.end()) {
                wake(self, market_id);
            }
        }
    }
    self->delayed_send(self, st.settings.poll_interval, tick_atom::value);
}

caf::behavior coordinator_behavior(coordinator_actor* self, settlement_actor_settings settings,
                                   std::size_t slots) {
    self->state.settings = std::move(settings);
    self->state.slots_free = slots;
    start_governor(self);
    self->set_exit_handler([self](caf::exit_msg& msg) {
        for (auto& [id, entry] : self->state.markets) {
            self->send_exit(entry.actor, msg.reason);
        }
        self->state.markets.clear();
        self->quit(msg.reason);
    });
    start_scan(self);
    return {
        [self](wake_atom, std::int64_t market_id) { wake(self, market_id); },
        [self](slot_atom) { grant_slot(self); },
        [self](release_atom) { release_slot(self); },
        [self](idle_atom, std::int64_t market_id, std::uint64_t seen) {
            on_idle(self, market_id, seen);
        },
        [self](tick_atom) { start_scan(self); },
        [self](govern_atom) {
            govern(self);
            self->delayed_send(self,
                               std::chrono::milliseconds(limits::settlement_governor_period_ms),
                               govern_atom::value);
        },
        [self](batched_atom, std::int64_t bets, std::int64_t elapsed_us) {
            if (self->state.governor && self->state.settings.pacing) {
                self->state.governor->on_batch(bets, std::chrono::microseconds(elapsed_us));
                self->state.settings.pacing->pause_us.store(self->state.governor->pause().count(),
                                                            std::memory_order_relaxed);
            }
        },
        [self](scanned_atom, backlog& b) { on_scanned(self, b); },
    };
}

}  // namespace

caf::actor spawn_settlement_coordinator(caf::actor_system& system,
                                        settlement_actor_settings settings, std::size_t slots) {
    return system.spawn(coordinator_behavior, std::move(settings), slots);
}

}  // namespace fulltime::actors::detail
