#pragma once
/// Market-level HTTP routes (docs/protocol-feed.md):
/// - `POST /v1/markets/{id}/void-overdue` (admin token): the operator's void of the market's
///   open bets past their reservation deadline, as `fulltime void-overdue` does; body optional
///   `{"key":"..","force":true}`.
/// - `GET /v1/feed/markets/{id}/events` (producer token): the market's result events, newest
///   first, with how each one was applied: applied_at, the bets it skipped per terminal-state
///   code and its refusal code. The feed's ack is sent when an event is stored, before it is
///   applied, so this is where a producer reads what its event did.
/// - `GET /v1/markets/{id}/summary` (admin token): the read model's summary of the market per
///   currency (bets, stakes, open and settled, payouts), read where a history read may go
///   (db/read_router.hpp).

#include "fulltime/net/http_route.hpp"

#include <cstdint>
#include <functional>

namespace fulltime {
struct config;
}  // namespace fulltime

namespace fulltime::db {
struct pools;
class read_router;
}  // namespace fulltime::db

namespace fulltime::net {

/// Returns the routes. `on_stored(market)` runs after a void is stored (the engine wakes the
/// market's settlement with it); cfg, pools and reads must outlive the gateway.
http_routes make_market_routes(const config& cfg, db::pools& pools, db::read_router& reads,
                               std::function<void(std::int64_t)> on_stored);

}  // namespace fulltime::net
