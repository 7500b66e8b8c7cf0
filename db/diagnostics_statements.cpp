#include "fulltime/db/diagnostics_statements.hpp"

#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// Each query returns one JSON document, built by PostgreSQL.
constexpr const char* settlement_sql =
    "SELECT coalesce(jsonb_agg(m ORDER BY m.oldest_age_ms DESC), '[]'::jsonb)::text FROM ("
    "  SELECT p.market_id, p.applied_seq, p.current_seq, p.checkpoint_bet_id, p.lanes, "
    "         (SELECT jsonb_agg(jsonb_build_object('lane', l.lane, 'checkpoint_bet_id', "
    "                 l.checkpoint_bet_id, 'done', l.done) ORDER BY l.lane) "
    "          FROM settlement_lanes l WHERE l.market_id = p.market_id) AS lane_checkpoints, "
    "         count(e.result_event_id) AS pending_events, "
    "         (extract(epoch FROM now() - min(e.received_at)) * 1000)::bigint AS oldest_age_ms, "
    "         min(e.seq) > p.applied_seq + 1 AS waiting_for_gap "
    "  FROM settlement_progress p JOIN result_events e "
    "    ON e.market_id = p.market_id AND e.seq > p.applied_seq "
    "  GROUP BY p.market_id LIMIT $1::integer) m";

// Terminal states (0008): the newest events refused as a whole, and the skipped bets per code
// over the last day's applied events; the open overdue-reservation incidents (the sweeper's).
// The day is the window the key `skipped_last_day` names, not a bound, so it stays in the text.
constexpr const char* refusals_sql =
    "SELECT jsonb_build_object("
    " 'refused_events', (SELECT coalesce(jsonb_agg(r ORDER BY r.applied_at DESC), '[]'::jsonb) "
    "    FROM (SELECT e.market_id, e.seq, e.event_key, e.kind, e.producer, e.applied_at, "
    "                 e.refusal, e.skipped FROM result_events e WHERE e.refusal IS NOT NULL "
    "          ORDER BY e.applied_at DESC LIMIT $1::integer) r),"
    " 'skipped_last_day', (SELECT coalesce(jsonb_object_agg(k, n), '{}'::jsonb) FROM ("
    "    SELECT s.key AS k, sum(s.value::bigint) AS n FROM result_events e, "
    "    jsonb_each_text(e.skipped) s WHERE e.applied_at > now() - interval '1 day' "
    "    GROUP BY s.key) x),"
    " 'overdue_reservation_incidents', (SELECT count(*) FROM incidents i "
    "    WHERE i.kind = 'overdue_reservation' AND i.resolved_at IS NULL))::text";

// Runs one statement that returns one JSON document and returns its text.
asio::awaitable<outcome<std::string>> read_document(connection& conn, const char* sql,
                                                    params args) {
    auto rows = co_await conn.query(sql, std::move(args));
    if (!rows) {
        co_return rows.error();
    }
    auto text = rows->get<std::string>(0, 0);
    if (!text) {
        co_return text.error();
    }
    co_return std::move(*text);
}

}  // namespace

asio::awaitable<outcome<std::string>> read_settlement_backlog_json(connection& conn,
                                                                   std::int64_t markets_max) {
    auto document = co_await read_document(conn, settlement_sql, params(markets_max));
    co_return document;
}

asio::awaitable<outcome<std::string>> read_terminal_states_json(connection& conn,
                                                                std::int64_t refused_events_max) {
    auto document = co_await read_document(conn, refusals_sql, params(refused_events_max));
    co_return document;
}

}  // namespace fulltime::db
