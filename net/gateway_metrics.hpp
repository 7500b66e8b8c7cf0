#pragma once
/// The gateway's series in the metrics registry. Label sets are bounded: routes by their
/// configured name, endpoints by the two WebSocket paths, codes by the HTTP status set.

#include "fulltime/core/metrics.hpp"
#include "fulltime/net/endpoint_handlers.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace fulltime::db {
struct pools;
}  // namespace fulltime::db

namespace fulltime::net::detail {

/// Holds references to the gateway's counters and gauges.
class gateway_metrics {
public:
    /// Registers the gateway's series in `registry`.
    explicit gateway_metrics(metrics::registry& registry);

    /// Counts one HTTP response by route name and status code.
    void count_request(std::string_view route, unsigned code);
    /// Appends fulltime_http_requests_total (a collector: the series appear as they occur).
    void render_requests(std::string& out) const;

    /// Returns the session gauge of an endpoint.
    metrics::gauge& websocket_sessions(ws_endpoint e) noexcept;
    /// Returns the message counter of an endpoint.
    metrics::counter& ws_messages(ws_endpoint e) noexcept;

    metrics::gauge& open_connections;
    metrics::counter& rejected_connections;  ///< refused over connections_max
    metrics::counter& frames_too_big;        ///< WebSocket messages over frame_bytes_max (1009)
    metrics::counter& busy;                  ///< messages refused over the in-flight limit
    metrics::counter& slow_consumers;        ///< sessions closed because their queue was full
    metrics::counter& handler_errors;        ///< handlers that threw

private:
    metrics::gauge& sessions_bets_;
    metrics::gauge& sessions_feed_;
    metrics::counter& messages_bets_;
    metrics::counter& messages_feed_;
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, unsigned>, std::uint64_t, std::less<>> requests_;
};

/// Appends every pool's gauges and counters as fulltime_db_pool_* series labelled by pool.
void render_pool_metrics(const db::pools& pools, std::string& out);

}  // namespace fulltime::net::detail
