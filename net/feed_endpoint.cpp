#include "fulltime/net/feed_endpoint.hpp"

#include "fulltime/config/config.hpp"
#include "fulltime/core/feed_protocol.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/catalog_statements.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/result_statements.hpp"
#include "net/ws_message.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <exception>
#include <memory>
#include <variant>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// The catalog messages, then the result events (feed::result_event_kind's words).
constexpr std::array<std::string_view, 8> feed_types = {
    "market",          "odds",   "suspend",        "resume", "result",
    "rollback_result", "cancel", "rollback_cancel"};

// Stored with a result event when a token names no producer (a producer token always names one;
// this keeps the schema's non-empty CHECK from turning a surprise into a failed intake).
constexpr std::string_view producer_fallback = "feed";

/// Names how one feed message ended, as the metric's `outcome` label.
enum class feed_outcome { ack = 0, invalid, refused, busy, error };
constexpr std::array<std::string_view, 5> feed_outcomes = {"ack", "invalid", "refused", "busy",
                                                           "error"};

struct feed_state {
    const config* cfg = nullptr;
    db::pools* pools = nullptr;
    result_event_hook on_result_event;
    // [type][outcome], registered once at startup.
    std::array<std::array<metrics::counter*, feed_outcomes.size()>, feed_types.size()> counters{};

    void count(std::string_view type, feed_outcome o) {
        for (std::size_t t = 0; t < feed_types.size(); ++t) {
            if (feed_types[t] == type) {
                counters[t][static_cast<std::size_t>(o)]->inc();
                return;
            }
        }
    }
};

/// Holds the answer to one message in a form both transports render.
struct feed_answer {
    bool ok = false;
    unsigned http_status = 200;
    std::string code;
    std::string message;
    json ack;
};

feed_answer refused(unsigned status, std::string_view code, std::string message) {
    feed_answer a;
    a.http_status = status;
    a.code = std::string(code);
    a.message = std::move(message);
    return a;
}

unsigned http_status_of(db::catalog_status s) {
    switch (s) {
        case db::catalog_status::applied:
            return 200;
        case db::catalog_status::invalid:
            return 400;
        case db::catalog_status::unknown_market:
        case db::catalog_status::unknown_selection:
            return 404;
        case db::catalog_status::market_closed:
        case db::catalog_status::conflict:
            return 409;
    }
    return 500;
}

unsigned http_status_of(db::result_event_status s) {
    switch (s) {
        case db::result_event_status::stored:
        case db::result_event_status::duplicate:
            return 200;
        case db::result_event_status::unknown_market:
        case db::result_event_status::unknown_selection:
            return 404;
        case db::result_event_status::conflict:
            return 409;
    }
    return 500;
}

// Returns the ack's first fields: type, then the client's id when it sent one.
json ack_for(const json& message) {
    json ack = json{{"type", "ack"}};
    if (auto id = message.find("id"); id != message.end() && !id->is_null()) {
        ack["id"] = *id;
    }
    return ack;
}

// Turns a database failure into a busy or unavailable answer. Details stay in the log.
feed_answer failed(const db::failure& f, std::string_view type) {
    if (f.code == db::errc::lock_timeout || f.code == db::errc::pool_timeout ||
        f.code == db::errc::pool_queue_full || f.retryable()) {
        return refused(503, "busy",
                       feed::result_event_kind_from_string(type)
                           ? "the result feed is busy; resend the message unchanged"
                           : "the catalog is busy; retry the message");
    }
    log::error("feed: " + std::string(type) + " failed: " + db::describe(f));
    return refused(503, "unavailable", "the database is unavailable; retry the message");
}

// Stores one result event and answers it; the hook runs after the commit, before the ack.
asio::awaitable<feed_answer> apply_result_event(std::shared_ptr<feed_state> st, std::string type,
                                                json message, std::string producer) {
    auto parsed = feed::parse_result_event(message);
    if (!parsed) {
        co_return refused(400, "invalid_request", parsed.error().message);
    }
    const std::int64_t market_id = parsed->market_id;
    const std::int64_t seq = parsed->seq;
    const std::string event_key = parsed->event_key;
    if (producer.empty()) {
        producer = std::string(producer_fallback);
    }
    const std::string who = producer;

    auto conn = co_await st->pools->background->acquire();
    if (!conn) {
        co_return failed(conn.error(), type);
    }
    // The same timeouts as the catalog: the intake may wait briefly on a catalog message's
    // market lock (the suspension) or on a concurrent insert of the same key.
    const db::transaction_options options{st->cfg->feed.lock_timeout_ms,
                                          st->cfg->database.statement_timeout_ms};
    auto done = co_await db::record_result_event(**conn, std::move(*parsed), std::move(producer),
                                                 options, st->cfg->feed.lock_retries_max);
    if (!done) {
        co_return failed(done.error(), type);
    }
    const bool duplicate = done->status == db::result_event_status::duplicate;
    // Result events move money: each is logged with who sent it and what became of it.
    log::info("feed: " + type, {{"producer", who},
                                {"market", market_id},
                                {"seq", static_cast<std::int64_t>(seq)},
                                {"event_key", event_key},
                                {"outcome", db::to_string(done->status)}});
    if (done->status != db::result_event_status::stored && !duplicate) {
        co_return refused(http_status_of(done->status), db::to_string(done->status),
                          std::move(done->message));
    }
    if (st->on_result_event) {
        try {
            st->on_result_event(market_id);
        } catch (const std::exception& e) {
            // The event is durable and the market's actor is started again by any later event or
            // resend: the producer still gets its ack.
            log::error("feed: the result-event hook for market " + std::to_string(market_id) +
                       " threw: " + e.what());
        } catch (...) {
            log::error("feed: the result-event hook for market " + std::to_string(market_id) +
                       " threw");
        }
    }
    feed_answer a;
    a.ok = true;
    a.ack = ack_for(message);
    a.ack["market_id"] = market_id;
    a.ack["seq"] = seq;
    a.ack["event_key"] = event_key;
    a.ack["duplicate"] = duplicate;
    co_return a;
}

asio::awaitable<feed_answer> apply(std::shared_ptr<feed_state> st, std::string type, json message,
                                   std::string producer) {
    if (feed::result_event_kind_from_string(type)) {
        auto answer = co_await apply_result_event(std::move(st), std::move(type),
                                                  std::move(message), std::move(producer));
        co_return answer;
    }
    std::variant<feed::market_message, feed::odds_message, feed::status_message> parsed;
    if (type == "market") {
        auto m = feed::parse_market(message);
        if (!m) {
            co_return refused(400, "invalid_request", m.error().message);
        }
        parsed = std::move(*m);
    } else if (type == "odds") {
        auto o = feed::parse_odds(message);
        if (!o) {
            co_return refused(400, "invalid_request", o.error().message);
        }
        parsed = *o;
    } else {
        auto s = feed::parse_status(message);
        if (!s) {
            co_return refused(400, "invalid_request", s.error().message);
        }
        parsed = *s;
    }

    auto conn = co_await st->pools->background->acquire();
    if (!conn) {
        co_return failed(conn.error(), type);
    }
    const db::transaction_options options{st->cfg->feed.lock_timeout_ms,
                                          st->cfg->database.statement_timeout_ms};
    const std::size_t retries_max = st->cfg->feed.lock_retries_max;
    db::outcome<db::catalog_result> done = db::failure{};
    std::int64_t market_id = 0;
    if (auto* m = std::get_if<feed::market_message>(&parsed)) {
        market_id = m->market_id;
        done = co_await db::apply_market(**conn, std::move(*m), st->cfg->markets, options,
                                         retries_max);
    } else if (auto* o = std::get_if<feed::odds_message>(&parsed)) {
        market_id = o->market_id;
        done = co_await db::apply_odds(**conn, *o, options, retries_max);
    } else {
        const auto& s = std::get<feed::status_message>(parsed);
        market_id = s.market_id;
        done = co_await db::apply_status(**conn, s, options, retries_max);
    }
    if (!done) {
        co_return failed(done.error(), type);
    }
    if (done->status != db::catalog_status::applied) {
        co_return refused(http_status_of(done->status), db::to_string(done->status),
                          std::move(done->message));
    }
    feed_answer a;
    a.ok = true;
    a.ack = ack_for(message);
    a.ack["market_id"] = market_id;
    if (type == "market") {
        a.ack["created"] = done->created;
    }
    co_return a;
}

feed_outcome outcome_of(const feed_answer& a) {
    if (a.ok) {
        return feed_outcome::ack;
    }
    if (a.code == "invalid_request") {
        return feed_outcome::invalid;
    }
    if (a.code == "busy") {
        return feed_outcome::busy;
    }
    if (a.code == "unavailable") {
        return feed_outcome::error;
    }
    return feed_outcome::refused;
}

asio::awaitable<json> handle_ws(std::shared_ptr<feed_state> st, std::string type, json message,
                                std::string producer) {
    json id = nullptr;
    if (auto it = message.find("id"); it != message.end()) {
        id = *it;
    }
    auto answer = co_await apply(st, type, std::move(message), std::move(producer));
    st->count(type, outcome_of(answer));
    if (answer.ok) {
        co_return std::move(answer.ack);
    }
    co_return detail::error_reply(std::move(id), answer.code, answer.message);
}

asio::awaitable<http_response> handle_http(std::shared_ptr<feed_state> st,
                                           std::shared_ptr<const endpoint_handlers> handlers,
                                           http_request request) {
    // The same rules as a WebSocket message: JSON object, string "type" of a known kind, "id"
    // a string or integer.
    auto parsed = detail::parse_message(request.body, *handlers, false);
    if (auto* error = std::get_if<json>(&parsed)) {
        co_return problem(400, (*error)["code"].get<std::string>(),
                          (*error)["message"].get<std::string>());
    }
    auto& message = std::get<detail::inbound_message>(parsed);
    std::string producer = request.claims ? request.claims->producer : std::string();
    auto answer = co_await apply(st, message.type, std::move(message.body), std::move(producer));
    st->count(message.type, outcome_of(answer));
    if (!answer.ok) {
        co_return problem(answer.http_status, answer.code, answer.message);
    }
    http_response r;
    r.status = 200;
    r.body = detail::to_wire(answer.ack);
    co_return r;
}

}  // namespace

feed_endpoint make_feed_endpoint(const config& cfg, db::pools& pools, metrics::registry& registry,
                                 result_event_hook on_result_event) {
    auto st = std::make_shared<feed_state>();
    st->cfg = &cfg;
    st->pools = &pools;
    st->on_result_event = std::move(on_result_event);
    for (std::size_t t = 0; t < feed_types.size(); ++t) {
        for (std::size_t o = 0; o < feed_outcomes.size(); ++o) {
            st->counters[t][o] = &registry.make_counter(
                "fulltime_feed_messages_total",
                "Feed messages handled, by type and outcome (ack, invalid, refused, busy, error).",
                metrics::label("type", feed_types[t]) + "," +
                    metrics::label("outcome", feed_outcomes[o]));
        }
    }

    feed_endpoint out;
    for (auto type : feed_types) {
        out.handlers[std::string(type)] = [st, type = std::string(type)](
                                              const request_context& context, json message) {
            // The producer's name goes by value, like every coroutine parameter (CP.51).
            return handle_ws(st, type, std::move(message), context.claims.producer);
        };
    }
    // parse_message refuses types without a handler; the HTTP path checks against the same map.
    auto handlers = std::make_shared<const endpoint_handlers>(out.handlers);
    http_route route;
    route.name = "feed";
    route.method = "POST";
    route.path = "/v1/feed";
    route.auth = route_auth::producer;
    route.handler = [st, handlers](http_request request) {
        return handle_http(st, handlers, std::move(request));
    };
    out.routes.push_back(std::move(route));
    return out;
}

}  // namespace fulltime::net
