#pragma once
/// The partition keeper (docs/schema.md, "Time partitions"; docs/architecture.md). Every
/// `history.keeper_interval_ms`, and once at start, one actor runs a round on the `background`
/// pool:
///   1. the periods ahead: partitions exist `history.ahead_periods` periods past now, so a
///      placement never finds none for its time (a changed `history.period` applies from the
///      next period made);
///   2. closing: each period that ended `history.close_grace_s` ago, once no transaction older
///      than its end runs, gets its balances stored; reconciliation and the audit start there;
///   3. retention: the oldest period leaves (its four partitions detached CONCURRENTLY and
///      dropped) when nothing holds it: closed, `history.retention` past its end, no open bet,
///      no unsettled market, no unconsumed outbox row, every older period gone.
/// At most limits::history_steps_per_round_max closes and drops a round. Threading as for the
/// sweeper: the actor never calls libpq; the round runs on the io_context.

#include "fulltime/config/config.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
}  // namespace fulltime::metrics

namespace fulltime::actors {

/// Holds the keeper's series, registered once in the engine's registry.
struct history_metrics {
    /// Registers every series in `registry`, which must outlive this object.
    explicit history_metrics(metrics::registry& registry);

    metrics::gauge& periods;     ///< periods kept (last round)
    metrics::gauge& ahead_s;     ///< seconds until the last partition ends (last round)
    metrics::counter& added;     ///< periods made
    metrics::counter& closed;    ///< periods closed
    metrics::counter& dropped;   ///< periods dropped
    metrics::counter& rounds;    ///< rounds finished
    metrics::counter& failures;  ///< rounds that stopped on a database error
};

/// Holds what one round did.
struct keeper_report {
    bool ok = false;
    std::string error;                 ///< why a failed round stopped
    std::int64_t added = 0;            ///< periods made ahead
    std::vector<std::string> closed;   ///< starts of the periods closed
    std::vector<std::string> dropped;  ///< starts of the periods dropped
    std::int64_t periods_kept = 0;
    std::int64_t ahead_s = 0;
};

/// Runs one round (see above) on a connection of `pool`, as the keeper does and as
/// `fulltime partitions --keep` does once. Never throws; a database error ends the round early
/// with ok = false (what it did so far stays done). A set `stopped` ends it between two steps.
boost::asio::awaitable<keeper_report> keep_history(
    db::pool& pool, history_settings settings,
    std::shared_ptr<const std::atomic<bool>> stopped = nullptr);

/// Starts and owns the keeper actor.
class partition_keeper {
public:
    /// Spawns the actor; its first round runs at once. The pool, system and metrics must outlive
    /// this object. Requires `cfg.history.keeper_interval_ms` > 0.
    partition_keeper(caf::actor_system& system, boost::asio::any_io_executor io,
                     db::pool& background, const config& cfg, history_metrics& metrics);
    ~partition_keeper();
    partition_keeper(const partition_keeper&) = delete;
    partition_keeper& operator=(const partition_keeper&) = delete;

    /// Stops the actor; a round in progress ends after its current statement. Call on the
    /// io_context before the pools close.
    void stop();

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace fulltime::actors
