#pragma once
/// The catalog half of the result feed: `market`, `odds`, `suspend` and `resume` messages on the
/// /v1/feed WebSocket and on `POST /v1/feed` (producer token), each acknowledged only after its
/// transaction committed (docs/protocol-feed.md).

#include "fulltime/net/endpoint_handlers.hpp"
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

/// Holds the feed's WebSocket handlers and its HTTP route, which share their metrics.
struct feed_endpoint {
    endpoint_handlers handlers;  ///< for services.feed
    http_routes routes;          ///< POST /v1/feed, for services.routes
};

/// Returns the feed's handlers and route and registers their metrics in `registry`. The
/// references must outlive the gateway; the handlers use the `background` pool, on the
/// gateway's single-threaded io_context.
feed_endpoint make_feed_endpoint(const config& cfg, db::pools& pools, metrics::registry& registry);

}  // namespace fulltime::net
