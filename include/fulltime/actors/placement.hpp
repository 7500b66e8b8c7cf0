#pragma once
/// The placement path's actors (docs/design.md, "Placement"): a fixed pool of placement actors,
/// each owning its queue and one connection of the placement pool on one event-loop thread, and
/// the background actor that purges expired idempotency keys.
///
/// Threading. The engine runs gateway.io_threads event loops (one io_context and one thread
/// each). A connection is spread over them when accepted, and each loop has its own placement
/// actors and its own share of the placement pool. A placement actor is an actor in the plain
/// sense, not a CAF one: a FIFO of requests served by its loop's thread, which runs the
/// requests queued while its connection was busy as one group (one fulltime_place_group call)
/// and answers each session directly. place() hands a request to an actor of the caller's own
/// loop, so a bet is read, placed and answered on one thread and crosses none; only when a loop
/// has no actor of its own (more loops than actors) does it cross once each way. CAF stays out
/// of this path; the purge actor is a CAF actor whose database calls run on loop 0.
///
/// CAF stays out of this header (it is included by the gateway's endpoint code).

#include "fulltime/config/config.hpp"
#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/core/latency_histogram.hpp"
#include "fulltime/core/latency_window.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
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

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace fulltime::actors {

/// Names the hops of one placement, each timed into fulltime_placement_stage_seconds{stage}:
/// parse (frame read to typed request), handoff (to its actor's queue), queue (waiting there),
/// group (the group starts to its statement sent), database (the statement's round trip),
/// reply (the answer back to the reply rendered), write (rendered to written on the socket),
/// and total (frame read to reply written).
enum class placement_stage { parse, handoff, queue, group, database, reply, write, total };

/// Returns the stage's label ("parse", ...).
std::string_view stage_name(placement_stage s) noexcept;

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
    metrics::counter& invalid;           ///< refused by validation, or for its currency's decimals
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
    metrics::gauge& queued;              ///< placements waiting in the actors' queues
    metrics::latency_histogram latency;  ///< place request to answer, as the gateway sees it
    /// The same durations in fine buckets, for the settlement governor's sliding p99.
    metrics::latency_window recent;
    /// The queue and database stages in fine buckets, for the peak sampler's per-interval p99
    /// (a bet's wait for its actor's connection against its time in the database).
    metrics::latency_window queue_recent;
    metrics::latency_window database_recent;

    /// Returns the histogram of one stage.
    metrics::latency_histogram& stage(placement_stage s) noexcept {
        return stages_[static_cast<std::size_t>(s)];
    }

private:
    std::array<metrics::latency_histogram, 8> stages_;
};

/// Names one event-loop thread's share of the placement path: its io_context (run by one
/// thread) and the placement pool made with its executor.
struct placement_loop {
    boost::asio::io_context* context = nullptr;
    db::pool* pool = nullptr;
};

/// Starts and owns the placement actors and the idempotency purge actor.
class placement_service {
public:
    /// Starts cfg.placement.actors placement actors spread over `loops` (actor i on loop
    /// i % loops.size(), borrowing from that loop's pool), and the purge actor, whose calls run
    /// on `background`'s executor `main` (loop 0). The loops, pools, system and metrics must
    /// outlive this object.
    placement_service(caf::actor_system& system, std::vector<placement_loop> loops,
                      boost::asio::any_io_executor main, db::pool& background, const config& cfg,
                      placement_metrics& metrics);
    /// Stops the actors if stop() was not called.
    ~placement_service();
    placement_service(const placement_service&) = delete;
    placement_service& operator=(const placement_service&) = delete;

    /// Places one bet: hands it to a placement actor of the caller's loop (the loop's account
    /// router keeps an active account on one actor and spreads accounts evenly over the actors),
    /// where it may commit with other queued placements as one group, and awaits its
    /// answer within actors.request_timeout_ms. Operating errors are results (busy, failed),
    /// never exceptions. Awaited on any executor of one of the loops. When `answered_at` is not
    /// null it receives when the actor answered (for the reply stage).
    boost::asio::awaitable<bets::place_result> place(
        bets::place_request request, std::string fingerprint,
        std::chrono::steady_clock::time_point* answered_at = nullptr);

    /// Runs one purge round now and returns the number of keys deleted, or nullopt when the
    /// round failed or did not answer in time (tests and operations; the actor also runs on its
    /// own interval).
    boost::asio::awaitable<std::optional<std::int64_t>> purge_now();

    /// Whether every placement actor has opened its first connection (they start opening at
    /// construction and keep trying): until then the engine does not say it is ready. Callable
    /// from any thread.
    bool opened() const noexcept;

    /// Returns the number of placement actors.
    std::size_t actor_count() const noexcept;

    /// Tells every actor to stop (queued requests are answered busy; a running group answers its
    /// own when its call ends) and releases the idle connections, each on its own loop (at once
    /// when called there). Call after the gateway drained and before the pools close.
    void stop();

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace fulltime::actors
