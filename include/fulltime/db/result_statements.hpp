#pragma once
/// The result-event intake: a producer's `result`, `rollback_result`, `cancel` or
/// `rollback_cancel` stored in result_events exactly once (docs/design.md "Settlement"; the rules
/// are in db/functions/fulltime_record_result.sql and docs/protocol-feed.md). Each message is one
/// short transaction, acknowledged only after it committed. Also the listing of a market's
/// stored events for its producer.

#include "fulltime/core/feed_protocol.hpp"
#include "fulltime/db/connection.hpp"
#include "fulltime/db/transaction.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fulltime::db {

/// Names how the intake of one result event ended. Only `stored` wrote anything.
enum class result_event_status {
    stored = 1,         ///< new: stored now (a result or cancel also suspended the market)
    duplicate,          ///< stored before, identical: acknowledged again, nothing written
    conflict,           ///< its event_key or (market_id, seq) holds another event
    unknown_market,     ///< no such market
    unknown_selection,  ///< a result names a selection that is not the market's
};

/// Returns the snake_case name of a status ("stored", "unknown_market", ...), which for the
/// refusals is also their wire code.
std::string_view to_string(result_event_status s) noexcept;

/// Holds the answer to one result event.
struct result_event_record {
    result_event_status status = result_event_status::stored;
    /// The stored event's id (stored, duplicate) or the clashing one's (conflict); 0 otherwise.
    std::int64_t result_event_id = 0;
    std::string message;  ///< why, for a refusal; one sentence fit for a producer
};

/// Stores `message` (its normalised payload_json) under `producer` (1..64 bytes, the name in
/// the producer's token) by calling fulltime_record_result in one transaction with `options`'
/// timeouts, retried at most `lock_retries_max` times after a lock timeout. Commits only a
/// `stored` outcome; every other outcome wrote nothing and is rolled back.
boost::asio::awaitable<outcome<result_event_record>> record_result_event(
    connection& conn, feed::result_event_message message, std::string producer,
    transaction_options options, std::size_t lock_retries_max);

/// Returns the newest `limit` result events of `market_id` (seq, event_key, kind, producer,
/// received_at, applied_at, skipped, refusal), newest first, as one JSON array built by
/// PostgreSQL; "[]" for a market without events.
boost::asio::awaitable<outcome<std::string>> list_result_events_json(connection& conn,
                                                                     std::int64_t market_id,
                                                                     std::int64_t limit);

}  // namespace fulltime::db
