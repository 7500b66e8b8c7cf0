#pragma once
/// The placement path's actors (docs/design.md, "Placement"): a fixed pool of placement actors,
/// each owning one connection of the `placement` db pool, and the background actor that purges
/// expired idempotency keys.
///
/// Threading. The db layer is single-threaded Asio: connections live on the engine's
/// io_context and are touched only from coroutines running there. An actor never calls libpq;
/// it keeps a FIFO of requests and, when idle, co_spawns onto the io_context a coroutine that
/// runs `fulltime_place_group` on the actor's connection, answers each placement's session
/// directly (its reply sink), and then tells the actor the group is done. So a CAF thread never
/// waits on the database, and the io thread never waits on an actor.
///
/// CAF stays out of this header (it is included by the gateway's endpoint code).

#include "fulltime/config/config.hpp"
#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/core/latency_histogram.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

namespace caf {
class actor_system;
}  // namespace caf

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::metrics {
class counter;
class registry;
}  // namespace fulltime::metrics

namespace fulltime::actors {

/// Holds the counters of the placement path, registered once in the engine's registry.
struct placement_metrics {
    /// Registers every series in `registry`, which must outlive this object.
    explicit placement_metrics(metrics::registry& registry);

    /// Records one answered place request (outcome counter and latency).
    void record(const bets::place_result& result, std::chrono::microseconds latency) noexcept;

    metrics::counter& placed;            ///< bets placed (first execution)
    metrics::counter& rejected;          ///< refusals stored on their key (first execution)
    metrics::counter& replayed;          ///< stored results returned again
    metrics::counter& key_reused;        ///< idempotency_key_reused
    metrics::counter& busy;              ///< answered busy, whatever the reason
    metrics::counter& failed;            ///< unexpected errors (answered "internal")
    metrics::counter& invalid;           ///< refused by validation before any actor
    metrics::counter& lock_timeouts;     ///< SQLSTATE 55P03 inside fulltime_place
    metrics::counter& retries;           ///< re-executions after a lock timeout or deadlock
    metrics::counter& reconnects;        ///< re-executions on a fresh connection
    metrics::counter& busy_queue_full;   ///< an actor's queue was at its bound
    metrics::counter& busy_deadline;     ///< the request's deadline passed first
    metrics::counter& busy_locked;       ///< lock timeouts beyond placement.lock_retries_max
    metrics::counter& busy_unavailable;  ///< no usable connection (pool timeout, lost server)
    metrics::counter& purged_keys;       ///< idempotency keys deleted by the purge actor
    metrics::counter& purge_batches;     ///< purge transactions committed
    metrics::counter& purge_failures;    ///< purge transactions that failed
    metrics::latency_histogram latency;  ///< place request to answer, as the gateway sees it
};

/// Starts and owns the placement actors and the idempotency purge actor.
class placement_service {
public:
    /// Spawns cfg.placement.actors placement actors on `placement` and the purge actor on
    /// `background`. `io` is the executor the pools were made with (a single-threaded
    /// io_context); every database call runs there. The pools, system and metrics must outlive
    /// this object.
    placement_service(caf::actor_system& system, boost::asio::any_io_executor io,
                      db::pool& placement, db::pool& background, const config& cfg,
                      placement_metrics& metrics);
    /// Tells the actors to quit if stop() was not called (their connections are then released
    /// on the io_context when it next runs).
    ~placement_service();
    placement_service(const placement_service&) = delete;
    placement_service& operator=(const placement_service&) = delete;

    /// Places one bet: sends it to the actor of its account (by account id), where it may commit
    /// with other queued placements as one group, and awaits its answer within
    /// actors.request_timeout_ms. Operating errors are results (busy, failed), never exceptions.
    /// Must be awaited on an executor of the io_context.
    boost::asio::awaitable<bets::place_result> place(bets::place_request request,
                                                     std::string fingerprint);

    /// Runs one purge round now and returns the number of keys deleted, or nullopt when the
    /// round failed or did not answer in time (tests and operations; the actor also runs on its
    /// own interval).
    boost::asio::awaitable<std::optional<std::int64_t>> purge_now();

    /// Returns the number of placement actors.
    std::size_t actor_count() const noexcept;

    /// Tells every actor to quit (queued requests are answered busy) and releases the idle
    /// connections. Call on the io_context after the gateway drained and before the pools close.
    void stop();

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace fulltime::actors
