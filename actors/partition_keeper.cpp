// The partition keeper: see partition_keeper.hpp.

#include "fulltime/actors/partition_keeper.hpp"

#include "actors/io_handoff.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/history_statements.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/limits.hpp"

#include <caf/all.hpp>

#include <atomic>

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::keeper_report)

namespace fulltime::actors {

namespace asio = boost::asio;

namespace {

using tick_atom = caf::atom_constant<caf::atom("pk_tick")>;
using kept_atom = caf::atom_constant<caf::atom("pk_kept")>;

// The round's steps, each a statement or a short transaction on one connection.
asio::awaitable<keeper_report> keep_round(db::connection& conn, const history_settings& settings,
                                          const std::atomic<bool>& stopped) {
    keeper_report report;
    auto fail = [&report](std::string why) {
        report.ok = false;
        report.error = std::move(why);
        return report;
    };
    auto added = co_await db::ensure_periods(conn, settings);
    if (!added) {
        co_return fail("making the periods ahead: " + db::describe(added.error()));
    }
    report.added = *added;
    for (int i = 0; i < limits::history_steps_per_round_max && !stopped; ++i) {
        auto closed = co_await db::close_period(conn, settings);
        if (!closed) {
            co_return fail("closing a period: " + db::describe(closed.error()));
        }
        if (closed->outcome != "closed") {
            break;
        }
        report.closed.push_back(closed->period_start.value_or("?"));
    }
    for (int i = 0; i < limits::history_steps_per_round_max && !stopped; ++i) {
        auto dropped = co_await db::drop_oldest_period(conn, settings);
        if (!dropped) {
            co_return fail("dropping a period: " + db::describe(dropped.error()));
        }
        if (!*dropped) {
            break;
        }
        report.dropped.push_back(**dropped);
    }
    auto horizon = co_await db::read_history_horizon(conn);
    if (!horizon) {
        co_return fail("reading the periods: " + db::describe(horizon.error()));
    }
    report.periods_kept = horizon->periods_kept;
    report.ahead_s = horizon->ahead_s;
    report.ok = true;
    co_return report;
}

struct keeper_settings {
    db::pool* pool = nullptr;
    asio::any_io_executor io;
    history_settings history;
    history_metrics* metrics = nullptr;
    std::shared_ptr<std::atomic<bool>> stopped;
};

struct keeper_state {
    keeper_settings settings;
    static inline const char* name = "fulltime.partition_keeper";
};

using keeper_actor = caf::stateful_actor<keeper_state>;

void start_round(keeper_actor* self) {
    const auto& s = self->state.settings;
    detail::run_on_io<kept_atom>(self, s.io,
                                 [s] { return keep_history(*s.pool, s.history, s.stopped); });
}

void note(history_metrics& m, const keeper_report& r) {
    m.added.inc(static_cast<std::uint64_t>(r.added));
    m.closed.inc(r.closed.size());
    m.dropped.inc(r.dropped.size());
    for (const auto& start : r.closed) {
        log::info("history: closed the period that starts at " + start);
    }
    for (const auto& start : r.dropped) {
        log::info("history: dropped the partitions of the period that starts at " + start);
    }
}

caf::behavior keeper_behavior(keeper_actor* self, keeper_settings settings) {
    self->state.settings = std::move(settings);
    const auto interval =
        std::chrono::milliseconds(self->state.settings.history.keeper_interval_ms);
    start_round(self);
    return {
        [self](tick_atom) { start_round(self); },
        [self, interval](kept_atom, keeper_report& r) {
            auto& m = *self->state.settings.metrics;
            note(m, r);
            if (r.ok) {
                m.rounds.inc();
                m.periods.set(r.periods_kept);
                m.ahead_s.set(r.ahead_s);
            } else if (!*self->state.settings.stopped) {
                m.failures.inc();
                log::warn("history: keeper round failed: " + r.error);
            }
            self->delayed_send(self, interval, tick_atom::value);
        },
    };
}

}  // namespace

asio::awaitable<keeper_report> keep_history(db::pool& pool, history_settings settings,
                                            std::shared_ptr<const std::atomic<bool>> stopped) {
    if (!stopped) {
        stopped = std::make_shared<const std::atomic<bool>>(false);
    }
    auto conn = co_await pool.acquire();
    if (!conn) {
        keeper_report report;
        report.error = "no background connection: " + db::describe(conn.error());
        co_return report;
    }
    co_return co_await keep_round(**conn, settings, *stopped);
}

history_metrics::history_metrics(metrics::registry& registry)
    : periods(registry.make_gauge("fulltime_history_periods",
                                  "Periods whose partitions are kept, at the last keeper round.")),
      ahead_s(registry.make_gauge(
          "fulltime_history_ahead_seconds",
          "Seconds from now to the end of the last partition, at the last keeper round: below "
          "one period, placements are at risk of finding no partition.")),
      added(registry.make_counter("fulltime_history_periods_added_total",
                                  "Periods made ahead of now, with their partitions.")),
      closed(registry.make_counter("fulltime_history_periods_closed_total",
                                   "Periods closed: their balances stored.")),
      dropped(registry.make_counter("fulltime_history_periods_dropped_total",
                                    "Periods whose partitions were detached and dropped.")),
      rounds(registry.make_counter("fulltime_history_rounds_total", "Keeper rounds finished.")),
      failures(registry.make_counter("fulltime_history_round_failures_total",
                                     "Keeper rounds that stopped on a database error.")) {}

struct partition_keeper::impl {
    caf::actor actor;
    std::shared_ptr<std::atomic<bool>> stopped = std::make_shared<std::atomic<bool>>(false);
};

partition_keeper::partition_keeper(caf::actor_system& system, asio::any_io_executor io,
                                   db::pool& background, const config& cfg,
                                   history_metrics& metrics)
    : impl_(std::make_shared<impl>()) {
    FULLTIME_ASSERT(cfg.history.keeper_interval_ms > 0);
    keeper_settings s;
    s.pool = &background;
    s.io = std::move(io);
    s.history = cfg.history;
    s.metrics = &metrics;
    s.stopped = impl_->stopped;
    impl_->actor = system.spawn(keeper_behavior, std::move(s));
}

partition_keeper::~partition_keeper() { stop(); }

void partition_keeper::stop() {
    if (impl_->stopped->exchange(true)) {
        return;
    }
    caf::anon_send_exit(impl_->actor, caf::exit_reason::user_shutdown);
}

}  // namespace fulltime::actors
