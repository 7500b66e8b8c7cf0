// The settlement actors: coordinator, market actors and batch actors. See settlement.hpp for
// the shape and the threading model.

#include "actors/settlement_detail.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include <caf/all.hpp>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <vector>

// Settlement messages never leave the process: no serialization needed.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::detail::step_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::detail::backlog)

namespace fulltime::actors {

namespace asio = boost::asio;
using detail::step_result;
using detail::step_status;

namespace {

using wake_atom = caf::atom_constant<caf::atom("st_wake")>;
using slot_atom = caf::atom_constant<caf::atom("st_slot")>;
using granted_atom = caf::atom_constant<caf::atom("st_grant")>;
using release_atom = caf::atom_constant<caf::atom("st_free")>;
using idle_atom = caf::atom_constant<caf::atom("st_idle")>;
using stepped_atom = caf::atom_constant<caf::atom("st_step")>;
using retry_atom = caf::atom_constant<caf::atom("st_retry")>;
using tick_atom = caf::atom_constant<caf::atom("st_tick")>;
using scanned_atom = caf::atom_constant<caf::atom("st_scan")>;

// Lock timeouts a batch actor retries within its slot before it gives the slot back.
constexpr int batch_lock_retries_max = 3;
// Longest pause between retries of a market whose steps keep failing.
constexpr std::chrono::milliseconds failure_backoff_max{5000};

struct shared_settings {
    std::shared_ptr<detail::settlement_worker> worker;
    asio::any_io_executor io;
    std::chrono::milliseconds retry_delay{0};
    std::chrono::milliseconds poll_interval{0};
    int duty_percent = 100;  ///< share of time a market's steps may run back to back
    settlement_metrics* metrics = nullptr;
};

// --- Batch actor: one step, with its lock-timeout retries --------------------------------------

void post_step(caf::event_based_actor* self, const shared_settings& s, std::int64_t market_id) {
    asio::post(s.io, [worker = s.worker, io = s.io, market_id,
                      reply_to = caf::actor_cast<caf::actor>(self)]() mutable {
        asio::co_spawn(
            io,
            [](std::shared_ptr<detail::settlement_worker> w, std::int64_t market,
               caf::actor to) -> asio::awaitable<void> {
                auto r = co_await detail::run_step(std::move(w), market);
                caf::anon_send(to, stepped_atom::value, std::move(r));
            }(std::move(worker), market_id, std::move(reply_to)),
            asio::detached);
    });
}

caf::behavior batch_behavior(caf::event_based_actor* self, shared_settings s,
                             std::int64_t market_id, caf::actor market) {
    auto attempts = std::make_shared<int>(0);
    post_step(self, s, market_id);
    return {
        [self, s, market_id, market, attempts](stepped_atom, step_result& r) {
            if (r.status == step_status::locked && ++*attempts <= batch_lock_retries_max) {
                post_step(self, s, market_id);
                return;
            }
            self->send(market, stepped_atom::value, std::move(r));
            self->quit();
        },
    };
}

// --- Market actor: the market's events in seq order, one step at a time ------------------------

struct market_state {
    std::int64_t market_id = 0;
    caf::actor coordinator;
    shared_settings settings;
    std::uint64_t seen = 0;  ///< the coordinator's wake count this actor has seen
    bool busy = false;       ///< a step is asked for, running or scheduled
    int failures = 0;        ///< consecutive failed steps (backoff)
    static inline const char* name = "fulltime.settlement.market";
};

using market_actor = caf::stateful_actor<market_state>;

void ask_slot(market_actor* self) { self->send(self->state.coordinator, slot_atom::value); }

void count(settlement_metrics& mm, const step_result& r) {
    switch (r.status) {
        case step_status::batch:
            mm.steps_batch.inc();
            break;
        case step_status::started:
            mm.steps_started.inc();
            break;
        case step_status::finished:
            mm.steps_finished.inc();
            break;
        case step_status::fenced:
            mm.steps_fenced.inc();
            break;
        case step_status::locked:
        case step_status::failed:
            mm.steps_failed.inc();
            break;
        case step_status::idle:
        case step_status::gap:
            break;
    }
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

caf::behavior market_behavior(market_actor* self, std::int64_t market_id, caf::actor coordinator,
                              shared_settings settings) {
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
            self->spawn(batch_behavior, st.settings, st.market_id,
                        caf::actor_cast<caf::actor>(self));
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
                        log::info("settlement: market " + std::to_string(st.market_id) +
                                  " applied event seq " + std::to_string(r.seq) + " (" + r.kind +
                                  ")" +
                                  (r.refusal.empty() ? std::string()
                                                     : "; refused: " + r.refusal +
                                                           ", no money moved"));
                    }
                    if (r.status == step_status::batch && st.settings.duty_percent < 100) {
                        // Pacing: after a batch that took T, rest T * (100 - d) / d, so the
                        // market's batches use at most d % of a database backend's time and
                        // placements keep the rest of the machine.
                        const auto rest = std::chrono::duration_cast<std::chrono::milliseconds>(
                            r.elapsed * (100 - st.settings.duty_percent) /
                            st.settings.duty_percent);
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
                    const auto delay = std::min<std::chrono::milliseconds>(
                        st.settings.retry_delay * (1 << std::min(st.failures, 7)),
                        failure_backoff_max);
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

// --- Coordinator: market actors, batch slots, the periodic scan ---------------------------------

struct market_entry {
    caf::actor actor;
    std::uint64_t wakes = 0;
};

struct coordinator_state {
    shared_settings settings;
    std::map<std::int64_t, market_entry> markets;
    std::size_t slots_free = 0;
    std::deque<caf::actor> waiting;  ///< market actors waiting for a slot, FIFO
    bool scanning = false;
    static inline const char* name = "fulltime.settlement";
};

using coordinator_actor = caf::stateful_actor<coordinator_state>;

void wake(coordinator_actor* self, std::int64_t market_id) {
    auto& st = self->state;
    auto it = st.markets.find(market_id);
    if (it == st.markets.end()) {
        auto actor =
            self->spawn(market_behavior, market_id, caf::actor_cast<caf::actor>(self), st.settings);
        it = st.markets.emplace(market_id, market_entry{std::move(actor), 0}).first;
    }
    ++it->second.wakes;
    self->send(it->second.actor, wake_atom::value, it->second.wakes);
}

void start_scan(coordinator_actor* self) {
    auto& st = self->state;
    if (st.scanning) {
        return;
    }
    st.scanning = true;
    asio::post(st.settings.io, [worker = st.settings.worker, io = st.settings.io,
                                reply_to = caf::actor_cast<caf::actor>(self)]() mutable {
        asio::co_spawn(
            io,
            [](std::shared_ptr<detail::settlement_worker> w,
               caf::actor to) -> asio::awaitable<void> {
                auto b = co_await detail::scan_backlog(std::move(w));
                caf::anon_send(to, scanned_atom::value, std::move(b));
            }(std::move(worker), std::move(reply_to)),
            asio::detached);
    });
}

caf::behavior coordinator_behavior(coordinator_actor* self, shared_settings settings,
                                   std::size_t slots) {
    self->state.settings = std::move(settings);
    self->state.slots_free = slots;
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
        [self](slot_atom) {
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
            }
        },
        [self](release_atom) {
            auto& st = self->state;
            if (!st.waiting.empty()) {
                auto next = std::move(st.waiting.front());
                st.waiting.pop_front();
                self->send(next, granted_atom::value);
            } else {
                ++st.slots_free;
            }
        },
        [self](idle_atom, std::int64_t market_id, std::uint64_t seen) {
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
        },
        [self](tick_atom) { start_scan(self); },
        [self](scanned_atom, detail::backlog& b) {
            auto& st = self->state;
            st.scanning = false;
            if (b.ok) {
                st.settings.metrics->backlog_events.set(b.events);
                st.settings.metrics->backlog_markets.set(
                    static_cast<std::int64_t>(b.markets.size()));
                st.settings.metrics->backlog_age_ms.set(b.oldest_age_ms);
                for (auto market_id : b.markets) {
                    // A market whose actor is working needs no wake: it will find the event.
                    if (st.markets.find(market_id) == st.markets.end()) {
                        wake(self, market_id);
                    }
                }
            }
            self->delayed_send(self, st.settings.poll_interval, tick_atom::value);
        },
    };
}

}  // namespace

// --- Metrics ---------------------------------------------------------------------------------

namespace {
constexpr const char* steps_name = "fulltime_settlement_steps_total";
constexpr const char* steps_help = "Settlement steps (one transaction each), by status.";
// The terminal-state codes of db/migrations/0008_terminal_states.sql.
constexpr std::array<const char*, 5> bet_refusal_codes = {
    "bet_cancelled", "already_cancelled", "nothing_to_rollback", "already_void",
    "already_settled"};
constexpr std::array<const char*, 4> event_refusal_codes = {
    "bet_cancelled", "already_cancelled", "nothing_to_rollback", "nothing_to_void"};
}  // namespace

settlement_metrics::settlement_metrics(metrics::registry& registry)
    : steps_batch(registry.make_counter(steps_name, steps_help, R"(status="batch")")),
      steps_started(registry.make_counter(steps_name, steps_help, R"(status="started")")),
      steps_finished(registry.make_counter(steps_name, steps_help, R"(status="finished")")),
      steps_fenced(registry.make_counter(steps_name, steps_help, R"(status="fenced")")),
      steps_failed(registry.make_counter(steps_name, steps_help, R"(status="failed")")),
      bets(registry.make_counter("fulltime_settlement_bets_total",
                                 "Bets looked at by settlement batches.")),
      effects(registry.make_counter(
          "fulltime_settlement_effects_total",
          "Settlement rows written: settlements, cancels and their reversals.")),
      lock_timeouts(registry.make_counter(
          "fulltime_settlement_lock_timeouts_total",
          "Settlement steps that hit their lock_timeout (SQLSTATE 55P03); each is retried.")),
      markets_active(registry.make_gauge("fulltime_settlement_markets_active",
                                         "Market actors alive (markets being settled).")),
      batches_running(registry.make_gauge("fulltime_settlement_batches_running",
                                          "Settlement steps holding a slot right now.")),
      backlog_events(
          registry.make_gauge("fulltime_settlement_backlog_events",
                              "Result events stored but not yet applied, at the last scan.")),
      backlog_markets(
          registry.make_gauge("fulltime_settlement_backlog_markets",
                              "Markets with result events not yet applied, at the last scan.")),
      backlog_age_ms(registry.make_gauge(
          "fulltime_settlement_backlog_age_milliseconds",
          "Age of the oldest result event not yet applied, at the last scan (0: none).")) {
    registry.add_collector([this](std::string& out) {
        step_latency.render(out, "fulltime_settlement_step_latency_seconds",
                            "Time of one settlement step's transaction.");
    });
    for (const char* code : bet_refusal_codes) {
        bet_refusals[code] = &registry.make_counter(
            "fulltime_settlement_refusals_total",
            "Bets an applied result event skipped because of their terminal state (no money "
            "moved), by code.",
            metrics::label("code", code));
    }
    for (const char* code : event_refusal_codes) {
        event_refusals[code] = &registry.make_counter(
            "fulltime_settlement_events_refused_total",
            "Result events that moved no money at all because of the bets' terminal states, by "
            "code.",
            metrics::label("code", code));
    }
}

// --- Service ---------------------------------------------------------------------------------

struct settlement_service::impl {
    caf::actor coordinator;
    std::shared_ptr<detail::settlement_worker> worker;
    bool stopped = false;
};

settlement_service::settlement_service(caf::actor_system& system, asio::any_io_executor io,
                                       db::pool& settlement, db::pool& background,
                                       const config& cfg, settlement_metrics& metrics)
    : impl_(std::make_shared<impl>()) {
    FULLTIME_ASSERT(cfg.settlement.batches_in_flight > 0);
    auto w = std::make_shared<detail::settlement_worker>();
    w->settlement = &settlement;
    w->background = &background;
    w->batch_size = static_cast<std::int64_t>(cfg.settlement.batch_size);
    w->lock_timeout_ms = cfg.settlement.lock_timeout_ms;
    w->query_timeout = std::chrono::milliseconds(cfg.database.query_timeout_ms);
    w->metrics = &metrics;
    impl_->worker = w;
    shared_settings s;
    s.worker = w;
    s.io = std::move(io);
    s.retry_delay = std::chrono::milliseconds(cfg.settlement.retry_delay_ms);
    s.poll_interval = std::chrono::milliseconds(cfg.settlement.poll_interval_ms);
    s.duty_percent = static_cast<int>(cfg.settlement.duty_percent);
    s.metrics = &metrics;
    impl_->coordinator =
        system.spawn(coordinator_behavior, std::move(s), cfg.settlement.batches_in_flight);
}

settlement_service::~settlement_service() {
    if (!impl_->stopped) {
        caf::anon_send_exit(impl_->coordinator, caf::exit_reason::user_shutdown);
    }
}

void settlement_service::notify(std::int64_t market_id) {
    if (!impl_->stopped) {
        caf::anon_send(impl_->coordinator, wake_atom::value, market_id);
    }
}

void settlement_service::stop() {
    if (impl_->stopped) {
        return;
    }
    impl_->stopped = true;
    impl_->worker->closed = true;
    caf::anon_send_exit(impl_->coordinator, caf::exit_reason::user_shutdown);
}

}  // namespace fulltime::actors
