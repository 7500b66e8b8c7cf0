#include "actors/settlement_detail.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

// One statement, its own transaction (autocommit): see 0005_settlement.sql.
const std::string step_sql =
    "SELECT status, seq, kind, bets, effects FROM fulltime_settle_step($1::bigint, "
    "$2::integer, $3::integer)";

// Events past their market's applied_seq, per market; the join keeps the scan on the
// (market_id, seq) index per market with progress.
const std::string backlog_sql =
    "SELECT e.market_id, count(*)::bigint, "
    "(extract(epoch FROM now() - min(e.received_at)) * 1000)::bigint "
    "FROM settlement_progress p JOIN result_events e "
    "ON e.market_id = p.market_id AND e.seq > p.applied_seq "
    "GROUP BY e.market_id ORDER BY min(e.received_at)";

// What a finished event skipped and whether it was refused as a whole (0008). Read once per
// event, after the step that finished it, on the same connection.
const std::string outcome_sql =
    "SELECT coalesce(skipped, '{}'::jsonb)::text, coalesce(refusal, '') FROM result_events "
    "WHERE market_id = $1::bigint AND seq = $2::integer";

step_status status_from(std::string_view s) {
    if (s == "idle") return step_status::idle;
    if (s == "gap") return step_status::gap;
    if (s == "started") return step_status::started;
    if (s == "fenced") return step_status::fenced;
    if (s == "batch") return step_status::batch;
    if (s == "finished") return step_status::finished;
    return step_status::failed;
}

template <class T>
T or_default(db::outcome<T> value, T fallback) {
    return value ? *value : fallback;
}

step_result failed(std::string why) {
    step_result r;
    r.status = step_status::failed;
    r.error = std::move(why);
    return r;
}

}  // namespace

asio::awaitable<step_result> run_step(std::shared_ptr<settlement_worker> worker,
                                      std::int64_t market_id) {
    settlement_worker& w = *worker;
    if (w.closed) {
        co_return failed("the settlement service is stopping");
    }
    auto conn = co_await w.settlement->acquire();
    if (!conn) {
        co_return failed("no settlement connection: " + db::describe(conn.error()));
    }
    const auto start = std::chrono::steady_clock::now();
    db::params args(market_id, w.batch_bets_max, w.lock_timeout_ms);
    // The step runs after the acquire: record its own time, not the wait for a connection.
    auto rows = co_await (*conn)->query(step_sql, std::move(args), w.query_timeout);
    const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start);
    w.metrics->step_latency.record(elapsed);
    if (!rows) {
        const db::failure& f = rows.error();
        if (f.retryable()) {
            if (f.code == db::errc::lock_timeout) {
                w.metrics->lock_timeouts.inc();
            }
            step_result r;
            r.status = step_status::locked;
            r.error = db::describe(f);
            co_return r;
        }
        co_return failed(db::describe(f));
    }
    if (rows->rows() != 1) {
        co_return failed("fulltime_settle_step returned " + std::to_string(rows->rows()) + " rows");
    }
    auto status = rows->get<std::string_view>(0, 0);
    if (!status) {
        co_return failed("fulltime_settle_step returned no status");
    }
    step_result r;
    r.status = status_from(*status);
    r.seq = or_default<std::int32_t>(rows->get<std::int32_t>(0, 1), 0);
    r.kind = std::string(or_default<std::string_view>(rows->get<std::string_view>(0, 2), ""));
    r.bets = or_default<std::int32_t>(rows->get<std::int32_t>(0, 3), 0);
    r.effects = or_default<std::int32_t>(rows->get<std::int32_t>(0, 4), 0);
    r.elapsed = elapsed;
    if (r.status == step_status::finished) {
        // Only for metrics and the log: a failure here changes nothing that was applied.
        auto read = co_await (*conn)->query(outcome_sql, db::params(market_id, r.seq),
                                            w.query_timeout);
        if (read && read->rows() == 1) {
            const auto skipped = nlohmann::json::parse(
                or_default<std::string_view>(read->get<std::string_view>(0, 0), "{}"), nullptr,
                false);
            if (skipped.is_object()) {
                for (const auto& [code, n] : skipped.items()) {
                    if (n.is_number_integer()) {
                        r.skipped.emplace_back(code, n.get<std::int64_t>());
                    }
                }
            }
            r.refusal = std::string(
                or_default<std::string_view>(read->get<std::string_view>(0, 1), ""));
        } else if (!read) {
            log::warn("settlement: reading the outcome of market " + std::to_string(market_id) +
                      " seq " + std::to_string(r.seq) + ": " + db::describe(read.error()));
        }
    }
    co_return r;
}

asio::awaitable<backlog> scan_backlog(std::shared_ptr<settlement_worker> worker) {
    settlement_worker& w = *worker;
    backlog out;
    if (w.closed) {
        co_return out;
    }
    auto conn = co_await w.background->acquire();
    if (!conn) {
        log::warn("settlement: backlog scan: " + db::describe(conn.error()));
        co_return out;
    }
    auto rows = co_await (*conn)->query(backlog_sql, {}, w.query_timeout);
    if (!rows) {
        log::warn("settlement: backlog scan: " + db::describe(rows.error()));
        co_return out;
    }
    out.ok = true;
    for (int row = 0; row < rows->rows(); ++row) {
        auto market = rows->get<std::int64_t>(row, 0);
        auto events = rows->get<std::int64_t>(row, 1);
        auto age = rows->get<std::int64_t>(row, 2);
        if (!market || !events || !age) {
            continue;
        }
        out.markets.push_back(*market);
        out.events += *events;
        out.oldest_age_ms = std::max(out.oldest_age_ms, *age);
    }
    co_return out;
}

}  // namespace fulltime::actors::detail
