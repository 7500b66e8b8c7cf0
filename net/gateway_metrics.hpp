#pragma once
/// The gateway's series in the metrics registry. Label sets are bounded: routes by their
/// configured name (the template, never the raw path), endpoints by the two WebSocket paths,
/// codes by the HTTP status set, methods by Beast's verbs.

#include "fulltime/core/latency_histogram.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/net/endpoint_handlers.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace fulltime::db {
struct pools;
}  // namespace fulltime::db

namespace fulltime::net::detail {

/// Names why a connection was refused with 503: `connections_max` reached, its source address's
/// share (connections_per_address_max) or its account's or producer's share of WebSocket
/// sessions (sessions_per_account_max) taken.
enum class refusal : std::uint8_t { connections, address, account };

/// Returns the `reason` label of a refusal, also the name the log uses.
std::string_view refusal_name(refusal r) noexcept;

/// Holds references to the gateway's counters and gauges.
class gateway_metrics {
public:
    /// Registers the gateway's series in `registry`; the count of tokens verified by a
    /// previous secret only when `previous_token_key` (one is configured).
    gateway_metrics(metrics::registry& registry, bool previous_token_key);

    /// Counts one HTTP response by route name and status code.
    void count_request(std::string_view route, unsigned code);
    /// Records how long one served request took, from its last byte read to its response
    /// written, by route name, method (a Beast verb name, so a bounded set) and status class.
    void observe_request(std::string_view route, std::string_view method, unsigned code,
                         std::chrono::microseconds elapsed);
    /// Appends fulltime_http_requests_total and fulltime_http_request_duration_seconds (a
    /// collector: the series appear as they occur).
    void render_requests(std::string& out) const;

    /// Returns the session gauge of an endpoint.
    metrics::gauge& websocket_sessions(ws_endpoint e) noexcept;
    /// Returns the message counter of an endpoint.
    metrics::counter& ws_messages(ws_endpoint e) noexcept;

    /// Counts one token that verified, by the secret of the keyring that verified it.
    void count_token(token::key k) noexcept;

    /// Returns the counter of connections refused for `r`.
    metrics::counter& rejected_connections(refusal r) noexcept;

    metrics::gauge& open_connections;
    metrics::gauge& connections_max;     ///< gateway.connections_max in force (maybe lowered)
    metrics::counter& accept_failures;   ///< accepts that failed (out of descriptors, mostly)
    metrics::counter& frames_too_big;    ///< WebSocket messages over frame_bytes_max (1009)
    metrics::counter& busy;              ///< messages refused over the in-flight limit
    metrics::counter& slow_consumers;    ///< sessions closed because their queue was full
    metrics::counter& sessions_expired;  ///< sessions closed because their token expired
    metrics::gauge& queued_bytes;        ///< bytes queued on all WebSocket sessions
    metrics::counter& handler_errors;    ///< handlers that threw

private:
    metrics::counter& rejected_connections_;
    metrics::counter& rejected_address_;
    metrics::counter& rejected_account_;
    metrics::gauge& sessions_bets_;
    metrics::gauge& sessions_feed_;
    metrics::counter& messages_bets_;
    metrics::counter& messages_feed_;
    metrics::counter& tokens_current_;
    /// Null without a previous secret: its series then does not exist, which is how /metrics
    /// shows that no rollover is under way.
    metrics::counter* tokens_previous_;
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, unsigned>, std::uint64_t, std::less<>> requests_;
    /// Keyed by route, method and status class; a histogram is not movable, hence the pointer.
    std::map<std::tuple<std::string, std::string, std::string>,
             std::unique_ptr<metrics::latency_histogram>, std::less<>>
        durations_;
};

/// Appends every pool's gauges and counters as fulltime_db_pool_* series labelled by pool.
void render_pool_metrics(const db::pools& pools, std::string& out);

}  // namespace fulltime::net::detail
