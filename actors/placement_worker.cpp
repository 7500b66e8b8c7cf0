#include "actors/placement_detail.hpp"

#include "fulltime/core/assert.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/placement_statements.hpp"
#include "fulltime/db/transaction.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <optional>
#include <string>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

bets::place_result failed_result() {
    bets::place_result r;
    r.kind = bets::place_result::status::failed;
    return r;
}

// Whether the group's transaction wrote (placed at least one bet): only then has it a commit
// position worth reading.
bool wrote(const db::place_group_rows& rows) {
    for (int row = 0; row < rows.size(); ++row) {
        if (auto read = rows.at(row); read && read->xid != 0) {
            return true;
        }
    }
    return false;
}

group_answer all(std::size_t n, const bets::place_result& r) {
    return group_answer{std::vector<bets::place_result>(n, r), {}, {}};
}

// The group as fulltime_place_group's array parameters.
db::place_group_params encode_group(const std::vector<group_item>& items) {
    std::vector<db::place_group_item> entries;
    entries.reserve(items.size());
    for (const auto& it : items) {
        entries.push_back(db::place_group_item{&it.request, it.fingerprint});
    }
    return db::encode_place_group(entries);
}

// The answer for every item when the group may not run (any more): the worker stopped or the
// deadline passed.
std::optional<group_answer> refusal_before_call(const placement_worker& w, steady::time_point now,
                                                steady::time_point deadline, std::size_t n) {
    if (w.closed) {
        return all(n, busy_result("the server is shutting down: retry with the same "
                                  "idempotency_key"));
    }
    if (now >= deadline) {
        w.metrics->busy_deadline.inc();
        return all(n, busy_result("the placement did not complete in time: retry with the same "
                                  "idempotency_key"));
    }
    return std::nullopt;
}

// One answer per item from fulltime_place_group's rows, in the items' order; an item without a
// readable row fails alone, a row count other than one per item fails the whole group.
group_answer answer_rows(const db::place_group_rows& rows, std::size_t n, std::uint64_t commit_lsn,
                         steady::time_point sent, steady::time_point back) {
    if (rows.size() != static_cast<int>(n)) {
        log::error("placement: fulltime_place_group returned " + std::to_string(rows.size()) +
                   " rows for " + std::to_string(n));
        return all(n, failed_result());
    }
    std::vector<bets::place_result> results(n, failed_result());
    for (int row = 0; row < rows.size(); ++row) {
        auto read = rows.at(row);
        if (!read || read->item < 1 || static_cast<std::size_t>(read->item) > n) {
            log::error("placement: fulltime_place_group returned an unexpected shape");
            continue;
        }
        auto result = bets::read_place_outcome(read->outcome, read->response);
        if (!result) {
            log::error("placement: " + result.error().message);
            continue;
        }
        result->xid = read->xid;
        result->commit_lsn = read->xid != 0 ? commit_lsn : 0;
        results[static_cast<std::size_t>(read->item - 1)] = std::move(*result);
    }
    return group_answer{std::move(results), sent, back};
}

/// Holds the tries a group has left: after lock timeouts and after lost connections.
struct tries {
    std::size_t lock_retries = 0;
    std::size_t reconnects = 0;
};

/// Says what follows a failed fulltime_place_group.
enum class after_failure { retry, busy_locked, busy_unavailable, run_alone };

// Classifies a failed call, counting it in the metrics and in `used`.
after_failure classify_failure(const db::failure& f, bool broken, const placement_worker& w,
                               tries& used) {
    placement_metrics& m = *w.metrics;
    if (f.retryable()) {
        // Lock timeout (or deadlock / serialization failure): the function rolled back
        // everything, key included, so running it again with the same key is safe.
        if (f.code == db::errc::lock_timeout) {
            m.lock_timeouts.inc();
        }
        if (used.lock_retries < w.lock_retries_max) {
            ++used.lock_retries;
            m.retries.inc();
            return after_failure::retry;
        }
        m.busy_locked.inc();
        return after_failure::busy_locked;
    }
    if (broken || f.code == db::errc::connection_lost || f.code == db::errc::deadline_exceeded) {
        // Whether the lost call committed is unknown; the same key makes the next execution
        // return its result if it did.
        log::warn("placement: connection failed mid-call: " + db::describe(f));
        if (used.reconnects < limits::placement_reconnects_max) {
            ++used.reconnects;
            m.reconnects.inc();
            return after_failure::retry;
        }
        m.busy_unavailable.inc();
        return after_failure::busy_unavailable;
    }
    log::error("placement: fulltime_place_group failed: " + db::describe(f));
    return after_failure::run_alone;
}

}  // namespace

bets::place_result busy_result(std::string message) {
    bets::place_result r;
    r.kind = bets::place_result::status::busy;
    r.message = std::move(message);
    return r;
}

namespace {

// Whatever failed may be one item's doing: each runs again alone, so only the bad one fails.
// The group rolled back as a whole, so no item has run yet.
asio::awaitable<group_answer> execute_alone(std::shared_ptr<placement_worker> worker,
                                            std::vector<group_item> items,
                                            steady::time_point deadline) {
    group_answer alone;
    alone.results.reserve(items.size());
    for (auto& it : items) {
        std::vector<group_item> one;
        one.push_back(std::move(it));
        group_answer a = co_await execute_group(worker, std::move(one), deadline);
        alone.results.push_back(std::move(a.results.front()));
        alone.sent = a.sent;
        alone.back = a.back;
    }
    co_return alone;
}

}  // namespace

asio::awaitable<group_answer> execute_group(std::shared_ptr<placement_worker> worker,
                                            std::vector<group_item> items,
                                            steady::time_point deadline) {
    FULLTIME_DEBUG_ASSERT(!items.empty() && items.size() <= limits::placement_group_max);
    placement_worker& w = *worker;
    const std::size_t n = items.size();
    const db::place_group_params group = encode_group(items);
    placement_metrics& m = *w.metrics;
    tries used;
    for (;;) {
        const auto now = steady::now();
        if (auto refused = refusal_before_call(w, now, deadline, n)) {
            co_return std::move(*refused);
        }
        if (!w.conn) {
            auto acquired = co_await w.pool->acquire();
            if (!acquired) {
                log::warn("placement: no connection: " + db::describe(acquired.error()));
                m.busy_unavailable.inc();
                co_return all(
                    n, busy_result("no database connection is available: retry with the same "
                                   "idempotency_key"));
            }
            w.conn = std::move(*acquired);
            note_opened(w);
        }
        // The call owns the connection while it runs, so that stop() cannot release it under a
        // pending round trip; it goes back to the worker afterwards unless broken or stopped.
        db::pooled_connection conn = std::move(w.conn);
        const auto remaining =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        const auto timeout =
            std::max(std::chrono::milliseconds(1), std::min(w.query_timeout, remaining));
        const auto sent = steady::now();
        auto rows = co_await db::place_group(*conn, group, w.lock_timeout_ms,
                                             static_cast<std::int64_t>(w.shard_hint), timeout);
        std::uint64_t commit_lsn = 0;
        if (rows && w.read_commit_lsn && wrote(*rows)) {
            // One more round trip on the same session, after the commit: the position a standby
            // must replay for the session's reads to show these bets. Without it they still
            // answer; those sessions' reads may then miss the bets on the standby.
            auto lsn = co_await db::read_commit_lsn(*conn);
            if (lsn) {
                commit_lsn = *lsn;
            } else {
                log::warn("placement: reading the commit position: " + db::describe(lsn.error()));
            }
        }
        const auto back = steady::now();
        const bool broken = conn->broken();
        if (!w.closed && !broken) {
            w.conn = std::move(conn);
        }
        if (rows) {
            co_return answer_rows(*rows, n, commit_lsn, sent, back);
        }
        switch (classify_failure(rows.error(), broken, w, used)) {
            case after_failure::retry:
                continue;
            case after_failure::busy_locked:
                co_return all(
                    n, busy_result("the account is busy: retry with the same idempotency_key"));
            case after_failure::busy_unavailable:
                co_return all(n, busy_result("the database is unavailable: retry with the same "
                                             "idempotency_key"));
            case after_failure::run_alone:
                break;
        }
        if (n == 1) {
            co_return all(n, failed_result());
        }
        co_return co_await execute_alone(worker, std::move(items), deadline);
    }
}

void note_opened(placement_worker& worker) noexcept {
    if (!worker.opened) {
        worker.opened = true;
        if (worker.opened_count) {
            worker.opened_count->fetch_add(1, std::memory_order_release);
        }
    }
}

asio::awaitable<void> warm(std::shared_ptr<placement_worker> worker) {
    asio::steady_timer pause(co_await asio::this_coro::executor);
    worker->open_pause = &pause;
    // Also when the frame is destroyed unfinished (its loop torn down).
    struct forget {
        placement_worker& w;
        ~forget() { w.open_pause = nullptr; }
    } forget_pause{*worker};
    auto backoff = std::chrono::milliseconds(limits::placement_open_retry_ms_min);
    // The pool's own connect gives up at connect_timeout; the wait allows for the others
    // opening at the same moment on the same loop.
    const auto wait = worker->connect_timeout * 2;
    while (!worker->closed && !worker->opened) {
        auto acquired = co_await worker->pool->acquire(wait);
        if (acquired) {
            // A call that started meanwhile acquired its own; this one then goes back to the pool.
            if (!worker->closed && !worker->conn) {
                worker->conn = std::move(*acquired);
            }
            note_opened(*worker);
            break;
        }
        if (worker->closed) {
            break;
        }
        log::warn("placement: opening a connection failed (trying again in " +
                  std::to_string(backoff.count()) + " ms): " + db::describe(acquired.error()));
        pause.expires_after(backoff);
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        backoff =
            std::min(backoff * 2, std::chrono::milliseconds(limits::placement_open_retry_ms_max));
    }
}

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
    for (std::size_t batch = 0; batch < limits::purge_batches_per_round_max && !w.closed; ++batch) {
        // One short transaction per batch: a long DELETE would hold an old snapshot (and the
        // deleted rows' locks) for its whole run, which docs/design.md's observability calls out.
        auto deleted =
            co_await db::purge_idempotency_keys(**conn, w.retention_s, batch_max, options);
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
