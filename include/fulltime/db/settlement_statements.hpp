#pragma once
/// Settlement in SQL: one step of a market's settlement (fulltime_settle_step; the rules are in
/// db/functions/fulltime_settle_step.sql), what a finished event skipped or refused, and the scan
/// for events waiting to be settled. The settlement actors decide when to call them
/// (actors/settlement_worker.cpp).

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fulltime::db {

/// Holds the row of one fulltime_settle_step call. A column the step left NULL (or that did not
/// parse) reads as zero or empty; only the status is required.
struct settle_step_row {
    std::string status;  ///< idle, gap, started, fenced, batch, finished or lanes
    std::int64_t seq = 0;
    std::string kind;
    std::int32_t bets = 0;
    std::int32_t effects = 0;
    std::int32_t lanes = 1;  ///< the lanes of the event in progress (1: none)
};

/// Runs one step of `market_id`'s settlement (fulltime_settle_step): at most `batch_bets_max`
/// bets of its next event, waiting at most `lock_timeout_ms` for a lock; an event it starts is
/// settled in `lanes` lanes when the market has more than `lanes` batches of bets. One
/// statement, its own transaction (autocommit); `timeout` bounds the round trip. A result
/// without exactly one row or without a status is errc::bad_result.
boost::asio::awaitable<outcome<settle_step_row>> settle_step(
    connection& conn, std::int64_t market_id, std::int64_t batch_bets_max,
    std::int64_t lock_timeout_ms, std::int64_t lanes, std::chrono::milliseconds timeout);

/// Runs one batch of lane `lane` of `market_id`'s event in progress (fulltime_settle_lane),
/// once its step answered `lanes`: status batch, finished (the lane is done) or idle (no such
/// lane now); `lanes` in the row is left 1. As settle_step otherwise.
boost::asio::awaitable<outcome<settle_step_row>> settle_lane(
    connection& conn, std::int64_t market_id, std::int64_t lane, std::int64_t batch_bets_max,
    std::int64_t lock_timeout_ms, std::chrono::milliseconds timeout);

/// Holds what a finished result event skipped and whether it was refused as a whole
/// (result_events.skipped and .refusal).
struct event_outcome {
    /// The bets skipped per terminal-state code, in the order PostgreSQL returned them.
    std::vector<std::pair<std::string, std::int64_t>> skipped;
    std::string refusal;  ///< the refusal code; empty when the event was not refused
};

/// Reads the outcome of event `seq` of `market_id`; nullopt when there is no such event.
/// Skipped counts that are not integers are left out. `timeout` bounds the round trip.
boost::asio::awaitable<outcome<std::optional<event_outcome>>> read_event_outcome(
    connection& conn, std::int64_t market_id, std::int64_t seq, std::chrono::milliseconds timeout);

/// Holds one market whose result events wait past its applied_seq.
struct backlog_market {
    std::int64_t market_id = 0;
    std::int64_t events = 0;         ///< events past applied_seq
    std::int64_t oldest_age_ms = 0;  ///< since the oldest of them was received
};

/// Returns every market with events past its applied_seq, the longest waiting first. A row of
/// unexpected shape is left out. `timeout` bounds the round trip.
boost::asio::awaitable<outcome<std::vector<backlog_market>>> scan_settlement_backlog(
    connection& conn, std::chrono::milliseconds timeout);

}  // namespace fulltime::db
