#include "actors/settlement_detail.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/codes.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/settlement_statements.hpp"

#include <algorithm>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

// step_status lists fulltime_settle_step's own statuses first, in the order of their domain in
// fulltime_codes (db/codes.hpp), so a status is its index there.
constexpr bool is_status(step_status status, std::string_view code) {
    return db::codes::settle_status[static_cast<std::size_t>(status)] == code;
}
static_assert(is_status(step_status::idle, "idle") && is_status(step_status::gap, "gap") &&
              is_status(step_status::started, "started") &&
              is_status(step_status::fenced, "fenced") && is_status(step_status::batch, "batch") &&
              is_status(step_status::finished, "finished") &&
              is_status(step_status::lanes, "lanes"));
static_assert(db::codes::settle_status.size() == static_cast<std::size_t>(step_status::locked),
              "locked and failed are the engine's own, after the step's statuses");

step_status status_from(std::string_view s) {
    for (std::size_t i = 0; i < db::codes::settle_status.size(); ++i) {
        if (db::codes::settle_status[i] == s) {
            return static_cast<step_status>(i);
        }
    }
    return step_status::failed;
}

step_result failed(std::string why) {
    step_result r;
    r.status = step_status::failed;
    r.error = std::move(why);
    return r;
}

// Runs the statement of a step of `market_id` (lane < 0) or of a batch of its lane `lane`. (Not
// one conditional expression of the two co_awaits: GCC 12 destroyed its result twice.)
asio::awaitable<db::outcome<db::settle_step_row>> step_query(db::connection& conn,
                                                             const settlement_worker& w,
                                                             std::int64_t market_id,
                                                             std::int64_t lane,
                                                             std::int64_t batch) {
    if (lane < 0) {
        co_return co_await db::settle_step(conn, market_id, batch, w.lock_timeout_ms, w.lanes,
                                           w.query_timeout);
    }
    co_return co_await db::settle_lane(conn, market_id, lane, batch, w.lock_timeout_ms,
                                       w.query_timeout);
}

// Runs a step of `market_id` (lane < 0) or a batch of its lane `lane`.
asio::awaitable<step_result> step_once(std::shared_ptr<settlement_worker> worker,
                                       std::int64_t market_id, std::int64_t lane) {
    settlement_worker& w = *worker;
    if (w.closed) {
        co_return failed("the settlement service is stopping");
    }
    auto conn = co_await w.settlement->acquire();
    if (!conn) {
        co_return failed("no settlement connection: " + db::describe(conn.error()));
    }
    const auto start = std::chrono::steady_clock::now();
    // The step runs after the acquire: record its own time, not the wait for a connection.
    // The governor's batch when it steers (0 until its first decision), else the configured one.
    std::int64_t batch = w.batch_bets_max;
    if (w.pacing) {
        if (const auto governed = w.pacing->batch_bets.load(std::memory_order_relaxed);
            governed > 0) {
            batch = std::min(batch, governed);
        }
    }
    auto row = co_await step_query(**conn, w, market_id, lane, batch);
    const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start);
    w.metrics->step_latency.record(elapsed);
    if (!row) {
        const db::failure& f = row.error();
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
    step_result r;
    r.status = status_from(row->status);
    r.seq = row->seq;
    r.kind = std::move(row->kind);
    r.bets = row->bets;
    r.effects = row->effects;
    r.lanes = row->lanes;
    r.elapsed = elapsed;
    if (r.status == step_status::finished && lane < 0) {
        // Only for metrics and the log: a failure here changes nothing that was applied.
        auto read = co_await db::read_event_outcome(**conn, market_id, r.seq, w.query_timeout);
        if (read && *read) {
            r.skipped = std::move((*read)->skipped);
            r.refusal = std::move((*read)->refusal);
        } else if (!read) {
            log::warn("settlement: reading the outcome of market " + std::to_string(market_id) +
                      " seq " + std::to_string(r.seq) + ": " + db::describe(read.error()));
        }
    }
    co_return r;
}

}  // namespace

asio::awaitable<step_result> run_step(std::shared_ptr<settlement_worker> worker,
                                      std::int64_t market_id) {
    auto r = co_await step_once(std::move(worker), market_id, -1);
    r.steps[static_cast<std::size_t>(r.status)] = 1;
    co_return r;
}

asio::awaitable<step_result> run_lane(std::shared_ptr<settlement_worker> worker,
                                      std::int64_t market_id, std::int64_t lane) {
    auto r = co_await step_once(std::move(worker), market_id, lane);
    // A lane that is done is not an event finished: only its batches (and failures) count.
    if (r.status == step_status::batch || r.status == step_status::locked ||
        r.status == step_status::failed) {
        r.steps[static_cast<std::size_t>(r.status)] = 1;
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
    auto markets = co_await db::scan_settlement_backlog(**conn, w.query_timeout);
    if (!markets) {
        log::warn("settlement: backlog scan: " + db::describe(markets.error()));
        co_return out;
    }
    out.ok = true;
    for (const auto& m : *markets) {
        out.markets.push_back(m.market_id);
        out.events += m.events;
        out.oldest_age_ms = std::max(out.oldest_age_ms, m.oldest_age_ms);
    }
    co_return out;
}

}  // namespace fulltime::actors::detail
