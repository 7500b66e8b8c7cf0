// One reconciliation run: the steps of reconciliation.hpp, shared by the actor and by
// `fulltime reconcile`.

#include "fulltime/actors/reconciliation.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/reconciliation_statements.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

namespace fulltime::actors {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

namespace {

std::string utc_now_text() {
    const auto now = std::chrono::system_clock::now();
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
    const std::time_t seconds = static_cast<std::time_t>(us / 1'000'000);
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char buffer[96];  // room for any int the format could print (GCC checks)
    std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long long>(us % 1'000'000));
    return buffer;
}

// Per currency: accounts compared and the sum as its owners hold it, over the whole run.
struct currency_totals {
    std::int64_t accounts = 0;
    std::int64_t sum_minor = 0;
};

// Tells whether the run must end before its next step, and why.
struct run_guard {
    steady::time_point deadline;
    std::shared_ptr<const std::atomic<bool>> stop;

    std::optional<db::failure> check() const {
        if (stop && stop->load()) {
            return db::failure{db::errc::pool_closed, {}, "the reconciliation is stopping"};
        }
        if (steady::now() > deadline) {
            return db::failure{db::errc::deadline_exceeded,
                               {},
                               "the run took longer than reconcile.run_timeout_ms"};
        }
        return std::nullopt;
    }
};

asio::awaitable<void> pause(std::chrono::milliseconds duration) {
    if (duration.count() <= 0) {
        co_return;
    }
    asio::steady_timer timer{co_await asio::this_coro::executor, duration};
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

std::optional<db::failure> add_currency(std::map<std::string, currency_totals>& totals,
                                        const std::string& code, std::int64_t accounts,
                                        std::int64_t sum_minor) {
    auto it = totals.find(code);
    if (it == totals.end()) {
        if (totals.size() >= limits::reconcile_currencies_max) {
            return db::failure{
                db::errc::bad_result, {}, "more currencies than limits::reconcile_currencies_max"};
        }
        it = totals.emplace(code, currency_totals{}).first;
    }
    it->second.accounts += accounts;
    it->second.sum_minor += sum_minor;
    return std::nullopt;
}

void add_changes(reconcile_summary& out, const db::incident_changes& c) {
    out.incidents_opened += c.opened;
    out.incidents_seen_again += c.seen_again;
    out.incidents_resolved += c.resolved;
}

}  // namespace

std::int64_t reconcile_summary::incidents_open_total() const noexcept {
    std::int64_t n = 0;
    for (const auto& [kind, count] : incidents_open) {
        n += count;
    }
    return n;
}

std::int64_t reconcile_summary::reconciliation_incidents_open() const noexcept {
    std::int64_t n = 0;
    for (const auto& [kind, count] : incidents_open) {
        if (kind == "balance_drift" || kind == "currency_mismatch" ||
            kind == "currency_imbalance") {
            n += count;
        }
    }
    return n;
}

reconcile_run_settings reconcile_run_settings::from(const config& cfg) {
    reconcile_run_settings s;
    s.chunk_accounts = static_cast<std::int64_t>(cfg.reconcile.chunk_accounts);
    s.chunk_transfers = static_cast<std::int64_t>(cfg.reconcile.chunk_transfers);
    s.chunk_pause = std::chrono::milliseconds(cfg.reconcile.chunk_pause_ms);
    s.run_timeout = std::chrono::milliseconds(cfg.reconcile.run_timeout_ms);
    s.lock_timeout_ms = cfg.reconcile.lock_timeout_ms;
    s.statement_timeout_ms = cfg.reconcile.statement_timeout_ms;
    s.query_timeout = std::chrono::milliseconds(cfg.reconcile.statement_timeout_ms +
                                                cfg.database.query_timeout_ms);
    return s;
}

namespace {

/// Holds what one run has found so far, and the options each of its steps calls with. It lives
/// in reconcile_once's frame, which awaits each step to its end.
struct run_state {
    reconcile_summary out;
    std::map<std::string, currency_totals> totals;
    db::reconcile_call_options options;
};

// 1. The accounts, chunk by chunk. A chunk with fewer accounts than asked is the last one (its
//    ledger range is open-ended, see db/functions/fulltime_reconcile_transfers.sql).
asio::awaitable<std::optional<db::failure>> check_accounts(db::pool& pool,
                                                           reconcile_run_settings settings,
                                                           run_guard guard, run_state& run) {
    reconcile_summary& out = run.out;
    std::int64_t after_account = 0;
    for (;;) {
        if (auto stopped = guard.check()) {
            co_return *stopped;
        }
        db::outcome<db::accounts_chunk> chunk = db::failure{};
        {
            auto conn = co_await pool.acquire();
            if (!conn) {
                co_return conn.error();
            }
            chunk = co_await db::reconcile_accounts_chunk(
                **conn, after_account, settings.chunk_accounts, out.started_at, run.options);
        }
        if (!chunk) {
            co_return chunk.error();
        }
        ++out.chunks;
        out.accounts_checked += chunk->accounts_checked;
        if (settings.accounts_progress != nullptr) {
            settings.accounts_progress->set(out.accounts_checked);
        }
        out.drifts += chunk->drifts;
        add_changes(out, chunk->changes);
        for (const auto& [code, accounts] : chunk->accounts_per_currency) {
            if (auto f = add_currency(run.totals, code, accounts, 0)) {
                co_return *f;
            }
        }
        if (chunk->accounts_checked < settings.chunk_accounts || !chunk->last_account) {
            break;
        }
        after_account = *chunk->last_account;
        co_await pause(settings.chunk_pause);
    }
    co_return std::nullopt;
}

// 2. The ledger, chunk by chunk, adding up each currency's sum.
asio::awaitable<std::optional<db::failure>> check_ledger(db::pool& pool,
                                                         reconcile_run_settings settings,
                                                         run_guard guard, run_state& run) {
    reconcile_summary& out = run.out;
    std::int64_t after_transfer = 0;
    for (;;) {
        co_await pause(settings.chunk_pause);
        if (auto stopped = guard.check()) {
            co_return *stopped;
        }
        db::outcome<db::transfers_chunk> chunk = db::failure{};
        {
            auto conn = co_await pool.acquire();
            if (!conn) {
                co_return conn.error();
            }
            chunk = co_await db::reconcile_transfers_chunk(
                **conn, after_transfer, settings.chunk_transfers, out.started_at, run.options);
        }
        if (!chunk) {
            co_return chunk.error();
        }
        ++out.transfer_chunks;
        out.transfers_checked += chunk->transfers_checked;
        out.mismatches += chunk->mismatches;
        add_changes(out, chunk->changes);
        for (const auto& [code, sum] : chunk->currency_sums) {
            if (auto f = add_currency(run.totals, code, 0, sum)) {
                co_return *f;
            }
        }
        if (chunk->transfers_checked < settings.chunk_transfers || !chunk->last_transfer) {
            break;
        }
        after_transfer = *chunk->last_transfer;
    }
    co_return std::nullopt;
}

// 3. The currencies' sums over the whole ledger, then what is open now.
asio::awaitable<std::optional<db::failure>> check_currencies(db::pool& pool,
                                                             reconcile_run_settings settings,
                                                             run_guard guard, run_state& run) {
    if (auto stopped = guard.check()) {
        co_return *stopped;
    }
    reconcile_summary& out = run.out;
    auto conn = co_await pool.acquire();
    if (!conn) {
        co_return conn.error();
    }
    std::vector<std::pair<std::string, std::int64_t>> sums;
    sums.reserve(run.totals.size());
    for (const auto& [code, t] : run.totals) {
        sums.emplace_back(code, t.sum_minor);
    }
    auto changes =
        co_await db::reconcile_currencies(**conn, std::move(sums), out.started_at, run.options);
    if (!changes) {
        co_return changes.error();
    }
    add_changes(out, *changes);
    auto open = co_await db::count_open_incidents(**conn, settings.query_timeout);
    if (!open) {
        co_return open.error();
    }
    for (std::size_t k = 0; k < db::incident_kinds.size(); ++k) {
        out.incidents_open.emplace_back(std::string(db::incident_kinds[k]), (*open)[k]);
    }
    co_return std::nullopt;
}

}  // namespace

asio::awaitable<db::outcome<reconcile_summary>> reconcile_once(
    db::pool& pool, reconcile_run_settings settings,
    std::shared_ptr<const std::atomic<bool>> stop) {
    const auto start = steady::now();
    const run_guard guard{start + settings.run_timeout, std::move(stop)};
    run_state run;
    run.out.started_at = utc_now_text();
    run.options.transaction.lock_timeout_ms = settings.lock_timeout_ms;
    run.options.transaction.statement_timeout_ms = settings.statement_timeout_ms;
    run.options.query_timeout = settings.query_timeout;
    run.options.lock_retries_max = limits::reconcile_step_lock_retries_max;

    const auto accounts_failed = co_await check_accounts(pool, settings, guard, run);
    if (accounts_failed) {
        co_return *accounts_failed;
    }
    const auto ledger_failed = co_await check_ledger(pool, settings, guard, run);
    if (ledger_failed) {
        co_return *ledger_failed;
    }
    const auto currencies_failed = co_await check_currencies(pool, settings, guard, run);
    if (currencies_failed) {
        co_return *currencies_failed;
    }
    reconcile_summary& out = run.out;
    for (const auto& [code, t] : run.totals) {
        out.currencies.push_back(reconciled_currency{code, t.accounts, t.sum_minor});
    }
    out.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start).count();
    co_return std::move(out);
}

std::string to_json(const reconcile_summary& s) {
    nlohmann::json open = nlohmann::json::object();
    for (const auto& [kind, count] : s.incidents_open) {
        open[kind] = count;
    }
    nlohmann::json currencies = nlohmann::json::array();
    for (const auto& c : s.currencies) {
        currencies.push_back({{"currency", c.code},
                              {"accounts", c.accounts},
                              {"imbalance", money::format_amount(c.imbalance_minor, c.code)}});
    }
    const nlohmann::json body{{"started_at", s.started_at},
                              {"duration_ms", s.duration_ms},
                              {"accounts_checked", s.accounts_checked},
                              {"chunks", s.chunks},
                              {"transfers_checked", s.transfers_checked},
                              {"transfer_chunks", s.transfer_chunks},
                              {"drifts", s.drifts},
                              {"currency_mismatches", s.mismatches},
                              {"incidents_opened", s.incidents_opened},
                              {"incidents_seen_again", s.incidents_seen_again},
                              {"incidents_resolved", s.incidents_resolved},
                              {"incidents_open", s.incidents_open_total()},
                              {"incidents_open_by_kind", std::move(open)},
                              {"currencies", std::move(currencies)}};
    return body.dump();
}

}  // namespace fulltime::actors
