#pragma once
/// The peak sampler (docs/design.md, "Observability at the peak"). Every
/// `diagnostics.sample_interval_ms` one actor has a sample taken on the io_context:
///   - from the engine, over the interval: placements answered and their p50/p99, per outcome,
///     a bet's wait for its actor's connection (queue stage) against its time in the database,
///     the bets queued at the instant, lock timeouts, settled bets, each pool's waiters and
///     acquire-wait p99;
///   - from the database, on a connection of the `background` pool (db/peak_statements.hpp):
///     lock waiters and, at most every limits::diagnosis_blockers_interval_ms, whom they wait
///     for; the oldest transaction and the sessions idle in a transaction, each with pid, age,
///     application and query start; the hot tables' dead tuples and updates; the settlement
///     backlog as age, per market and overall; standbys' replay lag and slots' WAL status;
///   - from PgBouncer's admin console, when `diagnostics.pgbouncer_admin_url` is set.
/// The last `diagnostics.window_s` seconds of samples stay in memory (peak_history), where
/// GET /v1/diagnostics, GET /dashboard and /metrics read them. A failed database read still
/// records the engine's half (database_ok false) and is counted.
///
/// Threading as for the sweeper: the actor never calls libpq; the sample is a coroutine on the
/// io_context. peak_history is read from any thread.

#include "fulltime/config/config.hpp"
#include "fulltime/core/peak_diagnosis.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace caf {
class actor_system;
}  // namespace caf

namespace fulltime::db {
struct pools;
}  // namespace fulltime::db

namespace fulltime::metrics {
class registry;
}  // namespace fulltime::metrics

namespace fulltime::actors {

struct placement_metrics;
struct settlement_metrics;

/// Keeps the last samples, oldest first, at most `capacity`; and the sampler's own record.
/// Every member is safe to call from any thread.
class peak_history {
public:
    peak_history(std::size_t capacity, std::int64_t interval_ms,
                 diagnosis::thresholds thresholds = {});

    /// Appends one sample (dropping the oldest beyond capacity) and judges the window again.
    void push(diagnosis::sample s);
    /// Counts one failed database read, with its reason.
    void failed(std::string why);

    /// Returns a copy of the samples, oldest first.
    std::vector<diagnosis::sample> samples() const;
    /// Returns the verdict over the newest samples (judged at the last push).
    diagnosis::verdict verdict() const;
    /// Returns the newest sample, or an empty one (t_ms 0) before the first.
    diagnosis::sample latest() const;

    std::size_t capacity() const noexcept { return capacity_; }
    const diagnosis::thresholds& thresholds() const noexcept { return thresholds_; }
    std::int64_t interval_ms() const noexcept { return interval_ms_; }
    std::uint64_t samples_total() const;
    std::uint64_t failures_total() const;
    std::string last_error() const;

private:
    const std::size_t capacity_;
    const std::int64_t interval_ms_;
    const diagnosis::thresholds thresholds_;
    mutable std::mutex mutex_;
    std::deque<diagnosis::sample> samples_;
    diagnosis::verdict verdict_;
    std::uint64_t samples_total_ = 0;
    std::uint64_t failures_total_ = 0;
    std::string last_error_;
};

/// Starts and owns the sampler actor.
class peak_sampler {
public:
    /// Spawns the actor; its first sample is taken after one interval. Registers its series in
    /// `registry` (a collector over the newest sample and the verdict). Everything passed in
    /// must outlive this object.
    peak_sampler(caf::actor_system& system, boost::asio::any_io_executor io, db::pools& pools,
                 const config& cfg, placement_metrics& placement, settlement_metrics& settlement,
                 metrics::registry& registry);
    ~peak_sampler();
    peak_sampler(const peak_sampler&) = delete;
    peak_sampler& operator=(const peak_sampler&) = delete;

    /// Returns the samples kept so far.
    std::shared_ptr<const peak_history> history() const noexcept;

    /// Stops the actor; a sample being taken ends after its current statement. Call on the
    /// io_context before the pools close.
    void stop();

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace fulltime::actors
