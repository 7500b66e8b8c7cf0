#include "fulltime/net/bets_endpoint.hpp"

#include "fulltime/actors/placement.hpp"
#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/pool.hpp"

#include <nlohmann/json.hpp>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

const std::string balance_sql =
    "SELECT available, reserved, currency FROM accounts WHERE account_id = $1::bigint";

// Newest first. A bet is settled when it has an effect (settle or cancel) that no reversal
// undid; its effective settlement is the highest such version (schema: bet_settlements).
const std::string bets_sql =
    "SELECT b.bet_id, b.market_id, b.selection_id, b.stake, b.odds, b.currency, "
    "to_char(b.placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
    "e.version, e.outcome, e.payout "
    "FROM bets b LEFT JOIN LATERAL ("
    "  SELECT s.version, s.outcome, s.payout FROM bet_settlements s "
    "  WHERE s.bet_id = b.bet_id AND NOT s.reversal AND NOT EXISTS ("
    "    SELECT 1 FROM bet_settlements r "
    "    WHERE r.bet_id = s.bet_id AND r.version = s.version AND r.reversal) "
    "  ORDER BY s.version DESC LIMIT 1) e ON true "
    "WHERE b.account_id = $1::bigint "
    "AND ($2::text = 'all' OR ($2::text = 'settled') = (e.version IS NOT NULL)) "
    "ORDER BY b.bet_id DESC LIMIT $3::bigint";

const char* const read_busy = "the database is busy: retry shortly";

json id_of(const json& message) {
    auto it = message.find("id");
    return it == message.end() ? json(nullptr) : *it;
}

asio::awaitable<json> handle_place(bets_endpoint_services s, std::int64_t account_id,
                                   json message) {
    auto request = bets::parse_place(message, account_id);
    if (!request) {
        s.metrics->invalid.inc();
        co_return bets::render_invalid(id_of(message), request.error().message);
    }
    std::string fingerprint = bets::fingerprint(*request);
    auto result = co_await s.placement->place(std::move(*request), std::move(fingerprint));
    co_return bets::render_place_result(id_of(message), result);
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
    auto rows = co_await (*conn)->query(balance_sql, db::params(request->account_id));
    if (!rows) {
        log::warn("balance: " + db::describe(rows.error()));
        co_return bets::render_busy(id_of(message), read_busy);
    }
    if (rows->rows() == 0) {
        co_return bets::render_invalid(id_of(message), "the account does not exist");
    }
    auto available = rows->get<std::int64_t>(0, 0);
    auto reserved = rows->get<std::int64_t>(0, 1);
    auto currency = rows->get<std::string>(0, 2);
    if (!available || !reserved || !currency) {
        throw std::runtime_error("balance: unexpected result shape");
    }
    co_return bets::render_balance(id_of(message), bets::balance{*available, *reserved, *currency});
}

asio::awaitable<json> handle_bets(bets_endpoint_services s, std::int64_t account_id,
                                  json message) {
    auto request = bets::parse_bets(message, account_id);
    if (!request) {
        co_return bets::render_invalid(id_of(message), request.error().message);
    }
    auto conn = co_await s.read->acquire();
    if (!conn) {
        log::warn("bets: " + db::describe(conn.error()));
        co_return bets::render_busy(id_of(message), read_busy);
    }
    auto rows = co_await (*conn)->query(
        bets_sql, db::params(request->account_id, bets::to_string(request->status),
                             request->limit));
    if (!rows) {
        log::warn("bets: " + db::describe(rows.error()));
        co_return bets::render_busy(id_of(message), read_busy);
    }
    json list = json::array();
    for (int i = 0; i < rows->rows(); ++i) {
        bets::bet_line line;
        line.bet.account_id = request->account_id;
        auto bet_id = rows->get<std::int64_t>(i, 0);
        auto market_id = rows->get<std::int64_t>(i, 1);
        auto selection_id = rows->get<std::int64_t>(i, 2);
        auto stake = rows->get<std::int64_t>(i, 3);
        auto odds = rows->get<std::int64_t>(i, 4);
        auto currency = rows->get<std::string>(i, 5);
        auto placed_at = rows->get<std::string>(i, 6);
        auto version = rows->get<std::optional<std::int32_t>>(i, 7);
        auto outcome = rows->get<std::optional<std::string>>(i, 8);
        auto payout = rows->get<std::optional<std::int64_t>>(i, 9);
        if (!bet_id || !market_id || !selection_id || !stake || !odds || !currency ||
            !placed_at || !version || !outcome || !payout) {
            throw std::runtime_error("bets: unexpected result shape");
        }
        line.bet.bet_id = *bet_id;
        line.bet.market_id = *market_id;
        line.bet.selection_id = *selection_id;
        line.bet.stake_minor = *stake;
        line.bet.odds_units = *odds;
        line.bet.placed_at = *placed_at;
        line.currency = *currency;
        if (*version) {
            line.settled = true;
            line.version = **version;
            line.outcome = outcome->value_or("");
            line.payout_minor = payout->value_or(0);
        }
        list.push_back(bets::render_bet_line(line));
    }
    co_return json{{"type", "bets"}, {"id", id_of(message)}, {"bets", std::move(list)}};
}

}  // namespace

void add_bets_handlers(endpoint_handlers& handlers, bets_endpoint_services services) {
    handlers["place"] = [services](const request_context& context, json message) {
        return handle_place(services, context.claims.account_id, std::move(message));
    };
    handlers["balance"] = [services](const request_context& context, json message) {
        return handle_balance(services, context.claims.account_id, std::move(message));
    };
    handlers["bets"] = [services](const request_context& context, json message) {
        return handle_bets(services, context.claims.account_id, std::move(message));
    };
}

}  // namespace fulltime::net
