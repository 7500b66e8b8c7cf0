#include "fulltime/net/market_routes.hpp"

#include "fulltime/config/config.hpp"
#include "fulltime/core/feed_protocol.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/projection_statements.hpp"
#include "fulltime/db/read_router.hpp"
#include "fulltime/db/reservation_statements.hpp"
#include "fulltime/db/result_statements.hpp"
#include "fulltime/limits.hpp"

#include <nlohmann/json.hpp>

#include <exception>
#include <memory>
#include <variant>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr std::string_view markets_path = "/v1/markets/";
constexpr std::string_view feed_markets_path = "/v1/feed/markets/";

struct market_routes_state {
    const config* cfg = nullptr;
    db::pools* pools = nullptr;
    db::read_router* reads = nullptr;
    std::function<void(std::int64_t)> on_stored;
};

http_response database_failed(const db::failure& f, std::string_view what) {
    if (f.code == db::errc::lock_timeout || f.code == db::errc::pool_timeout ||
        f.code == db::errc::pool_queue_full || f.retryable()) {
        return problem(503, "busy", "the database is busy; retry (the same key is safe)");
    }
    log::error(std::string(what) + " failed: " + db::describe(f));
    return problem(503, "unavailable", "the database is unavailable; retry");
}

// Parses "{prefix}{id}/{suffix}"; nullopt when the path has another shape.
std::optional<std::string_view> id_between(std::string_view path, std::string_view prefix,
                                           std::string_view suffix) {
    if (!path.starts_with(prefix)) {
        return std::nullopt;
    }
    const std::string_view tail = path.substr(prefix.size());
    const auto slash = tail.find('/');
    if (slash == std::string_view::npos || tail.substr(slash + 1) != suffix) {
        return std::nullopt;
    }
    return tail.substr(0, slash);
}

// Returns the market id of "{prefix}{id}/{suffix}", or the problem to answer: 404 for another
// shape, 400 for an id that is not a positive integer.
std::variant<std::int64_t, http_response> market_in_path(const http_request& request,
                                                         std::string_view prefix,
                                                         std::string_view suffix) {
    const auto id_text = id_between(request.path, prefix, suffix);
    if (!id_text) {
        return problem(404, "not_found", "no such resource: " + request.path.substr(0, 128));
    }
    const auto id = feed::parse_path_id(*id_text);
    if (!id) {
        return problem(400, "invalid_request",
                       "the market id in the path must be a positive integer");
    }
    return *id;
}

// Returns the JSON object body of an operator's action on a market (none: {}), with the
// Idempotency-Key header taken in as its "key", or the problem to answer.
std::variant<json, http_response> action_body(const http_request& request) {
    auto body = parse_body(request.body.empty() ? std::string_view("{}") : request.body);
    if (!body) {
        return std::move(body.error());
    }
    if (!body->is_object()) {
        return problem(400, "invalid_json", "the body is not a JSON object");
    }
    if (auto clash = take_idempotency_header(request, *body)) {
        return std::move(*clash);
    }
    return std::move(*body);
}

// Tells the settlement that `market` has a new event to apply. The event is durable: should
// this fail, the settlement's scan finds it.
void wake(const market_routes_state& st, std::int64_t market, std::string_view what) {
    if (!st.on_stored) {
        return;
    }
    try {
        st.on_stored(market);
    } catch (const std::exception& e) {
        log::error(std::string(what) + ": waking market " + std::to_string(market) +
                   " threw: " + e.what());
    }
}

unsigned http_status_of(db::void_overdue_status s) {
    switch (s) {
        case db::void_overdue_status::stored:
        case db::void_overdue_status::duplicate:
            return 200;
        case db::void_overdue_status::unknown_market:
            return 404;
        case db::void_overdue_status::conflict:
        case db::void_overdue_status::not_overdue:
        case db::void_overdue_status::nothing_to_void:
        case db::void_overdue_status::feed_gap:
            return 409;
    }
    return 500;
}

unsigned http_status_of(db::close_gap_status s) {
    switch (s) {
        case db::close_gap_status::stored:
        case db::close_gap_status::duplicate:
            return 200;
        case db::close_gap_status::unknown_market:
            return 404;
        case db::close_gap_status::conflict:
        case db::close_gap_status::not_a_gap:
            return 409;
    }
    return 500;
}

// POST /v1/feed/markets/{id}/close-gap: the operator's decision that a run of seqs of the
// market's feed will never come (fulltime_close_gap.sql), so that the events after it apply.
asio::awaitable<http_response> post_close_gap(std::shared_ptr<market_routes_state> st,
                                              http_request request) {
    auto market_id = market_in_path(request, feed_markets_path, "close-gap");
    if (auto* refused = std::get_if<http_response>(&market_id)) {
        co_return std::move(*refused);
    }
    const std::int64_t market = std::get<std::int64_t>(market_id);
    auto body = action_body(request);
    if (auto* refused = std::get_if<http_response>(&body)) {
        co_return std::move(*refused);
    }
    auto parsed = feed::parse_close_gap_request(std::get<json>(body));
    if (!parsed) {
        co_return problem(400, "invalid_request", parsed.error().message);
    }
    db::close_gap_request req;
    req.market_id = market;
    req.from = parsed->from;
    req.through = parsed->through;
    req.event_key = std::move(parsed->key).value_or(std::string());
    req.operator_name = std::string(operator_of(request));
    auto conn = co_await st->pools->background->acquire();
    if (!conn) {
        co_return database_failed(conn.error(), "close-gap");
    }
    const db::transaction_options options{st->cfg->admin.lock_timeout_ms,
                                          st->cfg->database.statement_timeout_ms};
    auto done =
        co_await db::close_gap(**conn, std::move(req), options, st->cfg->admin.lock_retries_max);
    if (!done) {
        co_return database_failed(done.error(), "close-gap");
    }
    log::info("operator: close-gap", {{"operator", operator_of(request)},
                                      {"market", market},
                                      {"from", parsed->from},
                                      {"through", parsed->through},
                                      {"event_key", done->event_key},
                                      {"outcome", db::to_string(done->status)}});
    if (done->status != db::close_gap_status::stored &&
        done->status != db::close_gap_status::duplicate) {
        co_return problem(http_status_of(done->status), db::to_string(done->status), done->message);
    }
    if (done->status == db::close_gap_status::stored) {
        wake(*st, market, "close-gap");
    }
    co_return json_response(200,
                            json{{"market_id", market},
                                 {"from", parsed->from},
                                 {"through", parsed->through},
                                 {"event_key", done->event_key},
                                 {"duplicate", done->status == db::close_gap_status::duplicate}});
}

asio::awaitable<http_response> post_void_overdue(std::shared_ptr<market_routes_state> st,
                                                 http_request request) {
    auto market_id = market_in_path(request, markets_path, "void-overdue");
    if (auto* refused = std::get_if<http_response>(&market_id)) {
        co_return std::move(*refused);
    }
    const std::int64_t market = std::get<std::int64_t>(market_id);
    db::void_overdue_request req;
    req.market_id = market;
    // The admin token's operator, recorded in the event's payload and logged.
    req.operator_name = std::string(operator_of(request));
    req.grace_s = st->cfg->reservations.grace_s;
    req.default_deadline_s = st->cfg->reservations.default_deadline_s;
    // No body is a request with no key and no force.
    auto body = action_body(request);
    if (auto* refused = std::get_if<http_response>(&body)) {
        co_return std::move(*refused);
    }
    auto parsed = feed::parse_void_request(std::get<json>(body));
    if (!parsed) {
        co_return problem(400, "invalid_request", parsed.error().message);
    }
    req.event_key = std::move(parsed->key).value_or(std::string());
    req.force = parsed->force;
    auto conn = co_await st->pools->background->acquire();
    if (!conn) {
        co_return database_failed(conn.error(), "void-overdue");
    }
    const db::transaction_options options{st->cfg->admin.lock_timeout_ms,
                                          st->cfg->database.statement_timeout_ms};
    const bool force = req.force;
    auto done =
        co_await db::void_overdue(**conn, std::move(req), options, st->cfg->admin.lock_retries_max);
    if (!done) {
        co_return database_failed(done.error(), "void-overdue");
    }
    log::info("operator: void-overdue", {{"operator", operator_of(request)},
                                         {"market", market},
                                         {"event_key", done->event_key},
                                         {"force", force ? "true" : "false"},
                                         {"outcome", db::to_string(done->status)}});
    const bool accepted = done->status == db::void_overdue_status::stored ||
                          done->status == db::void_overdue_status::duplicate;
    if (!accepted) {
        co_return problem(http_status_of(done->status), db::to_string(done->status), done->message);
    }
    if (done->status == db::void_overdue_status::stored) {
        wake(*st, market, "void-overdue");
    }
    co_return json_response(200,
                            json{{"market_id", market},
                                 {"seq", done->seq},
                                 {"event_key", done->event_key},
                                 {"duplicate", done->status == db::void_overdue_status::duplicate},
                                 {"deadline", done->deadline}});
}

asio::awaitable<http_response> get_market_events(std::shared_ptr<market_routes_state> st,
                                                 http_request request) {
    auto market_id = market_in_path(request, feed_markets_path, "events");
    if (auto* refused = std::get_if<http_response>(&market_id)) {
        co_return std::move(*refused);
    }
    const std::int64_t market = std::get<std::int64_t>(market_id);
    auto conn = co_await st->pools->background->acquire();
    if (!conn) {
        co_return database_failed(conn.error(), "market events");
    }
    auto text = co_await db::list_result_events_json(
        **conn, market, static_cast<std::int64_t>(limits::market_events_listed_max));
    if (!text) {
        co_return database_failed(text.error(), "market events");
    }
    json events = json::parse(*text, nullptr, false);
    co_return json_response(200, json{{"market_id", market}, {"events", std::move(events)}});
}

// GET /v1/markets/{id}/summary: the read model's summary of the market (market_views), on the
// standby when it is fresh enough for a history read (read.bets_staleness_ms).
asio::awaitable<http_response> get_market_summary(std::shared_ptr<market_routes_state> st,
                                                  http_request request) {
    auto market_id = market_in_path(request, markets_path, "summary");
    if (auto* refused = std::get_if<http_response>(&market_id)) {
        co_return std::move(*refused);
    }
    const std::int64_t id = std::get<std::int64_t>(market_id);
    const db::read_need need{std::chrono::milliseconds(st->cfg->read.bets_staleness_ms), 0};
    db::read_target ran_on = db::read_target::primary;
    auto rows = co_await st->reads->run(
        need, [id](db::connection& conn) { return db::read_market_summary(conn, id); }, &ran_on);
    if (!rows) {
        co_return database_failed(rows.error(), "market summary");
    }
    json currencies = json::array();
    for (const auto& m : *rows) {
        currencies.push_back({{"currency", m.currency},
                              {"bets", m.bets},
                              {"stake", money::format_amount(m.stake, m.currency)},
                              {"open_bets", m.open_bets},
                              {"open_stake", money::format_amount(m.open_stake, m.currency)},
                              {"settled_bets", m.settled_bets},
                              {"payout", money::format_amount(m.payout, m.currency)},
                              {"updated_at", m.updated_at}});
    }
    co_return json_response(
        200, json{{"market_id", id},
                  {"read_from", ran_on == db::read_target::standby ? "standby" : "primary"},
                  {"currencies", std::move(currencies)}});
}

}  // namespace

http_routes make_market_routes(const config& cfg, db::pools& pools, db::read_router& reads,
                               std::function<void(std::int64_t)> on_stored) {
    auto st = std::make_shared<market_routes_state>();
    st->cfg = &cfg;
    st->pools = &pools;
    st->reads = &reads;
    st->on_stored = std::move(on_stored);

    http_routes routes;
    http_route void_route;
    void_route.name = "market_void_overdue";
    void_route.method = "POST";
    void_route.path = "/v1/markets";
    void_route.prefix = true;
    void_route.auth = route_auth::admin;
    void_route.handler = [st](http_request request) {
        return post_void_overdue(st, std::move(request));
    };
    routes.push_back(std::move(void_route));

    http_route events_route;
    events_route.name = "feed_market_events";
    events_route.method = "GET";
    events_route.path = "/v1/feed/markets";
    events_route.prefix = true;
    events_route.auth = route_auth::producer;
    events_route.handler = [st](http_request request) {
        return get_market_events(st, std::move(request));
    };
    routes.push_back(std::move(events_route));

    http_route gap_route;
    gap_route.name = "feed_market_close_gap";
    gap_route.method = "POST";
    gap_route.path = "/v1/feed/markets";
    gap_route.prefix = true;
    gap_route.auth = route_auth::admin;
    gap_route.handler = [st](http_request request) {
        return post_close_gap(st, std::move(request));
    };
    routes.push_back(std::move(gap_route));

    http_route summary_route;
    summary_route.name = "market_summary";
    summary_route.method = "GET";
    summary_route.path = "/v1/markets";
    summary_route.prefix = true;
    summary_route.auth = route_auth::admin;
    summary_route.handler = [st](http_request request) {
        return get_market_summary(st, std::move(request));
    };
    routes.push_back(std::move(summary_route));
    return routes;
}

}  // namespace fulltime::net
