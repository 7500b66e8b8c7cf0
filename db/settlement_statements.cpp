#include "fulltime/db/settlement_statements.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include <string_view>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// One statement, its own transaction (autocommit): see db/functions/fulltime_settle_step.sql.
constexpr const char* step_sql =
    "SELECT status, seq, kind, bets, effects, lanes FROM fulltime_settle_step($1::bigint, "
    "$2::integer, $3::integer, $4::integer)";

// One batch of one lane: see db/functions/fulltime_settle_lane.sql.
constexpr const char* lane_sql =
    "SELECT status, seq, kind, bets, effects, 1 FROM fulltime_settle_lane($1::bigint, "
    "$2::integer, $3::integer, $4::integer)";

// Events past their market's applied_seq, per market; the join keeps the scan on the
// (market_id, seq) index per market with progress.
constexpr const char* backlog_sql =
    "SELECT e.market_id, count(*)::bigint, "
    "(extract(epoch FROM now() - min(e.received_at)) * 1000)::bigint "
    "FROM settlement_progress p JOIN result_events e "
    "ON e.market_id = p.market_id AND e.seq > p.applied_seq "
    "GROUP BY e.market_id ORDER BY min(e.received_at)";

// What a finished event skipped and whether it was refused as a whole (fulltime_settle_finish).
// Read once per event, after the step that finished it, on the same connection.
constexpr const char* outcome_sql =
    "SELECT coalesce(skipped, '{}'::jsonb)::text, coalesce(refusal, '') FROM result_events "
    "WHERE market_id = $1::bigint AND seq = $2::bigint";

template <class T>
T or_default(outcome<T> value, T fallback) {
    return value ? *value : fallback;
}

// Reads the one row of a step or a lane's batch; `what` names the function in errors.
outcome<settle_step_row> step_row(const result& rows, std::string_view what) {
    if (rows.rows() != 1) {
        return failure{errc::bad_result,
                       {},
                       std::string(what) + " returned " + std::to_string(rows.rows()) + " rows"};
    }
    auto status = rows.get<std::string>(0, 0);
    if (!status) {
        return failure{errc::bad_result, {}, std::string(what) + " returned no status"};
    }
    settle_step_row r;
    r.status = std::move(*status);
    r.seq = or_default<std::int64_t>(rows.get<std::int64_t>(0, 1), 0);
    r.kind = std::string(or_default<std::string_view>(rows.get<std::string_view>(0, 2), ""));
    r.bets = or_default<std::int32_t>(rows.get<std::int32_t>(0, 3), 0);
    r.effects = or_default<std::int32_t>(rows.get<std::int32_t>(0, 4), 0);
    r.lanes = std::max<std::int32_t>(1, or_default<std::int32_t>(rows.get<std::int32_t>(0, 5), 1));
    return r;
}

// Runs a step's or a lane batch's statement and reads its one row.
asio::awaitable<outcome<settle_step_row>> step_statement(connection& conn, const char* sql,
                                                         params args,
                                                         std::chrono::milliseconds timeout,
                                                         std::string_view what) {
    auto rows = co_await conn.query(sql, std::move(args), timeout);
    if (!rows) {
        co_return rows.error();
    }
    co_return step_row(*rows, what);
}

}  // namespace

asio::awaitable<outcome<settle_step_row>> settle_step(connection& conn, std::int64_t market_id,
                                                      std::int64_t batch_bets_max,
                                                      std::int64_t lock_timeout_ms,
                                                      std::int64_t lanes,
                                                      std::chrono::milliseconds timeout) {
    co_return co_await step_statement(conn, step_sql,
                                      params(market_id, batch_bets_max, lock_timeout_ms, lanes),
                                      timeout, "fulltime_settle_step");
}

asio::awaitable<outcome<settle_step_row>> settle_lane(connection& conn, std::int64_t market_id,
                                                      std::int64_t lane,
                                                      std::int64_t batch_bets_max,
                                                      std::int64_t lock_timeout_ms,
                                                      std::chrono::milliseconds timeout) {
    co_return co_await step_statement(conn, lane_sql,
                                      params(market_id, lane, batch_bets_max, lock_timeout_ms),
                                      timeout, "fulltime_settle_lane");
}

asio::awaitable<outcome<std::optional<event_outcome>>> read_event_outcome(
    connection& conn, std::int64_t market_id, std::int64_t seq, std::chrono::milliseconds timeout) {
    auto read = co_await conn.query(outcome_sql, params(market_id, seq), timeout);
    if (!read) {
        co_return read.error();
    }
    if (read->rows() != 1) {
        co_return std::optional<event_outcome>{};
    }
    event_outcome out;
    const auto skipped = nlohmann::json::parse(
        or_default<std::string_view>(read->get<std::string_view>(0, 0), "{}"), nullptr, false);
    if (skipped.is_object()) {
        for (const auto& [code, n] : skipped.items()) {
            if (n.is_number_integer()) {
                out.skipped.emplace_back(code, n.get<std::int64_t>());
            }
        }
    }
    out.refusal = std::string(or_default<std::string_view>(read->get<std::string_view>(0, 1), ""));
    co_return std::optional<event_outcome>{std::move(out)};
}

asio::awaitable<outcome<std::vector<backlog_market>>> scan_settlement_backlog(
    connection& conn, std::chrono::milliseconds timeout) {
    auto rows = co_await conn.query(backlog_sql, {}, timeout);
    if (!rows) {
        co_return rows.error();
    }
    std::vector<backlog_market> out;
    out.reserve(static_cast<std::size_t>(rows->rows()));
    for (int row = 0; row < rows->rows(); ++row) {
        auto market = rows->get<std::int64_t>(row, 0);
        auto events = rows->get<std::int64_t>(row, 1);
        auto age = rows->get<std::int64_t>(row, 2);
        if (!market || !events || !age) {
            continue;
        }
        out.push_back(backlog_market{*market, *events, *age});
    }
    co_return out;
}

}  // namespace fulltime::db
