#pragma once
/// Pushes `bet_settled` to the bettor's open /v1/bets sessions after the settlement committed:
/// a loop on the io_context reads the outbox in commit order (docs/design.md's outbox: rows of
/// finished transactions only, by (xact_id, outbox_id)) and hands each settlement to the
/// connection registry. Pushes are notifications, not the record: the cursor lives in memory and
/// starts at the outbox's tail, so a bettor who was not connected reads the result with a `bets`
/// request.

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::metrics {
class registry;
}  // namespace fulltime::metrics

namespace fulltime::net {

class connection_registry;

/// Runs the push loop until `stop` is set (checked after every pass). Registers its counters in
/// `metrics`. Never throws; database errors are logged and retried on the next pass.
boost::asio::awaitable<void> run_settlement_pushes(db::pool& pool, connection_registry& sessions,
                                                   metrics::registry& metrics,
                                                   std::chrono::milliseconds interval,
                                                   std::shared_ptr<const bool> stop);

}  // namespace fulltime::net
