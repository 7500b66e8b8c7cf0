#include "fulltime/net/diagnostics_routes.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/pool.hpp"

#include <nlohmann/json.hpp>

namespace fulltime::net {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// Each query returns one JSON document, built by PostgreSQL.
const std::string settlement_sql =
    "SELECT coalesce(jsonb_agg(m ORDER BY m.oldest_age_ms DESC), '[]'::jsonb)::text FROM ("
    "  SELECT p.market_id, p.applied_seq, p.current_seq, p.checkpoint_bet_id, "
    "         count(e.result_event_id) AS pending_events, "
    "         (extract(epoch FROM now() - min(e.received_at)) * 1000)::bigint AS oldest_age_ms, "
    "         min(e.seq) > p.applied_seq + 1 AS waiting_for_gap "
    "  FROM settlement_progress p JOIN result_events e "
    "    ON e.market_id = p.market_id AND e.seq > p.applied_seq "
    "  GROUP BY p.market_id LIMIT 100) m";

// Terminal states (0008): the newest events refused as a whole, and the skipped bets per code
// over the last day's applied events; the open overdue-reservation incidents (the sweeper's).
const std::string refusals_sql =
    "SELECT jsonb_build_object("
    " 'refused_events', (SELECT coalesce(jsonb_agg(r ORDER BY r.applied_at DESC), '[]'::jsonb) "
    "    FROM (SELECT e.market_id, e.seq, e.event_key, e.kind, e.producer, e.applied_at, "
    "                 e.refusal, e.skipped FROM result_events e WHERE e.refusal IS NOT NULL "
    "          ORDER BY e.applied_at DESC LIMIT 20) r),"
    " 'skipped_last_day', (SELECT coalesce(jsonb_object_agg(k, n), '{}'::jsonb) FROM ("
    "    SELECT s.key AS k, sum(s.value::bigint) AS n FROM result_events e, "
    "    jsonb_each_text(e.skipped) s WHERE e.applied_at > now() - interval '1 day' "
    "    GROUP BY s.key) x),"
    " 'overdue_reservation_incidents', (SELECT count(*) FROM incidents i "
    "    WHERE i.kind = 'overdue_reservation' AND i.resolved_at IS NULL))::text";

const std::string database_sql =
    "SELECT jsonb_build_object("
    " 'lock_waiters', (SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
    "                  AND datname = current_database()),"
    " 'idle_in_transaction', (SELECT count(*) FROM pg_stat_activity WHERE state = "
    "                  'idle in transaction' AND datname = current_database()),"
    " 'oldest_transaction_ms', (SELECT coalesce(max(extract(epoch FROM now() - xact_start)) "
    "                  * 1000, 0)::bigint FROM pg_stat_activity WHERE xact_start IS NOT NULL "
    "                  AND datname = current_database() AND pid <> pg_backend_pid()),"
    " 'hot_tables', (SELECT coalesce(jsonb_object_agg(relname, jsonb_build_object("
    "                  'n_dead_tup', n_dead_tup, 'n_tup_upd', n_tup_upd, "
    "                  'n_tup_hot_upd', n_tup_hot_upd, 'last_autovacuum', last_autovacuum)), "
    "                  '{}'::jsonb) FROM pg_stat_user_tables WHERE relname IN ('accounts', "
    "                  'market_exposure', 'idempotency_keys', 'settlement_progress')))::text";

json pool_json(const db::pool& p) {
    const auto s = p.stats();
    return {{"size_max", s.size_max},
            {"in_use", s.in_use},
            {"idle", s.idle},
            {"waiting", s.waiting},
            {"timeouts_total", s.timeouts_total},
            {"rejected_total", s.rejected_total},
            {"wait_max_ms", s.wait_us_max / 1000}};
}

asio::awaitable<http_response> get_diagnostics(db::pools* pools) {
    json body;
    body["pools"] = {{"placement", pool_json(*pools->placement)},
                     {"settlement", pool_json(*pools->settlement)},
                     {"read", pool_json(*pools->read)},
                     {"background", pool_json(*pools->background)}};
    auto conn = co_await pools->background->acquire();
    if (!conn) {
        co_return json_error(503, "unavailable",
                             "no database connection: " + db::describe(conn.error()));
    }
    auto settlement = co_await (*conn)->query(settlement_sql);
    auto database = co_await (*conn)->query(database_sql);
    auto refusals = co_await (*conn)->query(refusals_sql);
    if (!settlement || !database || !refusals) {
        const auto& f = !settlement ? settlement.error()
                        : !database ? database.error()
                                    : refusals.error();
        log::warn("diagnostics: " + db::describe(f));
        co_return json_error(503, "unavailable", "the database did not answer");
    }
    auto markets = json::parse(settlement->get<std::string_view>(0, 0).value(), nullptr, false);
    std::int64_t oldest = 0;
    std::int64_t events = 0;
    for (const auto& m : markets) {
        oldest = std::max(oldest, m.value("oldest_age_ms", std::int64_t{0}));
        events += m.value("pending_events", std::int64_t{0});
    }
    body["settlement"] = {
        {"backlog_events", events}, {"backlog_age_ms", oldest}, {"markets", std::move(markets)}};
    auto terminal = json::parse(refusals->get<std::string_view>(0, 0).value(), nullptr, false);
    body["settlement"]["refused_events"] = terminal["refused_events"];
    body["settlement"]["skipped_last_day"] = terminal["skipped_last_day"];
    body["reservations"] = {
        {"overdue_incidents_open", terminal["overdue_reservation_incidents"]}};
    body["database"] = json::parse(database->get<std::string_view>(0, 0).value(), nullptr, false);
    http_response r;
    r.body = body.dump();
    co_return r;
}

}  // namespace

http_routes make_diagnostics_routes(db::pools& pools) {
    http_route route;
    route.name = "diagnostics";
    route.method = "GET";
    route.path = "/v1/diagnostics";
    route.auth = route_auth::admin;
    route.handler = [p = &pools](http_request) { return get_diagnostics(p); };
    return {std::move(route)};
}

}  // namespace fulltime::net
