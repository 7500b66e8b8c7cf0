// The reconciliation actor and the service that owns it. See reconciliation.hpp for the shape
// and the threading model: the actor holds the schedule and the waiting requests; every run is
// a coroutine on the io_context, whose result comes back to the actor as a message.

#include "actors/io_handoff.hpp"
#include "fulltime/actors/bridge.hpp"
#include "fulltime/actors/reconciliation.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/reconciliation_statements.hpp"
#include "fulltime/limits.hpp"

#include <caf/all.hpp>

#include <cstdio>
#include <vector>

namespace fulltime::actors::detail {

/// Holds a run's answer as it travels between the io_context and the actor: the summary, or
/// the failure that ended the run.
struct reconcile_reply {
    bool ok = false;
    reconcile_summary summary;
    db::failure failure;
};

}  // namespace fulltime::actors::detail

// Reconciliation messages never leave the process: no serialization needed.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::detail::reconcile_reply)

namespace fulltime::actors {

namespace asio = boost::asio;
using detail::reconcile_reply;

namespace {

using run_atom = caf::atom_constant<caf::atom("rc_run")>;
using done_atom = caf::atom_constant<caf::atom("rc_done")>;
using reconcile_tick_atom = caf::atom_constant<caf::atom("rc_tick")>;
using count_atom = caf::atom_constant<caf::atom("rc_count")>;
using counted_atom = caf::atom_constant<caf::atom("rc_cntd")>;

/// Holds the io side: the pool, the run's settings and the stop flag the run reads between
/// steps. Touched on the io_context only, except `stop` (atomic).
struct reconcile_worker {
    db::pool* pool = nullptr;
    reconcile_run_settings settings;
    std::chrono::milliseconds count_timeout{0};
    std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
    reconciliation_metrics* metrics = nullptr;
};

std::string describe_run(const reconcile_summary& s) {
    std::string open;
    for (const auto& [kind, count] : s.incidents_open) {
        if (count > 0) {
            open += (open.empty() ? "" : ", ") + kind + " " + std::to_string(count);
        }
    }
    return "reconciliation: " + std::to_string(s.accounts_checked) + " accounts (" +
           std::to_string(s.chunks) + " chunks) and " + std::to_string(s.transfers_checked) +
           " transfers in " + std::to_string(s.duration_ms) + " ms; incidents " +
           std::to_string(s.incidents_opened) + " opened, " +
           std::to_string(s.incidents_seen_again) + " seen again, " +
           std::to_string(s.incidents_resolved) +
           " resolved; open: " + (open.empty() ? "none" : open);
}

// Runs on the io_context: one run, recorded and logged.
asio::awaitable<reconcile_reply> run_once(std::shared_ptr<reconcile_worker> w) {
    w->metrics->run_accounts_checked.set(0);
    w->metrics->running.set(1);
    auto run = co_await reconcile_once(*w->pool, w->settings, w->stop);
    w->metrics->running.set(0);
    w->metrics->record(run);
    reconcile_reply reply;
    if (run) {
        reply.ok = true;
        reply.summary = std::move(*run);
        // A drift is an operator's business: said loudly, never corrected.
        if (reply.summary.incidents_opened > 0 ||
            reply.summary.reconciliation_incidents_open() > 0) {
            log::error(describe_run(reply.summary));
        } else {
            log::info(describe_run(reply.summary));
        }
    } else {
        reply.failure = run.error();
        if (run.error().code != db::errc::pool_closed) {
            log::error("reconciliation: the run failed: " + db::describe(run.error()));
        }
    }
    co_return reply;
}

// Runs on the io_context: reads the open-incident gauges.
asio::awaitable<void> count_open(std::shared_ptr<reconcile_worker> w) {
    if (!w->stop->load()) {
        auto conn = co_await w->pool->acquire();
        if (conn) {
            auto open = co_await db::count_open_incidents(**conn, w->count_timeout);
            if (open) {
                std::vector<std::pair<std::string, std::int64_t>> by_kind;
                for (std::size_t k = 0; k < db::incident_kinds.size(); ++k) {
                    by_kind.emplace_back(std::string(db::incident_kinds[k]), (*open)[k]);
                }
                w->metrics->set_open(by_kind);
            } else {
                log::warn("reconciliation: counting open incidents: " + db::describe(open.error()));
            }
        }
    }
}

// --- The actor -------------------------------------------------------------------------------

struct reconcile_state {
    std::shared_ptr<reconcile_worker> worker;
    asio::any_io_executor io;
    std::chrono::milliseconds interval{0};  ///< 0: on demand only
    bool running = false;
    std::vector<caf::response_promise> current;  ///< answered by the run in progress
    std::vector<caf::response_promise> next;     ///< asked during it: answered by the next run
    static inline const char* name = "fulltime.reconciliation";
};

using reconcile_actor = caf::stateful_actor<reconcile_state>;

void start_run(reconcile_actor* self) {
    auto& st = self->state;
    FULLTIME_DEBUG_ASSERT(!st.running);
    st.running = true;
    detail::run_on_io<done_atom>(self, st.io, [w = st.worker] { return run_once(w); });
}

void answer(std::vector<caf::response_promise>& promises, const reconcile_reply& reply) {
    for (auto& p : promises) {
        p.deliver(reply);
    }
    promises.clear();
}

caf::behavior reconcile_behavior(reconcile_actor* self, std::shared_ptr<reconcile_worker> worker,
                                 asio::any_io_executor io, std::chrono::milliseconds interval) {
    self->state.worker = std::move(worker);
    self->state.io = std::move(io);
    self->state.interval = interval;
    self->set_exit_handler([self](caf::exit_msg& msg) {
        reconcile_reply stopping;
        stopping.failure = db::failure{db::errc::pool_closed, {}, "the reconciliation is stopping"};
        answer(self->state.current, stopping);
        answer(self->state.next, stopping);
        self->quit(msg.reason);
    });
    if (interval.count() > 0) {
        self->delayed_send(self, interval, reconcile_tick_atom::value);
    }
    self->send(self, count_atom::value);
    return {
        [self](reconcile_tick_atom) {
            // A scheduled run; skipped while one runs (the next tick follows its end).
            if (!self->state.running) {
                start_run(self);
            }
        },
        [self](run_atom) -> caf::result<reconcile_reply> {
            auto& st = self->state;
            auto promise = self->make_response_promise();
            if (st.running) {
                st.next.push_back(promise);
            } else {
                st.current.push_back(promise);
                start_run(self);
            }
            return promise;
        },
        [self](done_atom, reconcile_reply& reply) {
            auto& st = self->state;
            st.running = false;
            answer(st.current, reply);
            if (!st.next.empty()) {
                st.current = std::move(st.next);
                st.next.clear();
                start_run(self);
            } else if (st.interval.count() > 0) {
                self->delayed_send(self, st.interval, reconcile_tick_atom::value);
            }
        },
        [self](count_atom) {
            auto& st = self->state;
            detail::run_on_io<counted_atom>(self, st.io, [w = st.worker] { return count_open(w); });
        },
        // The reservation sweeper (and an operator) change incidents on their own schedule, and
        // the gauges should follow within seconds.
        [self](counted_atom) {
            const std::chrono::milliseconds pause{limits::reconcile_open_count_interval_ms};
            self->delayed_send(self, pause, count_atom::value);
        },
    };
}

std::string seconds_text(std::int64_t value, double scale) {
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%.6f", static_cast<double>(value) / scale);
    return buffer;
}

}  // namespace

// --- Metrics ---------------------------------------------------------------------------------

namespace {
constexpr const char* runs_name = "fulltime_reconcile_runs_total";
constexpr const char* runs_help = "Reconciliation runs, by outcome (ok: every step ran).";
constexpr const char* open_name = "fulltime_incidents_open";
constexpr const char* open_help =
    "Open incidents by kind (a drift is never corrected: it stays open until a run no longer "
    "finds it), as of the last count.";
}  // namespace

reconciliation_metrics::reconciliation_metrics(metrics::registry& registry)
    : runs_ok(registry.make_counter(runs_name, runs_help, R"(outcome="ok")")),
      runs_failed(registry.make_counter(runs_name, runs_help, R"(outcome="failed")")),
      accounts_checked(registry.make_counter("fulltime_reconcile_accounts_checked_total",
                                             "Accounts compared with their ledger sums.")),
      transfers_checked(
          registry.make_counter("fulltime_reconcile_transfers_checked_total",
                                "Ledger transfers whose currency reconciliation checked.")),
      running(registry.make_gauge("fulltime_reconcile_running",
                                  "1 while a reconciliation run is in progress.")),
      run_accounts_checked(
          registry.make_gauge("fulltime_reconcile_run_accounts_checked",
                              "Accounts checked so far by the reconciliation run in progress "
                              "(after it, by the last run).")) {
    static_assert(std::tuple_size_v<decltype(incidents_open)> == db::incident_kinds.size());
    for (std::size_t k = 0; k < db::incident_kinds.size(); ++k) {
        incidents_open[k] = &registry.make_gauge(open_name, open_help,
                                                 metrics::label("kind", db::incident_kinds[k]));
    }
    registry.add_collector([this](std::string& out) {
        metrics::append_header(out, "fulltime_reconcile_last_run_duration_seconds",
                               "Duration of the last reconciliation run (finished or failed).",
                               "gauge");
        metrics::append_sample(out, "fulltime_reconcile_last_run_duration_seconds", "",
                               seconds_text(last_duration_us.load(), 1e6));
        metrics::append_header(out, "fulltime_reconcile_last_success_timestamp_seconds",
                               "Unix time when the last complete reconciliation run ended "
                               "(0: none yet).",
                               "gauge");
        metrics::append_sample(out, "fulltime_reconcile_last_success_timestamp_seconds", "",
                               seconds_text(last_success_unix_ms.load(), 1e3));
    });
}

void reconciliation_metrics::record(const db::outcome<reconcile_summary>& run) noexcept {
    if (!run) {
        runs_failed.inc();
        return;
    }
    runs_ok.inc();
    accounts_checked.inc(static_cast<std::uint64_t>(run->accounts_checked));
    transfers_checked.inc(static_cast<std::uint64_t>(run->transfers_checked));
    last_duration_us.store(run->duration_ms * 1000);
    last_success_unix_ms.store(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
    set_open(run->incidents_open);
}

void reconciliation_metrics::set_open(
    const std::vector<std::pair<std::string, std::int64_t>>& open) noexcept {
    for (const auto& [kind, count] : open) {
        for (std::size_t k = 0; k < db::incident_kinds.size(); ++k) {
            if (db::incident_kinds[k] == kind) {
                incidents_open[k]->set(count);
            }
        }
    }
}

// --- Service ---------------------------------------------------------------------------------

struct reconciliation_service::impl {
    caf::actor_system* system = nullptr;
    caf::actor actor;
    std::shared_ptr<reconcile_worker> worker;
    std::chrono::milliseconds run_timeout{0};
    bool stopped = false;
};

reconciliation_service::reconciliation_service(caf::actor_system& system, asio::any_io_executor io,
                                               db::pool& background, const config& cfg,
                                               reconciliation_metrics& metrics)
    : impl_(std::make_shared<impl>()) {
    auto w = std::make_shared<reconcile_worker>();
    w->pool = &background;
    w->settings = reconcile_run_settings::from(cfg);
    w->count_timeout = std::chrono::milliseconds(cfg.database.query_timeout_ms);
    w->metrics = &metrics;
    w->settings.accounts_progress = &metrics.run_accounts_checked;
    impl_->system = &system;
    impl_->worker = w;
    impl_->run_timeout = std::chrono::milliseconds(cfg.reconcile.run_timeout_ms);
    impl_->actor = system.spawn(reconcile_behavior, w, std::move(io),
                                std::chrono::milliseconds(cfg.reconcile.interval_ms));
}

reconciliation_service::~reconciliation_service() { stop(); }

asio::awaitable<db::outcome<reconcile_summary>> reconciliation_service::run_now() {
    std::shared_ptr<impl> st = impl_;
    if (st->stopped) {
        co_return db::failure{db::errc::pool_closed, {}, "the reconciliation is stopping"};
    }
    auto reply =
        co_await ask<reconcile_reply>(*st->system, st->actor, st->run_timeout, run_atom::value);
    if (!reply) {
        if (reply.error() == caf::sec::request_timeout) {
            co_return db::failure{db::errc::deadline_exceeded,
                                  {},
                                  "no reconciliation run finished within "
                                  "reconcile.run_timeout_ms"};
        }
        co_return db::failure{db::errc::pool_closed, {}, "the reconciliation is stopping"};
    }
    if (!reply->ok) {
        co_return reply->failure;
    }
    co_return std::move(reply->summary);
}

void reconciliation_service::stop() {
    if (impl_->stopped) {
        return;
    }
    impl_->stopped = true;
    impl_->worker->stop->store(true);
    caf::anon_send_exit(impl_->actor, caf::exit_reason::user_shutdown);
}

}  // namespace fulltime::actors
