#pragma once
/// The live reads behind GET /v1/diagnostics: the settlement backlog and the terminal states
/// (the database's activity comes from the peak sampler's newest sample). Each is one read-only
/// statement returning one JSON document built by PostgreSQL, which the route embeds as it is; none
/// locks a row.

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>

namespace fulltime::db {

/// Returns, as a JSON array, at most `markets_max` markets with result events past their
/// applied_seq, the longest waiting first: market_id, applied_seq, current_seq,
/// checkpoint_bet_id, pending_events, oldest_age_ms and waiting_for_gap.
boost::asio::awaitable<outcome<std::string>> read_settlement_backlog_json(connection& conn,
                                                                          std::int64_t markets_max);

/// Returns, as a JSON object, the terminal states (0008): `refused_events` (at most
/// `refused_events_max` events refused as a whole, the newest first), `skipped_last_day` (the
/// bets skipped per code by the last day's applied events) and `overdue_reservation_incidents`
/// (the open ones).
boost::asio::awaitable<outcome<std::string>> read_terminal_states_json(
    connection& conn, std::int64_t refused_events_max);

}  // namespace fulltime::db
