// One market actor: its market's events in seq order, one step at a time. See settlement.hpp
// for the shape.

#include "actors/settlement_market_actor.hpp"

#include "actors/io_handoff.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/limits.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <string>

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

// Runs on the io_context, in the slot the market holds: a step, run again at once after a lock
// timeout (at most limits::settlement_step_lock_retries_max times), so that a short lock wait
// costs neither the slot nor the backoff (each lock timeout is counted by run_step). With
// `back_to_back` (no pause asked between batches: full duty, no governor) the market then
// steps on while its event is under way (started, batch), without handing the slot back
// between steps: each hand-back and grant is a round of messages between threads during which
// the market's database backend sits idle. It keeps the slot until its event is applied, or
// for limits::settlement_slot_hold_ms once another market waits for a slot.
asio::awaitable<step_result> steps_in_slot(std::shared_ptr<settlement_worker> worker,
                                           std::int64_t market_id, bool back_to_back) {
    const auto held_since = std::chrono::steady_clock::now();
    const auto hold = std::chrono::milliseconds(limits::settlement_slot_hold_ms);
    step_result sum;
    for (;;) {
        auto r = co_await run_step(worker, market_id);
        for (std::size_t retry = 0;
             r.status == step_status::locked && retry < limits::settlement_step_lock_retries_max;
             ++retry) {
            r = co_await run_step(worker, market_id);
        }
        add_step(sum, std::move(r));
        const bool under_way =
            sum.status == step_status::started || sum.status == step_status::batch;
        if (!back_to_back || !under_way || worker->closed ||
            (worker->markets_waiting.load(std::memory_order_relaxed) > 0 &&
             std::chrono::steady_clock::now() - held_since >= hold)) {
            co_return sum;
        }
    }
}

void ask_slot(market_actor* self) { self->send(self->state.coordinator, slot_atom::value); }

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
            // Batches back to back only when nothing asks for a pause between them: full duty
            // and no governor (whose decisions come between batches).
            const bool back_to_back = st.settings.duty_percent >= 100 && !st.settings.pacing;
            run_on_io<stepped_atom>(
                self, st.settings.io,
                [worker = st.settings.worker, market = st.market_id, back_to_back] {
                    return steps_in_slot(worker, market, back_to_back);
                });
        },
        [self](stepped_atom, step_result& r) {
            auto& st = self->state;
            st.settings.metrics->batches_running.add(-1);
            self->send(st.coordinator, release_atom::value);
            count(*st.settings.metrics, r);
            switch (r.status) {
                case step_status::started:
                case step_status::batch:
                case step_status::finished:
                    st.failures = 0;
                    if (r.status == step_status::finished) {
                        log::info(
                            "settlement: market " + std::to_string(st.market_id) +
                            " applied event seq " + std::to_string(r.seq) + " (" + r.kind + ")" +
                            (r.refusal.empty() ? std::string()
                                               : "; refused: " + r.refusal + ", no money moved"));
                    }
                    if (r.status == step_status::batch) {
                        // Pacing: after a batch that took T, rest T * (100 - d) / d, so the
                        // market's batches use at most d % of a database backend's time and
                        // placements keep the rest of the machine; and, when the governor
                        // steers, at least the pause it decided (the coordinator hears of
                        // the batch for its cost per bet).
                        auto rest = std::chrono::duration_cast<std::chrono::microseconds>(
                            r.elapsed * (100 - st.settings.duty_percent) /
                            st.settings.duty_percent);
                        if (st.settings.pacing) {
                            self->send(st.coordinator, batched_atom::value, r.bets,
                                       static_cast<std::int64_t>(r.elapsed.count()));
                            rest = std::max(
                                rest, std::chrono::microseconds(st.settings.pacing->pause_us.load(
                                          std::memory_order_relaxed)));
                        }
                        if (rest.count() > 0) {
                            self->delayed_send(self, rest, retry_atom::value);
                            return;
                        }
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
