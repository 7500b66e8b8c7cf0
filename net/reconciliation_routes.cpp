#include "fulltime/net/reconciliation_routes.hpp"

#include "fulltime/actors/reconciliation.hpp"
#include "fulltime/core/feed_protocol.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/reconciliation_statements.hpp"
#include "fulltime/limits.hpp"
#include "net/token_extraction.hpp"
#include "net/ws_message.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

struct routes_state {
    db::pools* pools = nullptr;
    actors::reconciliation_service* reconciliation = nullptr;
};

http_response json_text(unsigned status, std::string body) {
    http_response r;
    r.status = status;
    r.body = std::move(body);
    return r;
}

asio::awaitable<http_response> post_reconcile(std::shared_ptr<routes_state> st) {
    auto run = co_await st->reconciliation->run_now();
    if (run) {
        co_return json_text(200, actors::to_json(*run));
    }
    switch (run.error().code) {
        case db::errc::pool_closed:
            co_return problem(503, "shutting_down", "the server is shutting down");
        case db::errc::deadline_exceeded:
            co_return problem(504, "timeout",
                              "the reconciliation did not finish within "
                              "reconcile.run_timeout_ms; its findings appear in "
                              "GET /v1/incidents as it goes");
        default:
            break;
    }
    // The run already logged its failure; the client gets no SQL.
    co_return problem(503, "unavailable", "the reconciliation run failed; see the server log");
}

// Epoch seconds as the wire's UTC time ("2026-11-30T12:00:00Z").
std::string epoch_text(std::int64_t seconds) {
    const std::time_t t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buffer;
}

template <class T>
json or_null(const std::optional<T>& v) {
    return v ? json(*v) : json(nullptr);
}

// Money as decimal strings, as everywhere in the protocol, in the incident's currency. One
// without a currency (the drift of an account that no longer exists) has no decimals to go by
// and is shown with two; an overdue reservation over several currencies has none and no amount.
// An overdue reservation's `expected` is its deadline (the incident stores it as epoch
// seconds): shown as a time.
json incident_json(const db::incident_row& i) {
    const auto money = [&i](const std::optional<std::int64_t>& v) {
        if (!v) {
            return json(nullptr);
        }
        return i.currency ? json(money::format_amount(*v, *i.currency))
                          : json(money::format_amount(*v, limits::market_amount_digits));
    };
    json details = json::parse(i.details_json, nullptr, false);
    if (details.is_discarded()) {
        details = json::object();
    }
    const bool overdue = i.kind == "overdue_reservation";
    return json{
        {"incident_id", i.incident_id},
        {"kind", i.kind},
        {"subject", i.subject},
        {"account_id", or_null(i.account_id)},
        {"side", or_null(i.side)},
        {"currency", or_null(i.currency)},
        {"market_id", or_null(i.market_id)},
        {"bet_id", or_null(i.bet_id)},
        {"expected", overdue && i.expected ? json(epoch_text(*i.expected)) : money(i.expected)},
        {"actual", money(i.actual)},
        {"details", std::move(details)},
        {"first_seen", i.first_seen},
        {"last_seen", i.last_seen},
        {"runs", i.runs},
        {"resolved_at", or_null(i.resolved_at)},
        {"resolution", or_null(i.resolution)}};
}

// Reads the query; nullopt with the 400 response when a parameter is not acceptable.
std::optional<db::incident_filter> parse_filter(std::string_view query, http_response& error) {
    // docs/protocol-feed.md lists the parameters and refuses anything else: a misspelt filter
    // ("stauts=all") would otherwise list the open incidents as if it had been read.
    if (auto unknown = detail::unexpected_query_param(
            query, {"status", "kind", "account_id", "limit", "token"})) {
        error = problem(
            400, "invalid_request",
            "unknown or repeated query parameter \"" +
                std::string(std::string_view(*unknown).substr(0, limits::quoted_input_chars_max)) +
                "\": status, kind, account_id and limit are accepted, once each");
        return std::nullopt;
    }
    db::incident_filter f;
    f.limit = static_cast<std::int64_t>(limits::incidents_page_default);
    if (auto status = detail::query_param(query, "status")) {
        if (*status == "open") {
            f.status = db::incident_status::open;
        } else if (*status == "resolved") {
            f.status = db::incident_status::resolved;
        } else if (*status == "all") {
            f.status = db::incident_status::all;
        } else {
            error = problem(400, "invalid_request", "status must be open, resolved or all");
            return std::nullopt;
        }
    }
    if (auto kind = detail::query_param(query, "kind")) {
        const bool known = std::ranges::find(db::incident_kinds, std::string_view{*kind}) !=
                           db::incident_kinds.end();
        if (!known) {
            error = problem(400, "invalid_request",
                            "kind must be balance_drift, currency_mismatch, "
                            "currency_imbalance or overdue_reservation");
            return std::nullopt;
        }
        f.kind = std::move(*kind);
    }
    if (auto account = detail::query_param(query, "account_id")) {
        auto id = feed::parse_path_id(*account);
        if (!id) {
            error = problem(400, "invalid_request", "account_id must be a positive integer");
            return std::nullopt;
        }
        f.account_id = *id;
    }
    if (auto limit = detail::query_param(query, "limit")) {
        auto n = feed::parse_path_id(*limit);
        if (!n || *n > static_cast<std::int64_t>(limits::incidents_page_max)) {
            error = problem(
                400, "invalid_request",
                "limit must be between 1 and " + std::to_string(limits::incidents_page_max));
            return std::nullopt;
        }
        f.limit = *n;
    }
    return f;
}

asio::awaitable<http_response> get_incidents(std::shared_ptr<routes_state> st,
                                             http_request request) {
    http_response error;
    auto filter = parse_filter(request.query, error);
    if (!filter) {
        co_return error;
    }
    auto conn = co_await st->pools->read->acquire();
    if (!conn) {
        co_return problem(
            503, "unavailable",
            "no database connection: " + std::string(db::to_string(conn.error().code)));
    }
    auto rows = co_await db::list_incidents(**conn, std::move(*filter));
    if (!rows) {
        log::warn("incidents: " + db::describe(rows.error()));
        co_return problem(503, "unavailable", "the database did not answer");
    }
    json list = json::array();
    for (const auto& i : *rows) {
        list.push_back(incident_json(i));
    }
    co_return json_text(200, detail::to_wire(json{{"incidents", std::move(list)}}));
}

}  // namespace

http_routes make_reconciliation_routes(db::pools& pools,
                                       actors::reconciliation_service& reconciliation) {
    auto st = std::make_shared<routes_state>();
    st->pools = &pools;
    st->reconciliation = &reconciliation;

    http_routes routes;
    http_route run;
    run.name = "reconcile";
    run.method = "POST";
    run.path = "/v1/reconcile";
    run.auth = route_auth::admin;
    run.handler = [st](http_request request) {
        log::info("operator: reconcile", {{"operator", operator_of(request)}});
        return post_reconcile(st);
    };
    routes.push_back(std::move(run));

    http_route list;
    list.name = "incidents";
    list.method = "GET";
    list.path = "/v1/incidents";
    list.auth = route_auth::admin;
    list.handler = [st](http_request request) { return get_incidents(st, std::move(request)); };
    routes.push_back(std::move(list));
    return routes;
}

}  // namespace fulltime::net
