#include "fulltime/net/bets_endpoint.hpp"

#include "fulltime/actors/placement.hpp"
#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/bets_statements.hpp"
#include "fulltime/db/pool.hpp"

#include <nlohmann/json.hpp>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

const char* const read_busy = "the database is busy: retry shortly";

json id_of(const json& message) {
    auto it = message.find("id");
    return it == message.end() ? json(nullptr) : *it;
}

using steady = std::chrono::steady_clock;

std::chrono::microseconds since(steady::time_point from, steady::time_point to) {
    return std::chrono::duration_cast<std::chrono::microseconds>(to - from);
}

// Runs on the connection's own loop (see add_bets_handlers): it touches only the placement
// service, which hands the request to an actor of this loop, and atomic metrics.
asio::awaitable<json> handle_place(bets_endpoint_services s, std::int64_t account_id,
                                   steady::time_point received, json message) {
    auto request = bets::parse_place(message, account_id);
    if (!request) {
        s.metrics->invalid.inc();
        co_return bets::render_invalid(id_of(message), request.error().message);
    }
    std::string fingerprint = bets::fingerprint(*request);
    s.metrics->stage(actors::placement_stage::parse).record(since(received, steady::now()));
    steady::time_point answered;
    auto result =
        co_await s.placement->place(std::move(*request), std::move(fingerprint), &answered);
    json reply = bets::render_place_result(id_of(message), result);
    s.metrics->stage(actors::placement_stage::reply).record(since(answered, steady::now()));
    co_return reply;
}

asio::awaitable<json> handle_balance(bets_endpoint_services s, std::int64_t account_id,
                                     json message) {
    auto request = bets::parse_balance(message, account_id);
    if (!request) {
        co_return bets::render_invalid(id_of(message), request.error().message);
    }
    auto conn = co_await s.read->acquire();
    if (!conn) {
        log::warn("balance: " + db::describe(conn.error()));
        co_return bets::render_busy(id_of(message), read_busy);
    }
    auto balance = co_await db::read_balance(**conn, request->account_id);
    if (!balance) {
        if (balance.error().code == db::errc::bad_result) {
            throw std::runtime_error("balance: unexpected result shape");
        }
        log::warn("balance: " + db::describe(balance.error()));
        co_return bets::render_busy(id_of(message), read_busy);
    }
    if (!*balance) {
        co_return bets::render_invalid(id_of(message), "the account does not exist");
    }
    co_return bets::render_balance(id_of(message), **balance);
}

asio::awaitable<json> handle_bets(bets_endpoint_services s, std::int64_t account_id, json message) {
    auto request = bets::parse_bets(message, account_id);
    if (!request) {
        co_return bets::render_invalid(id_of(message), request.error().message);
    }
    auto conn = co_await s.read->acquire();
    if (!conn) {
        log::warn("bets: " + db::describe(conn.error()));
        co_return bets::render_busy(id_of(message), read_busy);
    }
    auto lines = co_await db::list_bets(**conn, request->account_id, request->status,
                                        request->limit, request->before);
    if (!lines) {
        if (lines.error().code == db::errc::bad_result) {
            throw std::runtime_error("bets: unexpected result shape");
        }
        log::warn("bets: " + db::describe(lines.error()));
        co_return bets::render_busy(id_of(message), read_busy);
    }
    json list = json::array();
    for (const auto& line : lines->lines) {
        list.push_back(bets::render_bet_line(line));
    }
    co_return json{{"type", "bets"}, {"id", id_of(message)}, {"bets", std::move(list)}};
}

}  // namespace

void add_bets_handlers(endpoint_handlers& handlers, bets_endpoint_services services) {
    endpoint_handler& place = handlers["place"];
    place.run = [services](const request_context& context, json message) {
        return handle_place(services, context.claims.account_id, context.received_at,
                            std::move(message));
    };
    place.on_connection_loop = true;
    place.write_time = &services.metrics->stage(actors::placement_stage::write);
    place.total_time = &services.metrics->stage(actors::placement_stage::total);
    handlers["balance"] = [services](const request_context& context, json message) {
        return handle_balance(services, context.claims.account_id, std::move(message));
    };
    handlers["bets"] = [services](const request_context& context, json message) {
        return handle_bets(services, context.claims.account_id, std::move(message));
    };
}

}  // namespace fulltime::net
