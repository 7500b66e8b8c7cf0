#pragma once
/// A bounded pool of connections for one path (placement, settlement, read, background), with a
/// bounded wait queue, counted timeouts and gauges. Connections open lazily up to size_max; a
/// broken connection is discarded when returned and replaced on demand.
///
/// A pool and its connections are used from one thread: the executor the pool was made with, or
/// a strand of the same single-threaded io_context (checked in debug builds). stats() may be
/// called from any thread.

#include "fulltime/config/config.hpp"
#include "fulltime/core/latency_window.hpp"
#include "fulltime/db/connection.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fulltime::db {

/// Holds a snapshot of one pool's gauges and counters.
struct pool_stats {
    std::string name;
    std::size_t size_max = 0;
    std::size_t in_use = 0;
    std::size_t idle = 0;
    std::size_t waiting = 0;
    std::size_t opening = 0;
    std::uint64_t acquired_total = 0;
    std::uint64_t timeouts_total = 0;  ///< acquires that gave up after wait_ms_max
    std::uint64_t rejected_total = 0;  ///< acquires refused because the queue was full
    std::uint64_t broken_total = 0;    ///< connections discarded as broken
    std::uint64_t connect_failures_total = 0;
    std::int64_t wait_us_max = 0;             ///< longest wait for a connection since start
    std::uint64_t acquire_wait_us_total = 0;  ///< every lend's wait, summed
    /// Every lend's wait (zero when a connection was idle), in fine buckets: quantiles over an
    /// interval come from the difference of two snapshots (latency_window::quantile).
    metrics::latency_window::snapshot acquire_waits{};
};

class pool;
namespace detail {
struct pool_state;
}

/// Lends one connection; returns it to its pool when destroyed (or discards it if broken).
class pooled_connection {
public:
    pooled_connection() = default;
    pooled_connection(pooled_connection&& other) noexcept;
    pooled_connection& operator=(pooled_connection&& other) noexcept;
    ~pooled_connection();

    connection& operator*() const noexcept { return *conn_; }
    connection* operator->() const noexcept { return conn_.get(); }
    explicit operator bool() const noexcept { return conn_ != nullptr; }

private:
    friend struct detail::pool_state;
    pooled_connection(std::shared_ptr<detail::pool_state> owner, std::unique_ptr<connection> c);
    void release() noexcept;

    std::shared_ptr<detail::pool_state> owner_;
    std::unique_ptr<connection> conn_;
};

/// Owns the connections of one path.
class pool {
public:
    /// Creates an empty pool; no connection is opened until the first acquire. Its connections
    /// prepare statements when `prepared_statements` and start their sessions with `session`
    /// (connection::open).
    pool(boost::asio::any_io_executor executor, std::string name, std::string conninfo,
         pool_settings settings, std::chrono::milliseconds connect_timeout,
         std::chrono::milliseconds query_timeout, bool prepared_statements = true,
         session_options session = {});
    ~pool();
    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;

    /// Lends a connection: an idle one, a new one if below size_max, or the next one returned,
    /// waiting at most wait_ms_max (errc::pool_timeout) behind at most queue_max other waiters
    /// (errc::pool_queue_full).
    boost::asio::awaitable<outcome<pooled_connection>> acquire();

    /// Lends a connection as acquire() does, waiting at most `wait` instead of wait_ms_max: for
    /// a caller that may wait for a whole connect (a placement actor opening its connection
    /// before the engine says it is ready).
    boost::asio::awaitable<outcome<pooled_connection>> acquire(std::chrono::milliseconds wait);

    /// Returns a snapshot of the gauges and counters.
    pool_stats stats() const;

    /// Returns the pool's name.
    const std::string& name() const noexcept;

    /// Fails every waiter with errc::pool_closed, closes idle connections, and closes lent ones
    /// as they come back. Later acquires fail at once. Callable from any thread: it runs on the
    /// pool's executor, at once when called there.
    void close();

private:
    std::shared_ptr<detail::pool_state> state_;
};

/// Holds the pools of the engine: the placement pool, split over the event-loop threads, and the
/// settlement, read, standby and background pools of thread 0. `read` is on the primary;
/// `standby`, on database.read_url, exists only when that is set (db/read_router.hpp decides
/// which of the two a read uses).
struct pools {
    /// One per event-loop thread, made with that thread's executor: a placement actor borrows
    /// from the pool of its own thread. Together they open at most
    /// database.pools.placement.size_max connections, and they are reported as one pool.
    std::vector<std::unique_ptr<pool>> placement;
    std::unique_ptr<pool> settlement;
    std::unique_ptr<pool> read;
    std::unique_ptr<pool> standby;  ///< null without a standby
    std::unique_ptr<pool> background;

    /// Creates the pools from the settings: one placement pool per executor of `threads` (one
    /// per event-loop thread, at least one), the others on threads[0]. `standby` is made on
    /// `standby_conninfo` when it is not empty. The placement sessions run with
    /// synchronous_commit = `placement_commit` when it is not empty (and the pools send startup
    /// options: database.session_timeouts).
    static pools make(std::span<const boost::asio::any_io_executor> threads,
                      const database_settings& settings, const std::string& primary_conninfo,
                      const std::string& standby_conninfo = {},
                      const std::string& placement_commit = {});

    /// Returns a snapshot of each pool's figures, the placement pools summed into one entry
    /// named "placement", in a fixed order (placement, settlement, read, standby when there is
    /// one, background). Callable
    /// from any thread.
    std::vector<pool_stats> stats() const;

    /// Closes every pool, each on its own executor (at once when called there).
    void close();
};

}  // namespace fulltime::db
