#pragma once
/// Time partitions (docs/schema.md, "Time partitions"): the statements of the partition keeper
/// and of `fulltime partitions`. The rules live in db/functions/fulltime_history_*.sql; here is
/// how they are called, and the one step SQL functions cannot take: detaching a partition
/// CONCURRENTLY, which must run outside any transaction.

#include "fulltime/config/config.hpp"
#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::db {

/// Stores `settings.period` and `settings.ahead_periods` in history_settings (a changed period
/// applies to the partitions made after the change) and makes the periods ahead of now with
/// their partitions. Returns the periods it added.
boost::asio::awaitable<outcome<std::int64_t>> ensure_periods(connection& conn,
                                                             const history_settings& settings);

/// Holds what one close attempt did (fulltime_history_close).
struct period_close {
    std::string outcome;                      ///< closed, not_over, running or none
    std::optional<std::string> period_start;  ///< RFC 3339 UTC, "-infinity" for the first
    std::optional<std::string> period_end;
    std::int64_t accounts = 0;  ///< balance rows stored (closed only)
};

/// Closes the oldest open period that ended at least `settings.close_grace_s` ago, in one
/// transaction with `settings.statement_timeout_ms`.
boost::asio::awaitable<outcome<period_close>> close_period(connection& conn,
                                                           const history_settings& settings);

/// Holds one period that has not left, as `fulltime partitions` lists it.
struct history_period {
    std::string period_start;  ///< RFC 3339 UTC, "-infinity" for the first
    std::string period_end;
    std::optional<std::string> closed_at;
    bool dropping = false;                  ///< its partitions are being detached and dropped
    std::vector<std::string> holds;         ///< what keeps it (empty: it may leave)
    std::optional<std::int64_t> open_bets;  ///< checked only when nothing cheaper holds it
    std::optional<std::int64_t> unsettled_markets;
    std::optional<std::int64_t> unconsumed_outbox;
    std::int64_t bets = 0;   ///< rows of its bets partition (the planner's estimate)
    std::int64_t bytes = 0;  ///< size of its four partitions with their indexes
};

/// Lists every period not dropped, oldest first, with what holds each (retention from
/// `settings.retention`).
boost::asio::awaitable<outcome<std::vector<history_period>>> list_periods(
    connection& conn, const history_settings& settings);

/// Drops the oldest period when nothing holds it (fulltime_history_drop_begin), or finishes the
/// drop of one a previous attempt left half done: each of its four partitions is detached
/// CONCURRENTLY (placements and settlements do not wait for it), then dropped. Returns the
/// period's start, or nullopt when the oldest period may not leave. `conn` must not be inside a
/// transaction.
boost::asio::awaitable<outcome<std::optional<std::string>>> drop_oldest_period(
    connection& conn, const history_settings& settings);

/// Holds how far the partitions reach.
struct history_horizon {
    std::int64_t periods_kept = 0;  ///< periods not dropped, the current and those ahead included
    std::int64_t ahead_s = 0;       ///< seconds from now to the end of the last period
};

/// Reads the horizon (one catalog-free statement on history_periods).
boost::asio::awaitable<outcome<history_horizon>> read_history_horizon(connection& conn);

}  // namespace fulltime::db
