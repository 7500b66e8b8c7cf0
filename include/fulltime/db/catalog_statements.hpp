#pragma once
/// The catalog written by the feed: events, markets, selections, odds, status and the market's
/// exposure shard rows (docs/protocol-feed.md; the update rules are in
/// docs/protocol-feed.md). Each message is one short transaction.

#include "fulltime/config/config.hpp"
#include "fulltime/core/feed_protocol.hpp"
#include "fulltime/db/connection.hpp"
#include "fulltime/db/transaction.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>

namespace fulltime::db {

/// Names how a catalog message ended. Everything but `applied` wrote nothing.
enum class catalog_status {
    applied = 1,
    invalid,  ///< the message conflicts with a default (e.g. stake_min above it)
    unknown_market,
    unknown_selection,  ///< not a selection of the named market
    market_closed,      ///< a closed market stays closed and keeps its odds
    conflict,  ///< changes what cannot change (event, shard count, a limit below liability)
};

/// Returns the snake_case wire code of a status ("unknown_market", ...).
std::string_view to_string(catalog_status s) noexcept;

/// Holds the answer to one catalog message.
struct catalog_result {
    catalog_status status = catalog_status::applied;
    bool created = false;  ///< a market message created the market
    std::string message;   ///< why, for a refusal; one sentence fit for a producer
};

/// Creates or updates a market with its event, selections and exposure shards.
boost::asio::awaitable<outcome<catalog_result>> apply_market(connection& conn,
                                                             feed::market_message message,
                                                             market_defaults defaults,
                                                             transaction_options options,
                                                             std::size_t lock_retries_max);

/// Sets the odds of one selection of a market that is not closed.
boost::asio::awaitable<outcome<catalog_result>> apply_odds(connection& conn,
                                                           feed::odds_message message,
                                                           transaction_options options,
                                                           std::size_t lock_retries_max);

/// Suspends or resumes a market that is not closed (idempotent).
boost::asio::awaitable<outcome<catalog_result>> apply_status(connection& conn,
                                                             feed::status_message message,
                                                             transaction_options options,
                                                             std::size_t lock_retries_max);

}  // namespace fulltime::db
