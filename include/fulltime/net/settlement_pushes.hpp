#pragma once
/// Pushes `bet_settled` to the bettor's open /v1/bets sessions after the settlement committed:
/// a loop on the io_context reads the outbox in commit order (docs/design.md's outbox: rows of
/// finished transactions only, by (xact_id, outbox_id)) and hands each settlement to the
/// connection registry. Its cursor is its consumer's row in outbox_cursors, stored after every
/// page: a restart resumes after the last stored page, so bettors connected then get the pushes
/// of settlements made while the engine was down, and a page read again after a crash pushes
/// again (at least once; clients dedupe by bet and version). Pushes are notifications, not the
/// record: a bettor who was not connected reads the result with a `bets` request. The loop also
/// purges the outbox rows every consumer has read, a bounded round at most once per interval.

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulltime::db {
class pool;
struct outbox_row;
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
/// cancel of a `settlement_batch` row (entry i being element i of its arrays `account_id`,
/// `bet_id`, `version`, `kind`, `outcome` and `payout`), or the one of a `bet_settled` row
/// (written before migration 0004, the account being the row's). Reversals, other topics and
/// entries that do not parse give none.
std::vector<announced_settlement> announced_settlements(std::string_view topic,
                                                        std::optional<std::int64_t> account_id,
                                                        std::string_view payload);

/// Holds one settlement to push, with the transaction id of the row that announced it (a
/// session told of it reads it in `bets` only once the read model's projector has passed that
/// transaction).
struct announced_push {
    announced_settlement settlement;
    std::uint64_t xid = 0;
};

/// Returns the settlements a page of outbox rows announces to accounts for which `open` holds,
/// in page order. It runs on an event loop that also serves placements, and a page holds up to
/// limits::push_scan_rows_max rows of up to settlement.batch_bets_max entries each (a row of 500
/// entries parses in about 0.17 ms on the 2-core benchmark machine, so a full page of them would
/// hold the loop for a third of a second): it gives the loop back after every row it parses, so
/// that a placement waits for one row at most, never for a page.
boost::asio::awaitable<std::vector<announced_push>> announced_to_open_sessions(
    const std::vector<db::outbox_row>& rows, std::function<bool(std::int64_t)> open);

/// Holds the push loop's settings (config.hpp's settlement section).
struct push_settings {
    std::chrono::milliseconds interval{50};            ///< between two passes over the outbox
    std::string consumer{"push"};                      ///< the loop's row in outbox_cursors
    std::chrono::milliseconds purge_interval{10'000};  ///< at most one purge round per interval
    std::int64_t purge_batch_max = 5000;               ///< outbox rows per purge transaction
};

/// Runs the push loop until `stop` is set (checked after every pass, page and purge batch).
/// Registers its counters in `metrics`. Never throws; database errors are logged and retried on
/// the next pass.
boost::asio::awaitable<void> run_settlement_pushes(db::pool& pool, connection_registry& sessions,
                                                   metrics::registry& metrics,
                                                   push_settings settings,
                                                   std::shared_ptr<const bool> stop);

}  // namespace fulltime::net
