// One market actor: its market's events in seq order, one step at a time. See settlement.hpp
// for the shape.

#include "actors/settlement_market_actor.hpp"

#include "actors/io_handoff.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <caf/all.hpp>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

using stepped_atom = caf::atom_constant<caf::atom("st_step")>;
using retry_atom = caf::atom_constant<caf::atom("st_retry")>;

struct market_state {
    std::int64_t market_id = 0;
    caf::actor coordinator;
    settlement_actor_settings settings;
    std::uint64_t seen = 0;  ///< the coordinator's wake count this actor has seen
    bool busy = false;       ///< a step is asked for, running or scheduled
    int failures = 0;        ///< consecutive failed steps (backoff)
    static inline const char* name = "fulltime.settlement.market";
};

using market_actor = caf::stateful_actor<market_state>;

// Adds `next`, a step that followed the steps in `sum` (none at first), to them: its status,
// event and error replace theirs, its counts and times add up.
void add_step(step_result& sum, step_result next) {
    for (std::size_t i = 0; i < sum.steps.size(); ++i) {
        next.steps[i] += sum.steps[i];
    }
    next.bets += sum.bets;
    next.effects += sum.effects;
    next.elapsed += sum.elapsed;
    sum = std::move(next);
}

// Counts one step (after its lock-timeout retries) in /metrics, as it ends: a market may step
// for seconds in its slot, and its counters move meanwhile.
void count(settlement_metrics& mm, const step_result& r) {
    const auto steps = [&r](step_status s) { return r.steps[static_cast<std::size_t>(s)]; };
    mm.steps_batch.inc(steps(step_status::batch));
    mm.steps_started.inc(steps(step_status::started));
    mm.steps_finished.inc(steps(step_status::finished));
    mm.steps_fenced.inc(steps(step_status::fenced));
    mm.steps_failed.inc(steps(step_status::locked) + steps(step_status::failed));
    mm.bets.inc(static_cast<std::uint64_t>(std::max<std::int64_t>(r.bets, 0)));
    mm.effects.inc(static_cast<std::uint64_t>(std::max<std::int64_t>(r.effects, 0)));
    for (const auto& [code, n] : r.skipped) {
        if (auto it = mm.bet_refusals.find(code); it != mm.bet_refusals.end() && n > 0) {
            it->second->inc(static_cast<std::uint64_t>(n));
        }
    }
    if (!r.refusal.empty()) {
        if (auto it = mm.event_refusals.find(r.refusal); it != mm.event_refusals.end()) {
            it->second->inc();
        }
    }
}

// Returns the rest the pacing asks after a batch that took `elapsed`: its time * (100 - d) / d,
// so that the market's batches use at most d % of a database backend's time and placements keep
// the rest of the machine; and, when the governor steers, at least the pause it decided (read
// afresh after every batch, as the step reads its batch size).
std::chrono::microseconds rest_after(const settlement_worker& worker,
                                     std::chrono::microseconds elapsed, int duty_percent) {
    auto rest = elapsed * (100 - duty_percent) / duty_percent;
    if (worker.pacing) {
        rest = std::max(rest, std::chrono::microseconds(
                                  worker.pacing->pause_us.load(std::memory_order_relaxed)));
    }
    return rest;
}

// Waits `rest` on the io_context, in slices of at most limits::settlement_rest_slice_ms, so that
// a stop is seen within a slice (a pending timer keeps the event loop, and so the process, alive
// after a drain).
asio::awaitable<void> rest_in_slot(const settlement_worker& worker,
                                   std::chrono::microseconds rest) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto until = std::chrono::steady_clock::now() + rest;
    const auto slice = std::chrono::milliseconds(limits::settlement_rest_slice_ms);
    while (!worker.closed && std::chrono::steady_clock::now() < until) {
        timer.expires_at(std::min(until, std::chrono::steady_clock::now() + slice));
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

// Returns whether a market that took its slot at `held_since` hands it back now: another market
// waits for a slot, and it held this one for limits::settlement_slot_hold_ms.
bool slot_wanted(const settlement_worker& worker,
                 std::chrono::steady_clock::time_point held_since) {
    return worker.markets_waiting.load(std::memory_order_relaxed) > 0 &&
           std::chrono::steady_clock::now() - held_since >=
               std::chrono::milliseconds(limits::settlement_slot_hold_ms);
}

// Runs a step of the market (lane < 0) or a batch of its lane `lane`. (Not one conditional
// expression of the two co_awaits: GCC 12 destroyed its result twice.)
asio::awaitable<step_result> step_or_lane(std::shared_ptr<settlement_worker> worker,
                                          std::int64_t market_id, std::int64_t lane) {
    if (lane < 0) {
        co_return co_await run_step(std::move(worker), market_id);
    }
    co_return co_await run_lane(std::move(worker), market_id, lane);
}

// Runs a step of the market (lane < 0) or a batch of its lane `lane`, again at once after a lock
// timeout, at most limits::settlement_step_lock_retries_max times, so that a short lock wait
// costs neither the slot nor the backoff (each lock timeout is counted by run_step), and counts
// it in /metrics. After a batch it tells the coordinator (the governor's cost per bet) and
// returns the rest the pacing asks before the next one (rest_after) in `rest`.
asio::awaitable<step_result> step_counted(std::shared_ptr<settlement_worker> worker,
                                          std::int64_t market_id, std::int64_t lane,
                                          int duty_percent, caf::actor coordinator) {
    auto r = co_await step_or_lane(worker, market_id, lane);
    for (std::size_t retry = 0;
         r.status == step_status::locked && retry < limits::settlement_step_lock_retries_max;
         ++retry) {
        r = co_await step_or_lane(worker, market_id, lane);
    }
    count(*worker->metrics, r);
    if (r.status == step_status::batch) {
        if (worker->pacing) {
            caf::anon_send(coordinator, batched_atom::value, r.bets,
                           static_cast<std::int64_t>(r.elapsed.count()));
        }
        r.rest = rest_after(*worker, r.elapsed, duty_percent);
    }
    co_return r;
}

// Runs lane `lane` of the market's event batch after batch, resting between them as the pacing
// asks, until the lane is done (finished), has nothing to settle (idle), fails, the service
// stops, or the slot is wanted (then it ends on batch and the market steps on later).
asio::awaitable<step_result> lane_steps(std::shared_ptr<settlement_worker> worker,
                                        std::int64_t market_id, std::int64_t lane, int duty_percent,
                                        caf::actor coordinator,
                                        std::chrono::steady_clock::time_point held_since) {
    step_result sum;
    for (;;) {
        auto r = co_await step_counted(worker, market_id, lane, duty_percent, coordinator);
        const auto rest = r.rest;
        add_step(sum, std::move(r));
        if (sum.status != step_status::batch || worker->closed ||
            slot_wanted(*worker, held_since)) {
            co_return sum;
        }
        if (rest.count() > 0) {
            co_await rest_in_slot(*worker, rest);
        }
    }
}

// Runs lanes [first, lanes) side by side, each on a connection of its own; returns their sums.
asio::awaitable<std::vector<step_result>> lanes_from(
    std::shared_ptr<settlement_worker> worker, std::int64_t market_id, std::int64_t first,
    std::int64_t lanes, int duty_percent, caf::actor coordinator,
    std::chrono::steady_clock::time_point held_since) {
    using namespace asio::experimental::awaitable_operators;
    if (first + 1 >= lanes) {
        std::vector<step_result> out;
        out.push_back(
            co_await lane_steps(worker, market_id, first, duty_percent, coordinator, held_since));
        co_return out;
    }
    auto both = co_await (
        lane_steps(worker, market_id, first, duty_percent, coordinator, held_since) &&
        lanes_from(worker, market_id, first + 1, lanes, duty_percent, coordinator, held_since));
    auto out = std::move(std::get<1>(both));
    out.push_back(std::move(std::get<0>(both)));
    co_return out;
}

// Runs the market's lanes until each is done or stops (lane_steps), and sums them up as one
// result: failed (or locked) when a lane was, with its error; failed when a lane had nothing to
// settle, which the step that answered `lanes` rules out (so that it cannot spin); else batch,
// and the market's next step finishes the event or answers `lanes` again.
asio::awaitable<step_result> run_lanes(std::shared_ptr<settlement_worker> worker,
                                       std::int64_t market_id, std::int64_t lanes, int duty_percent,
                                       caf::actor coordinator,
                                       std::chrono::steady_clock::time_point held_since) {
    auto each =
        co_await lanes_from(worker, market_id, 0, lanes, duty_percent, coordinator, held_since);
    step_result sum;
    step_status status = step_status::batch;
    std::string error;
    for (auto& r : each) {
        if (r.status == step_status::idle && error.empty()) {
            status = step_status::failed;
            error = "a lane of market " + std::to_string(market_id) + " found nothing to settle";
        } else if ((r.status == step_status::failed || r.status == step_status::locked) &&
                   status != step_status::failed) {
            status = r.status;
            error = r.error;
        }
        add_step(sum, std::move(r));
    }
    sum.status = status;
    sum.error = std::move(error);
    co_return sum;
}

// Runs on the io_context, in the slot the market holds: a step (step_counted). While its event
// is under way (started, batch) the market then steps on without handing the slot back between
// steps: each hand-back and grant is a round of messages between threads (the step's result to
// the actor, the release and the request to the coordinator, the grant, the next step to the
// io_context) during which the market's database backend sits idle, about 4 ms a batch on a
// busy machine (docs/decisions/0014-market-keeps-its-slot.md). Between two batches it rests here
// as the pacing asks. An event settled in lanes (the step answered `lanes`) runs its lanes side
// by side here (run_lanes), then steps on to finish it. It keeps the slot until its event is
// applied, or for limits::settlement_slot_hold_ms once another market waits for a slot; the rest
// still owed after its last batch goes back with the result, for the actor to wait before it
// asks again.
asio::awaitable<step_result> steps_in_slot(std::shared_ptr<settlement_worker> worker,
                                           std::int64_t market_id, int duty_percent,
                                           caf::actor coordinator) {
    const auto held_since = std::chrono::steady_clock::now();
    step_result sum;
    for (;;) {
        auto r = co_await step_counted(worker, market_id, -1, duty_percent, coordinator);
        if (r.status == step_status::lanes) {
            add_step(sum, std::move(r));
            r = co_await run_lanes(worker, market_id, sum.lanes, duty_percent, coordinator,
                                   held_since);
        }
        const auto rest = r.rest;
        add_step(sum, std::move(r));
        const bool under_way =
            sum.status == step_status::started || sum.status == step_status::batch;
        if (!under_way || worker->closed || slot_wanted(*worker, held_since)) {
            sum.rest = rest;
            co_return sum;
        }
        if (rest.count() > 0) {
            co_await rest_in_slot(*worker, rest);
        }
    }
}

void ask_slot(market_actor* self) { self->send(self->state.coordinator, slot_atom::value); }

// Returns the pause before the next attempt after `failures` failed steps in a row: the retry
// delay doubled per failure, at most limits::settlement_backoff_doublings_max times and at most
// limits::settlement_backoff_ms_max.
std::chrono::milliseconds failure_backoff(std::chrono::milliseconds retry_delay, int failures) {
    const int doublings =
        std::min(failures, static_cast<int>(limits::settlement_backoff_doublings_max));
    return std::min<std::chrono::milliseconds>(
        retry_delay * (1 << doublings),
        std::chrono::milliseconds(limits::settlement_backoff_ms_max));
}

caf::behavior market_behavior(market_actor* self, std::int64_t market_id, caf::actor coordinator,
                              settlement_actor_settings settings) {
    self->state.market_id = market_id;
    self->state.coordinator = std::move(coordinator);
    self->state.settings = std::move(settings);
    self->state.settings.metrics->markets_active.add(1);
    self->attach_functor([m = self->state.settings.metrics] { m->markets_active.add(-1); });
    return {
        [self](wake_atom, std::uint64_t n) {
            auto& st = self->state;
            st.seen = std::max(st.seen, n);
            if (!st.busy) {
                st.busy = true;
                ask_slot(self);
            }
        },
        [self](granted_atom) {
            auto& st = self->state;
            st.settings.metrics->batches_running.add(1);
            run_on_io<stepped_atom>(
                self, st.settings.io,
                [worker = st.settings.worker, market = st.market_id,
                 duty = st.settings.duty_percent, coordinator = st.coordinator] {
                    return steps_in_slot(worker, market, duty, coordinator);
                });
        },
        [self](stepped_atom, step_result& r) {
            auto& st = self->state;
            st.settings.metrics->batches_running.add(-1);
            self->send(st.coordinator, release_atom::value);
            switch (r.status) {
                case step_status::started:
                case step_status::batch:
                case step_status::lanes:  // (steps_in_slot runs the lanes: not seen here)
                case step_status::finished:
                    st.failures = 0;
                    if (r.status == step_status::finished) {
                        log::info(
                            "settlement: market " + std::to_string(st.market_id) +
                            " applied event seq " + std::to_string(r.seq) + " (" + r.kind + ")" +
                            (r.refusal.empty() ? std::string()
                                               : "; refused: " + r.refusal + ", no money moved"));
                    }
                    if (r.status == step_status::batch && r.rest.count() > 0) {
                        // The pacing's rest after the slot's last batch (steps_in_slot).
                        self->delayed_send(self, r.rest, retry_atom::value);
                        return;
                    }
                    ask_slot(self);
                    return;
                case step_status::fenced:
                    self->delayed_send(self, st.settings.retry_delay, retry_atom::value);
                    return;
                case step_status::locked:
                case step_status::failed: {
                    ++st.failures;
                    const auto delay = failure_backoff(st.settings.retry_delay, st.failures);
                    const std::string what = "settlement: market " + std::to_string(st.market_id) +
                                             " step failed (" + r.error + "); retrying in " +
                                             std::to_string(delay.count()) + " ms";
                    if (r.status == step_status::locked) {
                        log::warn(what);
                    } else {
                        log::error(what);
                    }
                    self->delayed_send(self, delay, retry_atom::value);
                    return;
                }
                case step_status::idle:
                case step_status::gap:
                    st.busy = false;
                    st.failures = 0;
                    self->send(st.coordinator, idle_atom::value, st.market_id, st.seen);
                    return;
            }
        },
        [self](retry_atom) { ask_slot(self); },
    };
}

}  // namespace

caf::actor spawn_market_actor(caf::event_based_actor* coordinator, std::int64_t market_id,
                              const settlement_actor_settings& settings) {
    return coordinator->spawn(market_behavior, market_id, caf::actor_cast<caf::actor>(coordinator),
                              settings);
}

}  // namespace fulltime::actors::detail
