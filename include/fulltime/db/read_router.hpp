#pragma once
/// Where a read runs (docs/architecture.md, "Reads"): on the hot standby when it is fresh enough
/// for that read and has replayed the reader's own writes, else on the primary. Nothing fails
/// because the standby is slow or gone: a read it cannot serve, or that fails there (a lost
/// connection, a query cancelled by recovery), runs on the primary.
///
/// Staleness. The router samples the primary's WAL insert position every
/// read.sample_interval_ms and keeps the samples (time, LSN) of the last
/// limits::read_lsn_samples_max intervals; it samples the standby's replay position as often.
/// Everything the primary had written when a sample was taken is on the standby once its replay
/// passes that sample's LSN, so the standby is at most (now - t) behind, t being the time of the
/// newest primary sample at or below its last replay position. The bound grows by itself while
/// samples fail: a standby that stops answering becomes too stale for every read.
///
/// Read-your-writes. A read may carry the commit LSN of its session's last write (the primary's
/// insert position read right after that commit). It runs on the standby only once the standby
/// has replayed past it: at once when the last sample shows so, else after polling the standby
/// every limits::read_ryw_poll_ms for at most read.ryw_wait_ms; otherwise it runs on the primary.
/// The poll is a statement of its own before the read's, so the read's snapshot is taken after
/// the replay it saw.
///
/// Threading: the router, its pools and its sampler run on one thread (the main loop); stats()
/// may be called from any thread.

#include "fulltime/db/connection.hpp"
#include "fulltime/db/pool.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fulltime::db {

/// Parses a pg_lsn's text ("16/B374D848") as its 64-bit position; nullopt when it is not one.
std::optional<std::uint64_t> parse_lsn(std::string_view text) noexcept;

/// Returns the text form of a 64-bit WAL position ("16/B374D848").
std::string format_lsn(std::uint64_t lsn);

/// Names the server a read ran on.
enum class read_target { standby = 0, primary };

/// Names why a read ran where it did, for the counters.
enum class read_route {
    fresh = 0,       ///< standby: fresh enough and past the session's write
    waited,          ///< standby: after waiting for its replay to pass the session's write
    no_standby,      ///< primary: none configured, or the read accepts no staleness
    standby_down,    ///< primary: the standby's last sample failed (down, or not a standby)
    stale,           ///< primary: the standby is further behind than the read accepts
    behind_write,    ///< primary: the standby did not pass the session's write in time
    standby_failed,  ///< primary: the standby failed the read (lost, recovery conflict, busy)
    count_
};

/// Returns the label of a route ("fresh", "stale", ...).
std::string_view route_name(read_route r) noexcept;

/// Holds what a read accepts.
struct read_need {
    /// The most the standby may be behind the primary (zero: the primary only).
    std::chrono::milliseconds staleness_max{0};
    /// The commit LSN of the session's last write, which the read must see (0: none).
    std::uint64_t after_lsn = 0;
};

/// Holds the router's settings (config read.*).
struct read_router_settings {
    std::chrono::milliseconds sample_interval{100};
    std::chrono::milliseconds ryw_wait{200};
};

/// Holds a snapshot of the router's state for metrics and diagnostics.
struct read_router_stats {
    bool has_standby = false;
    bool standby_up = false;               ///< its last sample succeeded
    std::int64_t staleness_ms = -1;        ///< its bound now; -1: unknown (no sample yet)
    std::uint64_t primary_lsn = 0;         ///< last primary sample
    std::uint64_t standby_replay_lsn = 0;  ///< last standby sample
    std::uint64_t sample_failures = 0;     ///< standby samples that failed
    /// Reads per route, indexed by read_route.
    std::uint64_t routed[static_cast<std::size_t>(read_route::count_)] = {};
};

/// Routes reads between the primary's `read` pool and the `standby` pool.
class read_router {
public:
    /// `primary` must outlive the router; `standby` may be null (every read goes to the primary).
    read_router(pool& primary, pool* standby, read_router_settings settings);
    ~read_router();
    read_router(const read_router&) = delete;
    read_router& operator=(const read_router&) = delete;

    /// Lends a connection for a read that needs `need`, on the standby when it serves it (see
    /// above), else on the primary.
    struct lent {
        pooled_connection conn;
        read_target target = read_target::primary;
        read_route route = read_route::no_standby;
    };
    boost::asio::awaitable<outcome<lent>> acquire(read_need need);

    /// Lends a connection of the primary (a read the standby failed), counted as standby_failed.
    boost::asio::awaitable<outcome<lent>> acquire_primary_after_failure();

    /// Runs `f` (connection& -> awaitable<outcome<T>>) where `need` allows; when it fails on the
    /// standby for any reason but a result of unexpected shape, runs it again on the primary.
    /// `ran_on`, when not null, receives where the answer came from.
    template <class F>
    auto run(read_need need, F f, read_target* ran_on = nullptr)
        -> std::invoke_result_t<F, connection&> {
        auto conn = co_await acquire(need);
        if (!conn) {
            co_return conn.error();
        }
        auto answer = co_await f(*conn->conn);
        if (!answer && conn->target == read_target::standby &&
            answer.error().code != errc::bad_result) {
            note_standby_failure(answer.error());
            conn->conn = pooled_connection{};
            conn = co_await acquire_primary_after_failure();
            if (!conn) {
                co_return conn.error();
            }
            answer = co_await f(*conn->conn);
        }
        if (ran_on != nullptr) {
            *ran_on = conn->target;
        }
        co_return answer;
    }

    /// Samples the primary and the standby every sample_interval until `stopped` is set. Spawn
    /// it once on the router's thread.
    boost::asio::awaitable<void> sample(std::shared_ptr<const std::atomic<bool>> stopped);

    /// Runs one round of sampling now (tests).
    boost::asio::awaitable<void> sample_once();

    /// Returns the router's state.
    read_router_stats stats() const;

    /// Returns whether a standby is configured.
    bool has_standby() const noexcept;

    struct state;

private:
    void note_standby_failure(const failure& f);
    std::shared_ptr<state> state_;
};

}  // namespace fulltime::db
