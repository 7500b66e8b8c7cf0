#pragma once
/// Pushes `bet_settled` to the bettor's open /v1/bets sessions after the settlement committed:
/// a loop on the io_context reads the outbox in commit order (docs/design.md's outbox: rows of
/// finished transactions only, by (xact_id, outbox_id)) and hands each settlement to the
/// connection registry. Pushes are notifications, not the record: the cursor lives in memory and
/// starts at the outbox's tail, so a bettor who was not connected reads the result with a `bets`
/// request.

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::metrics {
class registry;
}  // namespace fulltime::metrics

namespace fulltime::net {

class connection_registry;

/// Holds one settlement (a settle or a cancel) that an outbox row announces to its bettor.
struct announced_settlement {
    std::int64_t account_id = 0;
    std::int64_t bet_id = 0;
    std::int64_t version = 0;
    std::string outcome;
    std::int64_t payout = 0;  ///< minor units
};

/// Returns the settlements one outbox row announces, in the row's order: every settle and
/// cancel of a `settlement_batch` row, or the one of a `bet_settled` row (written before
/// migration 0004, the account being the row's). Reversals, other topics and entries that do
/// not parse give none.
std::vector<announced_settlement> announced_settlements(std::string_view topic,
                                                        std::optional<std::int64_t> account_id,
                                                        std::string_view payload);

/// Runs the push loop until `stop` is set (checked after every pass). Registers its counters in
/// `metrics`. Never throws; database errors are logged and retried on the next pass.
boost::asio::awaitable<void> run_settlement_pushes(db::pool& pool, connection_registry& sessions,
                                                   metrics::registry& metrics,
                                                   std::chrono::milliseconds interval,
                                                   std::shared_ptr<const bool> stop);

}  // namespace fulltime::net
