#pragma once
/// The bettor's reads over the bets WebSocket: the account's balance and its bets, newest first
/// (docs/protocol.md). Each is one read-only statement outside any explicit transaction.

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace fulltime::db {

/// Reads the available and reserved balance of `account_id`; nullopt when the account does not
/// exist. A row of unexpected shape is errc::bad_result.
boost::asio::awaitable<outcome<std::optional<bets::balance>>> read_balance(connection& conn,
                                                                           std::int64_t account_id);

/// Lists at most `limit` (1..bets::bets_limit_max) bets of `account_id` that match `status`, newest
/// first, each with its effective settlement when it has one: the highest settle or cancel version
/// that no reversal undid. A row of unexpected shape is errc::bad_result.
boost::asio::awaitable<outcome<std::vector<bets::bet_line>>> list_bets(connection& conn,
                                                                       std::int64_t account_id,
                                                                       bets::status_filter status,
                                                                       std::int64_t limit);

}  // namespace fulltime::db
