#pragma once
/// The operator API around the book (admin token): create an account, keyed deposits and
/// withdrawals, and an account's balances fresh from the primary (docs/protocol-feed.md).

#include "fulltime/net/http_route.hpp"

namespace fulltime {
struct config;
namespace db {
struct pools;
}  // namespace db
namespace metrics {
class registry;
}  // namespace metrics
}  // namespace fulltime

namespace fulltime::net {

/// Returns the routes of POST /v1/accounts, POST /v1/accounts/{id}/deposits|withdrawals and
/// GET /v1/accounts/{id}, and registers their metrics in `registry`. The references must outlive
/// the gateway; the routes use the `background` pool (the primary).
http_routes make_operator_routes(const config& cfg, db::pools& pools, metrics::registry& registry);

}  // namespace fulltime::net
