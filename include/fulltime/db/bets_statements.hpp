#pragma once
/// The bettor's reads over the bets WebSocket: the account's balance and its bets, newest first
/// (docs/protocol.md), from the write tables (list_bets) or from the read model (list_bet_views,
/// docs/schema.md "Read model"). Each is one read-only statement outside any explicit
/// transaction.

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>

namespace fulltime::db {

/// Reads the available and reserved balance of `account_id`; nullopt when the account does not
/// exist. A row of unexpected shape is errc::bad_result.
boost::asio::awaitable<outcome<std::optional<bets::balance>>> read_balance(connection& conn,
                                                                           std::int64_t account_id);

/// Lists at most `limit` (1..bets::bets_limit_max) bets of `account_id` that match `status`, newest
/// first, from bets and bet_settlements, each with its effective settlement when it has one: the
/// highest settle or cancel version that no reversal undid. `before`: only bets with a smaller
/// bet_id (the previous page's next_before). The page's next_before is its last bet_id when more
/// bets match. A row of unexpected shape is errc::bad_result.
boost::asio::awaitable<outcome<bets::bets_page>> list_bets(connection& conn,
                                                           std::int64_t account_id,
                                                           bets::status_filter status,
                                                           std::int64_t limit,
                                                           std::optional<std::int64_t> before);

/// Lists the same page as list_bets, in the same shape and order, from the read model
/// (bet_view_bets with each bet's bet_view_results row): one backward range scan of the
/// account's primary-key entries (of bet_view_open's, which holds the open bets only, for
/// `status` open). It shows what the projector has applied, so it may lag the write tables by
/// the projector's delay.
boost::asio::awaitable<outcome<bets::bets_page>> list_bet_views(connection& conn,
                                                                std::int64_t account_id,
                                                                bets::status_filter status,
                                                                std::int64_t limit,
                                                                std::optional<std::int64_t> before);

}  // namespace fulltime::db
