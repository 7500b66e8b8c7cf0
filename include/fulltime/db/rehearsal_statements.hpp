#pragma once
/// The SQL of `fulltime rehearse` (app/rehearsal/): its faults (ending the engine's sessions,
/// a session left idle in a transaction) and its checks after the run (every acknowledged bet
/// stored once, every bet of a resulted market settled). The rehearsal drives the engine only
/// through its public interfaces; these run on the rehearsal's own connection to the database.

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fulltime::db {

/// Ends (pg_terminate_backend) every session of this database whose application_name starts
/// with `application_prefix` ("fulltime-placement", or "fulltime-" for all the engine's pools).
/// Returns how many it ended.
boost::asio::awaitable<outcome<std::int64_t>> terminate_sessions(connection& conn,
                                                                 std::string application_prefix);

/// Opens a transaction on `conn` that locks account `account_id`'s row (FOR UPDATE) and leaves
/// it open: the session then sits idle in a transaction until release_row. Returns whether the
/// row exists.
boost::asio::awaitable<outcome<bool>> hold_account_row(connection& conn, std::int64_t account_id);

/// Rolls back the transaction hold_account_row opened.
boost::asio::awaitable<outcome<void>> release_row(connection& conn);

/// Holds one stored bet of a rehearsal.
struct keyed_bet {
    std::string idempotency_key;
    std::int64_t bet_id = 0;
};

/// Returns every bet whose idempotency key starts with `key_prefix`, in key order.
boost::asio::awaitable<outcome<std::vector<keyed_bet>>> read_keyed_bets(connection& conn,
                                                                        std::string key_prefix);

/// Returns how many bets of `market_ids` have no settlement row at all (never settled).
boost::asio::awaitable<outcome<std::int64_t>> count_unsettled_bets(
    connection& conn, std::vector<std::int64_t> market_ids);

}  // namespace fulltime::db
