#pragma once
/// The settlement path's actors (docs/design.md, "Settlement"): a coordinator and one market actor
/// per market with events to apply.
///
/// Shape. The coordinator owns the map of market actors and the `settlement.batches_in_flight`
/// slots. A market actor applies its market's events strictly in seq order: for every step it
/// asks the coordinator for a slot (FIFO over all markets, so one huge market cannot starve
/// the others) and, in the slot, runs `fulltime_settle_step`
/// (db/functions/fulltime_settle_step.sql) on a connection of the `settlement` pool, retrying a
/// lock timeout at once within the slot (limits::settlement_step_lock_retries_max). A step is
/// one short transaction: start the next event, wait on the fence, settle at most
/// `settlement.batch_bets_max` bets after the checkpoint, or finish the event. A market with
/// nothing left to apply (or a gap in its seq) retires its actor; the next event, or the
/// coordinator's periodic scan, brings it back.
///
/// Threading is as for placement: an actor never calls libpq; database work runs on the
/// io_context and its result comes back as a message. CAF stays out of this header.

#include "fulltime/config/config.hpp"
#include "fulltime/core/latency_histogram.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace caf {
class actor_system;
}  // namespace caf

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::metrics {
class counter;
class gauge;
class registry;
class latency_window;
}  // namespace fulltime::metrics

namespace fulltime::actors {

/// Holds the series of the settlement path, registered once in the engine's registry.
struct settlement_metrics {
    /// Registers every series in `registry`, which must outlive this object.
    explicit settlement_metrics(metrics::registry& registry);

    metrics::counter& steps_batch;            ///< steps that settled a batch
    metrics::counter& steps_started;          ///< events started
    metrics::counter& steps_finished;         ///< events fully applied
    metrics::counter& steps_fenced;           ///< steps that waited for placements still running
    metrics::counter& steps_failed;           ///< steps that ended on an error (retried later)
    metrics::counter& bets;                   ///< bets looked at by batches
    metrics::counter& effects;                ///< settlement rows written (effects and reversals)
    metrics::counter& lock_timeouts;          ///< steps that hit their lock_timeout (retried)
    metrics::gauge& markets_active;           ///< market actors alive
    metrics::gauge& batches_running;          ///< steps holding a slot
    metrics::gauge& backlog_events;           ///< events stored but not yet applied (last scan)
    metrics::gauge& backlog_markets;          ///< markets with such events (last scan)
    metrics::gauge& backlog_age_ms;           ///< age of the oldest such event (last scan), ms
    metrics::latency_histogram step_latency;  ///< one step's transaction, as the engine sees it
    /// The governor (settlement.placement_p99_budget_ms, _percent): its budget in force (0: off,
    /// or a budget in percent with no baseline yet), the placement p99 with nothing settling
    /// (the baseline), the placement p99 over the last window (no_placement_p99: no placement in
    /// it; measured whenever this process places bets, budget or not), its batch size and pause,
    /// the bets settled per second over the window, and 1 while the floor holds it back. Durations
    /// in microseconds, exported in seconds.
    static constexpr std::int64_t no_placement_p99 = -1'000'000;  ///< exported as -1 (s)
    metrics::gauge& governor_budget_us;
    metrics::gauge& governor_baseline_p99_us;  ///< no_placement_p99: no baseline yet
    metrics::gauge& governor_placement_p99_us;
    metrics::gauge& governor_batch_bets;
    metrics::gauge& governor_pause_us;
    metrics::gauge& governor_settled_bets_per_s;
    metrics::gauge& governor_floored;
    metrics::gauge& governor_slow_start;

    /// Returns the governor's state as a JSON object text, for /v1/diagnostics: enabled,
    /// budget_ms, baseline_p99_ms (null: none yet), placement_p99_ms (null: no placement in the
    /// window), batch_bets, pause_ms, settled_bets_per_s, floored, slow_start.
    std::string governor_json() const;
    /// Bets an applied event skipped because of their terminal state, by code (0008), as
    /// fulltime_settlement_refusals_total{code}; and events refused as a whole, by code, as
    /// fulltime_settlement_events_refused_total{code}. Keys are the fixed codes.
    std::map<std::string, metrics::counter*, std::less<>> bet_refusals;
    std::map<std::string, metrics::counter*, std::less<>> event_refusals;
};

/// Starts and owns the settlement actors.
class settlement_service {
public:
    /// Spawns the coordinator, which scans at once (and every settlement.poll_interval_ms) for
    /// markets with events to apply. `io` is the executor the pools were made with; every
    /// database call runs there. The pools, system and metrics must outlive this object.
    /// `placement_latency` (the placement path's, when this process places bets) is what the
    /// governor steers by when settlement.placement_p99_budget_ms or _percent is set; without it
    /// the governor stays off.
    settlement_service(caf::actor_system& system, boost::asio::any_io_executor io,
                       db::pool& settlement, db::pool& background, const config& cfg,
                       settlement_metrics& metrics,
                       const metrics::latency_window* placement_latency = nullptr);
    ~settlement_service();
    settlement_service(const settlement_service&) = delete;
    settlement_service& operator=(const settlement_service&) = delete;

    /// Wakes the market's actor (spawning it if needed): an event was stored for it. Callable
    /// from any thread.
    void notify(std::int64_t market_id);

    /// Stops the actors; a step in its transaction finishes on the io_context and is not
    /// followed by another. Call on the io_context before the pools close.
    void stop();

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace fulltime::actors
