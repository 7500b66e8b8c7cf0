#include "actors/placement_detail.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/transaction.hpp"
#include "fulltime/limits.hpp"

#include <algorithm>
#include <functional>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

// One statement, one round trip, its own transaction (autocommit): see 0002_placement.sql.
const std::string place_sql =
    "SELECT outcome, response::text FROM fulltime_place($1::bigint, $2::text, $3::text, "
    "$4::bigint, $5::bigint, $6::bigint, $7::text, $8::integer)";

const std::string purge_sql =
    "DELETE FROM idempotency_keys WHERE (account_id, idempotency_key) IN ("
    "SELECT account_id, idempotency_key FROM idempotency_keys "
    "WHERE created_at < now() - make_interval(secs => $1::bigint) "
    "ORDER BY created_at LIMIT $2::bigint)";

bets::place_result failed_result() {
    bets::place_result r;
    r.kind = bets::place_result::status::failed;
    return r;
}

}  // namespace

bets::place_result busy_result(std::string message) {
    bets::place_result r;
    r.kind = bets::place_result::status::busy;
    r.message = std::move(message);
    return r;
}

asio::awaitable<bets::place_result> execute_placement(std::shared_ptr<placement_worker> worker,
                                                      bets::place_request request,
                                                      std::string fingerprint,
                                                      steady::time_point deadline) {
    placement_worker& w = *worker;
    placement_metrics& m = *w.metrics;
    std::size_t lock_retries = 0;
    std::size_t reconnects = 0;
    for (;;) {
        const auto now = steady::now();
        if (w.closed) {
            co_return busy_result("the server is shutting down: retry with the same "
                                  "idempotency_key");
        }
        if (now >= deadline) {
            m.busy_deadline.inc();
            co_return busy_result("the placement did not complete in time: retry with the same "
                                  "idempotency_key");
        }
        if (!w.conn) {
            auto acquired = co_await w.pool->acquire();
            if (!acquired) {
                log::warn("placement: no connection: " + db::describe(acquired.error()));
                m.busy_unavailable.inc();
                co_return busy_result("no database connection is available: retry with the same "
                                      "idempotency_key");
            }
            w.conn = std::move(*acquired);
        }
        // The call owns the connection while it runs, so that stop() cannot release it under a
        // pending round trip; it goes back to the worker afterwards unless broken or stopped.
        db::pooled_connection conn = std::move(w.conn);
        const auto remaining =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        const auto timeout = std::max(std::chrono::milliseconds(1),
                                      std::min(w.query_timeout, remaining));
        db::params args(request.account_id, request.idempotency_key, fingerprint,
                        request.selection_id, request.stake_minor, request.odds_units,
                        bets::to_string(request.accept),
                        static_cast<std::int64_t>(w.lock_timeout_ms));
        auto rows = co_await conn->query(place_sql, std::move(args), timeout);
        const bool broken = conn->broken();
        if (!w.closed && !broken) {
            w.conn = std::move(conn);
        }
        if (rows) {
            if (rows->rows() != 1) {
                log::error("placement: fulltime_place returned no row");
                co_return failed_result();
            }
            auto outcome = rows->get<std::string_view>(0, 0);
            auto response = rows->get<std::string_view>(0, 1);
            if (!outcome || !response) {
                log::error("placement: fulltime_place returned an unexpected shape");
                co_return failed_result();
            }
            auto result = bets::read_place_outcome(*outcome, *response);
            if (!result) {
                log::error("placement: " + result.error().message);
                co_return failed_result();
            }
            co_return std::move(*result);
        }
        const db::failure& f = rows.error();
        if (f.retryable()) {
            // Lock timeout (or deadlock / serialization failure): the function rolled back
            // everything, key included, so running it again with the same key is safe.
            if (f.code == db::errc::lock_timeout) {
                m.lock_timeouts.inc();
            }
            if (lock_retries < w.lock_retries_max) {
                ++lock_retries;
                m.retries.inc();
                continue;
            }
            m.busy_locked.inc();
            co_return busy_result("the account is busy: retry with the same idempotency_key");
        }
        if (broken || f.code == db::errc::connection_lost ||
            f.code == db::errc::deadline_exceeded) {
            // Whether the lost call committed is unknown; the same key makes the next execution
            // return its result if it did.
            log::warn("placement: connection failed mid-call: " + db::describe(f));
            if (reconnects < limits::placement_reconnects_max) {
                ++reconnects;
                m.reconnects.inc();
                continue;
            }
            m.busy_unavailable.inc();
            co_return busy_result("the database is unavailable: retry with the same "
                                  "idempotency_key");
        }
        log::error("placement: fulltime_place failed: " + db::describe(f));
        co_return failed_result();
    }
}

namespace {

asio::awaitable<db::outcome<std::int64_t>> delete_batch(std::int64_t retention_s,
                                                        std::int64_t batch_max,
                                                        db::connection& conn) {
    auto deleted = co_await conn.query(purge_sql, db::params(retention_s, batch_max));
    if (!deleted) {
        co_return db::outcome<std::int64_t>{deleted.error()};
    }
    co_return deleted->affected_rows();
}

}  // namespace

asio::awaitable<std::optional<std::int64_t>> purge_round(std::shared_ptr<purge_worker> worker) {
    purge_worker& w = *worker;
    placement_metrics& m = *w.metrics;
    if (w.closed) {
        co_return std::nullopt;
    }
    auto conn = co_await w.pool->acquire();
    if (!conn) {
        m.purge_failures.inc();
        log::warn("idempotency purge: no connection: " + db::describe(conn.error()));
        co_return std::nullopt;
    }
    db::transaction_options options;
    options.lock_timeout_ms = w.lock_timeout_ms;
    options.statement_timeout_ms = w.statement_timeout_ms;
    const auto batch_max = static_cast<std::int64_t>(w.batch_max);
    std::int64_t total = 0;
    for (std::size_t batch = 0; batch < limits::purge_batches_per_round_max && !w.closed;
         ++batch) {
        // One short transaction per batch: a long DELETE would hold an old snapshot (and the
        // deleted rows' locks) for its whole run, which DESIGN.md's observability calls out.
        auto deleted = co_await db::in_transaction(
            **conn, options, std::bind_front(&delete_batch, w.retention_s, batch_max));
        if (!deleted) {
            m.purge_failures.inc();
            log::warn("idempotency purge: " + db::describe(deleted.error()));
            co_return std::nullopt;
        }
        m.purge_batches.inc();
        m.purged_keys.inc(static_cast<std::uint64_t>(*deleted));
        total += *deleted;
        if (*deleted < batch_max) {
            break;
        }
    }
    co_return total;
}

}  // namespace fulltime::actors::detail
