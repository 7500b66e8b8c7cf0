#include "fulltime/net/diagnostics_routes.hpp"

#include "fulltime/actors/peak_sampler.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/diagnostics_statements.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/limits.hpp"
#include "fulltime/net/diagnosis_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

json pool_json(const db::pool_stats& s) {
    return {{"size_max", s.size_max},
            {"in_use", s.in_use},
            {"idle", s.idle},
            {"waiting", s.waiting},
            {"timeouts_total", s.timeouts_total},
            {"rejected_total", s.rejected_total},
            {"wait_max_ms", s.wait_us_max / 1000}};
}

// Returns the value of `since_ms=` in a query string, or nullopt.
std::optional<std::int64_t> since_of(std::string_view query) {
    constexpr std::string_view key = "since_ms=";
    for (std::size_t at = 0; at <= query.size();) {
        const auto end = std::min(query.find('&', at), query.size());
        const auto pair = query.substr(at, end - at);
        if (pair.starts_with(key)) {
            std::int64_t v = 0;
            const auto digits = pair.substr(key.size());
            const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
            if (ec == std::errc{} && p == digits.data() + digits.size()) {
                return v;
            }
        }
        at = end + 1;
    }
    return std::nullopt;
}

// The sampler's part: its record, the verdict judged now, the series (only the samples after
// `since_ms` when given: the dashboard appends) and the newest sample.
void add_peak(json& body, const actors::peak_history& history,
              std::optional<std::int64_t> since_ms) {
    const auto samples = history.samples();
    body["sampler"] = {
        {"interval_ms", history.interval_ms()},
        {"window_s", static_cast<std::int64_t>(history.capacity()) * history.interval_ms() / 1000},
        {"samples", samples.size()},
        {"samples_total", history.samples_total()},
        {"failures_total", history.failures_total()},
        {"last_error", history.last_error()}};
    body["verdict"] = verdict_json(diagnosis::judge(samples, history.thresholds()));
    std::span<const diagnosis::sample> newer(samples);
    if (since_ms) {
        const auto first = std::ranges::find_if(
            samples, [&](const diagnosis::sample& s) { return s.t_ms > *since_ms; });
        newer = std::span<const diagnosis::sample>(first, samples.end());
    }
    body["series"] = series_json(newer);
    body["latest"] = samples.empty() ? json(nullptr) : latest_json(samples.back());
    // The database's activity as the newest sample read it (the sampler's statement, not a
    // second one per request).
    if (!samples.empty()) {
        body["database"].update(database_json(samples.back()));
    }
}

asio::awaitable<http_response> get_diagnostics(
    db::pools* pools, const governor_state_reader* governor, const std::string* server_settings,
    const actors::peak_history* history, const governor_state_reader* reads, std::string query) {
    json body;
    json by_name = json::object();
    for (const db::pool_stats& s : pools->stats()) {
        by_name[s.name] = pool_json(s);
    }
    body["pools"] = std::move(by_name);
    auto conn = co_await pools->background->acquire();
    if (!conn) {
        co_return problem(503, "unavailable",
                          "no database connection: " + db::describe(conn.error()));
    }
    auto settlement = co_await db::read_settlement_backlog_json(
        **conn, static_cast<std::int64_t>(limits::diagnostics_backlog_markets_max));
    auto refusals = co_await db::read_terminal_states_json(
        **conn, static_cast<std::int64_t>(limits::diagnostics_refused_events_max));
    if (!settlement || !refusals) {
        const auto& f = !settlement ? settlement.error() : refusals.error();
        log::warn("diagnostics: " + db::describe(f));
        co_return problem(503, "unavailable", "the database did not answer");
    }
    auto markets = json::parse(*settlement, nullptr, false);
    std::int64_t oldest = 0;
    std::int64_t events = 0;
    for (const auto& m : markets) {
        oldest = std::max(oldest, m.value("oldest_age_ms", std::int64_t{0}));
        events += m.value("pending_events", std::int64_t{0});
    }
    body["settlement"] = {
        {"backlog_events", events}, {"backlog_age_ms", oldest}, {"markets", std::move(markets)}};
    auto terminal = json::parse(*refusals, nullptr, false);
    body["settlement"]["refused_events"] = terminal["refused_events"];
    body["settlement"]["skipped_last_day"] = terminal["skipped_last_day"];
    if (*governor) {
        body["settlement"]["governor"] = json::parse((*governor)(), nullptr, false);
    }
    body["reservations"] = {{"overdue_incidents_open", terminal["overdue_reservation_incidents"]}};
    body["database"] = json::object();
    if (!server_settings->empty()) {
        body["database"]["server_settings"] = json::parse(*server_settings, nullptr, false);
    }
    if (*reads) {
        body["reads"] = json::parse((*reads)(), nullptr, false);
    }
    if (history != nullptr) {
        add_peak(body, *history, since_of(query));
    }
    http_response r;
    // Replacement, not an exception, for invalid UTF-8 in a session's application_name.
    r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    co_return r;
}

asio::awaitable<http_response> get_dashboard() {
    http_response r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::string(resources::dashboard_html());
    co_return r;
}

}  // namespace

http_routes make_diagnostics_routes(db::pools& pools, governor_state_reader governor,
                                    std::string server_settings,
                                    std::shared_ptr<const actors::peak_history> history,
                                    governor_state_reader reads) {
    http_route route;
    route.name = "diagnostics";
    route.method = "GET";
    route.path = "/v1/diagnostics";
    route.auth = route_auth::admin;
    route.handler =
        [p = &pools, g = std::make_shared<governor_state_reader>(std::move(governor)),
         s = std::make_shared<const std::string>(std::move(server_settings)), h = history,
         r = std::make_shared<governor_state_reader>(std::move(reads))](http_request request) {
            return get_diagnostics(p, g.get(), s.get(), h.get(), r.get(), std::move(request.query));
        };
    http_route dashboard;
    dashboard.name = "dashboard";
    dashboard.method = "GET";
    dashboard.path = "/dashboard";
    dashboard.auth = route_auth::admin;
    dashboard.handler = [](http_request) { return get_dashboard(); };
    return {std::move(route), std::move(dashboard)};
}

}  // namespace fulltime::net
