#pragma once
/// The result feed: the catalog messages (`market`, `odds`, `suspend`, `resume`) and the result
/// events (`result`, `rollback_result`, `cancel`, `rollback_cancel`) on the /v1/feed WebSocket
/// and on `POST /v1/feed` (producer token), each acknowledged only after its transaction
/// committed (docs/protocol-feed.md).

#include "fulltime/net/endpoint_handlers.hpp"
#include "fulltime/net/http_route.hpp"

#include <cstdint>
#include <functional>

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

/// Is told that a market has a result event to apply: called with the market's id after a
/// result event's intake committed as stored, and again for every duplicate of it (so a market
/// whose first notification was missed is woken by the producer's resend). Called on the
/// gateway's io_context thread, before the ack is sent; it must not block, and an exception it
/// throws is logged and does not change the ack.
using result_event_hook = std::function<void(std::int64_t market_id)>;

/// Returns the feed's handlers and route and registers their metrics in `registry`. The
/// references must outlive the gateway; the handlers use the `background` pool, on the
/// gateway's single-threaded io_context. `on_result_event`, when set, is called as
/// result_event_hook describes.
feed_endpoint make_feed_endpoint(const config& cfg, db::pools& pools, metrics::registry& registry,
                                 result_event_hook on_result_event = {});

}  // namespace fulltime::net
