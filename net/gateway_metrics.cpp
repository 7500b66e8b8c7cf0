#include "net/gateway_metrics.hpp"

#include "fulltime/db/pool.hpp"

#include <cstdio>
#include <functional>
#include <vector>

namespace fulltime::net::detail {

namespace {

std::string endpoint_label(ws_endpoint e) { return metrics::label("endpoint", path_of(e)); }

constexpr std::string_view rejected_name = "fulltime_gateway_rejected_connections_total";
constexpr std::string_view rejected_help =
    "Connections refused with 503, by reason: connections_max reached (connections), the source "
    "address's share taken (address), the account's or producer's share of WebSocket sessions "
    "taken (account).";

metrics::counter& make_rejected(metrics::registry& r, refusal why) {
    return r.make_counter(std::string(rejected_name), std::string(rejected_help),
                          metrics::label("reason", refusal_name(why)));
}

constexpr std::string_view tokens_verified = "fulltime_tokens_verified_total";
constexpr std::string_view tokens_verified_help =
    "Tokens that verified (signature, payload and expiry), by the secret that verified them.";

// The acquire waits as a Prometheus histogram, folded from each pool's fine buckets: a fine
// bucket counts under `le` when its upper bound is at most `le`, so a bucket count never
// includes a wait longer than its bound. The last fine bucket (past about 2.5 s) holds every
// longer wait and counts only under +Inf.
void render_acquire_waits(const std::vector<db::pool_stats>& stats, std::string& out) {
    constexpr std::string_view name = "fulltime_db_pool_acquire_wait_seconds";
    constexpr std::int64_t bounds_us[] = {100,    1'000,   5'000,   10'000,
                                          50'000, 100'000, 500'000, 1'000'000};
    metrics::append_header(out, name,
                           "Time an acquire waited for a connection (zero when one was idle).",
                           "histogram");
    char buf[48];
    for (const auto& s : stats) {
        const std::string pool = metrics::label("pool", s.name);
        std::uint64_t count = 0;
        for (const auto n : s.acquire_waits) {
            count += n;
        }
        for (const auto le : bounds_us) {
            std::uint64_t below = 0;
            for (std::size_t i = 0; i + 1 < s.acquire_waits.size(); ++i) {
                if (metrics::latency_window::upper_bound_us(i) <= le) {
                    below += s.acquire_waits[i];
                }
            }
            std::snprintf(buf, sizeof buf, "%g", static_cast<double>(le) / 1e6);
            metrics::append_sample(out, std::string(name) + "_bucket",
                                   pool + "," + metrics::label("le", buf), std::to_string(below));
        }
        metrics::append_sample(out, std::string(name) + "_bucket",
                               pool + "," + metrics::label("le", "+Inf"), std::to_string(count));
        std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(s.acquire_wait_us_total) / 1e6);
        metrics::append_sample(out, std::string(name) + "_sum", pool, buf);
        metrics::append_sample(out, std::string(name) + "_count", pool, std::to_string(count));
    }
}

}  // namespace

std::string_view refusal_name(refusal r) noexcept {
    switch (r) {
        case refusal::connections:
            return "connections";
        case refusal::address:
            return "address";
        case refusal::account:
            return "account";
    }
    return "connections";
}

gateway_metrics::gateway_metrics(metrics::registry& r, bool previous_token_key)
    : open_connections(
          r.make_gauge("fulltime_gateway_open_connections",
                       "Client connections open on the gateway (HTTP and WebSocket).")),
      connections_max(r.make_gauge(
          "fulltime_gateway_connections_max",
          "Connections the gateway accepts before it refuses: gateway.connections_max, or less "
          "when the descriptor limit cannot hold it.")),
      accept_failures(r.make_counter(
          "fulltime_gateway_accept_failures_total",
          "Accepts that failed, mostly for want of file descriptors (EMFILE, ENFILE).")),
      frames_too_big(r.make_counter("fulltime_ws_frames_too_big_total",
                                    "WebSocket messages over frame_bytes_max, closed with 1009.")),
      busy(r.make_counter("fulltime_ws_busy_total",
                          "WebSocket requests refused as busy over the in-flight limit.")),
      slow_consumers(r.make_counter(
          "fulltime_ws_slow_consumers_total",
          "WebSocket sessions closed because the client did not drain its write queue.")),
      sessions_expired(
          r.make_counter("fulltime_ws_sessions_expired_total",
                         "WebSocket sessions closed (4001) because their token expired.")),
      queued_bytes(r.make_gauge("fulltime_ws_queued_bytes",
                                "Bytes queued for writing on all WebSocket sessions.")),
      handler_errors(r.make_counter("fulltime_ws_handler_errors_total",
                                    "WebSocket message handlers that threw (internal error).")),
      rejected_connections_(make_rejected(r, refusal::connections)),
      rejected_address_(make_rejected(r, refusal::address)),
      rejected_account_(make_rejected(r, refusal::account)),
      sessions_bets_(r.make_gauge("fulltime_gateway_websocket_sessions",
                                  "Open WebSocket sessions by endpoint.",
                                  endpoint_label(ws_endpoint::bets))),
      sessions_feed_(r.make_gauge("fulltime_gateway_websocket_sessions",
                                  "Open WebSocket sessions by endpoint.",
                                  endpoint_label(ws_endpoint::feed))),
      messages_bets_(r.make_counter("fulltime_ws_messages_total",
                                    "WebSocket messages received by endpoint.",
                                    endpoint_label(ws_endpoint::bets))),
      messages_feed_(r.make_counter("fulltime_ws_messages_total",
                                    "WebSocket messages received by endpoint.",
                                    endpoint_label(ws_endpoint::feed))),
      tokens_current_(r.make_counter(std::string(tokens_verified),
                                     std::string(tokens_verified_help),
                                     metrics::label("key", "current"))),
      tokens_previous_(previous_token_key ? &r.make_counter(std::string(tokens_verified),
                                                            std::string(tokens_verified_help),
                                                            metrics::label("key", "previous"))
                                          : nullptr) {}

void gateway_metrics::count_request(std::string_view route, unsigned code) {
    std::lock_guard lock(mutex_);
    auto it = requests_.find(std::make_pair(std::string(route), code));
    if (it == requests_.end()) {
        requests_.emplace(std::make_pair(std::string(route), code), 1);
    } else {
        ++it->second;
    }
}

void gateway_metrics::observe_request(std::string_view route, std::string_view method,
                                      unsigned code, std::chrono::microseconds elapsed) {
    // 2xx, 4xx, 5xx: the class bounds the series where a code per route would multiply them.
    const std::string status_class = std::to_string(code / 100) + "xx";
    std::lock_guard lock(mutex_);
    auto key = std::make_tuple(std::string(route), std::string(method), status_class);
    auto it = durations_.find(key);
    if (it == durations_.end()) {
        it = durations_.emplace(std::move(key), std::make_unique<metrics::latency_histogram>())
                 .first;
    }
    it->second->record(elapsed);
}

void gateway_metrics::render_requests(std::string& out) const {
    constexpr std::string_view name = "fulltime_http_requests_total";
    metrics::append_header(out, name, "HTTP responses by route name and status code.", "counter");
    std::lock_guard lock(mutex_);
    for (const auto& [key, count] : requests_) {
        const std::string labels = metrics::label("route", key.first) + "," +
                                   metrics::label("code", std::to_string(key.second));
        metrics::append_sample(out, name, labels, std::to_string(count));
    }
    constexpr std::string_view duration = "fulltime_http_request_duration_seconds";
    metrics::append_header(out, duration,
                           "Time from an HTTP request read to its response written, by route "
                           "name, method and status class (WebSocket upgrades not included).",
                           "histogram");
    for (const auto& [key, histogram] : durations_) {
        const auto& [route, method, status_class] = key;
        histogram->render_series(out, duration,
                                 metrics::label("route", route) + "," +
                                     metrics::label("method", method) + "," +
                                     metrics::label("status_class", status_class));
    }
}

metrics::counter& gateway_metrics::rejected_connections(refusal r) noexcept {
    switch (r) {
        case refusal::connections:
            return rejected_connections_;
        case refusal::address:
            return rejected_address_;
        case refusal::account:
            return rejected_account_;
    }
    return rejected_connections_;
}

metrics::gauge& gateway_metrics::websocket_sessions(ws_endpoint e) noexcept {
    return e == ws_endpoint::bets ? sessions_bets_ : sessions_feed_;
}

metrics::counter& gateway_metrics::ws_messages(ws_endpoint e) noexcept {
    return e == ws_endpoint::bets ? messages_bets_ : messages_feed_;
}

void gateway_metrics::count_token(token::key k) noexcept {
    if (k == token::key::current) {
        tokens_current_.inc();
    } else if (tokens_previous_ != nullptr) {
        // Always so: a previous secret verifies a token only when one is configured.
        tokens_previous_->inc();
    }
}

void render_pool_metrics(const db::pools& pools, std::string& out) {
    const std::vector<db::pool_stats> stats = pools.stats();
    struct family {
        std::string_view name;
        std::string_view help;
        std::string_view type;
        std::function<std::string(const db::pool_stats&)> value;
    };
    const auto num = [](auto v) { return std::to_string(v); };
    const family families[] = {
        {"fulltime_db_pool_in_use", "Connections lent out.", "gauge",
         [&](const db::pool_stats& s) { return num(s.in_use); }},
        {"fulltime_db_pool_idle", "Open connections waiting to be lent.", "gauge",
         [&](const db::pool_stats& s) { return num(s.idle); }},
        {"fulltime_db_pool_opening", "Connections being opened.", "gauge",
         [&](const db::pool_stats& s) { return num(s.opening); }},
        {"fulltime_db_pool_waiting", "Acquires waiting for a connection.", "gauge",
         [&](const db::pool_stats& s) { return num(s.waiting); }},
        {"fulltime_db_pool_size_max", "Connections the pool may open.", "gauge",
         [&](const db::pool_stats& s) { return num(s.size_max); }},
        {"fulltime_db_pool_acquired_total", "Connections lent.", "counter",
         [&](const db::pool_stats& s) { return num(s.acquired_total); }},
        {"fulltime_db_pool_acquire_timeouts_total",
         "Acquires that gave up after the pool's wait bound.", "counter",
         [&](const db::pool_stats& s) { return num(s.timeouts_total); }},
        {"fulltime_db_pool_rejected_total", "Acquires refused because the wait queue was full.",
         "counter", [&](const db::pool_stats& s) { return num(s.rejected_total); }},
        {"fulltime_db_pool_broken_total", "Connections discarded as broken.", "counter",
         [&](const db::pool_stats& s) { return num(s.broken_total); }},
        {"fulltime_db_pool_connect_failures_total", "Failed attempts to open a connection.",
         "counter", [&](const db::pool_stats& s) { return num(s.connect_failures_total); }},
    };
    for (const auto& f : families) {
        metrics::append_header(out, f.name, f.help, f.type);
        for (const auto& s : stats) {
            metrics::append_sample(out, f.name, metrics::label("pool", s.name), f.value(s));
        }
    }
    render_acquire_waits(stats, out);
}

}  // namespace fulltime::net::detail
