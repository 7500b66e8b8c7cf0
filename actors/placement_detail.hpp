#pragma once
/// Internals of the placement path shared by actors/placement_*.cpp and the purge actor: the
/// connection-side state of each actor and the coroutines that run on an event loop. No CAF here.

#include "fulltime/actors/placement.hpp"
#include "fulltime/db/pool.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::actors::detail {

using steady = std::chrono::steady_clock;

/// Holds the connection side of one placement actor: its connection and the settings of a call.
/// Every member is touched on the actor's event loop only.
struct placement_worker {
    db::pool* pool = nullptr;
    db::pooled_connection conn;  ///< kept across calls; empty while a call owns it
    bool closed = false;         ///< set by stop(): release the connection, take no more
    std::int64_t lock_timeout_ms = 0;
    std::size_t lock_retries_max = 0;
    std::chrono::milliseconds query_timeout{0};
    std::int32_t shard_hint = 0;  ///< the actor's index: its preferred exposure shard
    /// Read the WAL position after each group that wrote (a standby serves read-your-writes).
    bool read_commit_lsn = false;
    placement_metrics* metrics = nullptr;
    /// Opening the worker's first connection may take this long (database.connect_timeout_ms).
    std::chrono::milliseconds connect_timeout{0};
    /// Counts the workers of the service that have opened their first connection (any thread
    /// reads it: readiness); `opened` says whether this one is counted.
    std::shared_ptr<std::atomic<std::size_t>> opened_count;
    bool opened = false;
    /// warm()'s pause between tries while it waits in one; stop() cancels it.
    boost::asio::steady_timer* open_pause = nullptr;
};

/// Counts the worker in its service's opened_count the first time it holds a connection.
void note_opened(placement_worker& worker) noexcept;

/// Names one placement of a group: the request and its fingerprint.
struct group_item {
    bets::place_request request;
    std::string fingerprint;
};

/// Holds the answers of one group, one per item in order, and when its last statement was sent
/// and answered (both empty when no statement ran).
struct group_answer {
    std::vector<bets::place_result> results;
    steady::time_point sent;
    steady::time_point back;
};

/// Runs a group of placements (at most limits::placement_group_max) to their answers in one
/// transaction on the worker's connection (fulltime_place_group, natural group commit): acquires
/// a connection when it has none, retries the whole group with the same keys after a lock
/// timeout (at most lock_retries_max times) or a broken connection (at most
/// limits::placement_reconnects_max times), and answers busy when `deadline` passes first. An
/// unexpected error of a group of several runs each item again alone, so that one bad request
/// cannot fail its neighbours. Never throws.
boost::asio::awaitable<group_answer> execute_group(std::shared_ptr<placement_worker> worker,
                                                   std::vector<group_item> items,
                                                   steady::time_point deadline);

/// Opens the worker's connection ahead of its first placement, waiting for a whole connect rather
/// than the pool's short wait, and tries again (backing off) until it has one or the worker
/// closes. The engine says it is ready only once every worker has (placement_service::opened):
/// the first bets after a start neither wait for connects nor are answered busy because
/// opening several connections at once outlasted the pool's wait.
boost::asio::awaitable<void> warm(std::shared_ptr<placement_worker> worker);

/// Holds the io side of the purge actor.
struct purge_worker {
    db::pool* pool = nullptr;
    std::int64_t retention_s = 0;
    std::size_t batch_max = 0;
    std::int64_t lock_timeout_ms = 0;
    std::int64_t statement_timeout_ms = 0;
    placement_metrics* metrics = nullptr;
    bool closed = false;  ///< io only
};

/// Deletes idempotency keys older than the retention, batch_max per transaction, until a batch
/// comes back short or limits::purge_batches_per_round_max batches ran. Returns the number
/// deleted, or nullopt when a batch failed (what earlier batches deleted stays deleted).
boost::asio::awaitable<std::optional<std::int64_t>> purge_round(
    std::shared_ptr<purge_worker> worker);

/// Returns a busy result with `message` for the client.
bets::place_result busy_result(std::string message);

}  // namespace fulltime::actors::detail
