#pragma once
/// The reconciliation (docs/design.md, "Invariants": a scheduled reconciliation sums the ledger
/// per account and reports drift as an incident; it never silently corrects).
///
/// A run is two passes and an end, each step one short transaction on a connection of the
/// `background` pool, acquired for the step and given back after it (the SQL and why each
/// comparison is one statement: db/migrations/0007_reconciliation.sql):
///   1. the accounts in ascending account_id, reconcile.chunk_accounts per step: available,
///      reserved and owed against the ledger's sums (balance_drift incidents);
///   2. the ledger in ascending transfer_id, reconcile.chunk_transfers per step: each transfer's
///      currency against its accounts' (currency_mismatch), and each currency's sum as its
///      owners hold it, added up over the steps;
///   3. each currency's sum recorded (currency_imbalance), then the open incidents counted.
/// reconcile.chunk_pause_ms separates the steps; a run longer than reconcile.run_timeout_ms
/// stops at the next step and fails. A failed run closes nothing it did not check.
///
/// The actor runs it every reconcile.interval_ms (0: only on demand) and on demand
/// (run_now: POST /v1/reconcile). One run at a time per engine: a request that arrives during a
/// run is answered by the next run, which starts as soon as the current one ends and serves
/// every request that arrived meanwhile, so an answer always reflects the books after the
/// request. `fulltime reconcile` calls reconcile_once, the same code, without the actor.
///
/// Threading is as for placement and settlement: the actor never calls libpq; the run is a
/// coroutine on the io_context and its result comes back as a message. CAF stays out of this
/// header.

#include "fulltime/config/config.hpp"
#include "fulltime/db/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace caf {
class actor_system;
}  // namespace caf

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::metrics {
class counter;
class gauge;
class registry;
}  // namespace fulltime::metrics

namespace fulltime::actors {

/// Holds one currency as a run saw it.
struct reconciled_currency {
    std::string code;
    std::int64_t accounts = 0;         ///< its accounts compared by the run
    std::int64_t imbalance_minor = 0;  ///< its ledger's sum as its owners hold it; 0 is right
};

/// Holds what one reconciliation run found and did.
struct reconcile_summary {
    std::string started_at;  ///< "YYYY-MM-DDTHH:MM:SS.ffffffZ"
    std::int64_t duration_ms = 0;
    std::int64_t accounts_checked = 0;
    std::int64_t chunks = 0;  ///< account chunks
    std::int64_t transfers_checked = 0;
    std::int64_t transfer_chunks = 0;
    std::int64_t drifts = 0;      ///< (account, side) pairs that differ from the ledger
    std::int64_t mismatches = 0;  ///< transfers whose currency differs from an account's
    std::int64_t incidents_opened = 0;
    std::int64_t incidents_seen_again = 0;
    std::int64_t incidents_resolved = 0;
    /// Open incidents of every kind after the run, (kind, count) for each kind the schema has.
    std::vector<std::pair<std::string, std::int64_t>> incidents_open;
    std::vector<reconciled_currency> currencies;  ///< by code

    /// Returns the open incidents of every kind.
    std::int64_t incidents_open_total() const noexcept;
    /// Returns the open incidents of the kinds a reconciliation reports (balance_drift,
    /// currency_mismatch, currency_imbalance).
    std::int64_t reconciliation_incidents_open() const noexcept;
};

/// Holds the settings of one run.
struct reconcile_run_settings {
    std::int64_t chunk_accounts = 1000;
    std::int64_t chunk_transfers = 20000;
    std::chrono::milliseconds chunk_pause{0};
    std::chrono::milliseconds run_timeout{600000};
    std::int64_t lock_timeout_ms = 1000;
    std::int64_t statement_timeout_ms = 60000;
    std::chrono::milliseconds query_timeout{65000};  ///< client-side deadline of one step
    /// When set, the accounts checked so far by the run, updated after each chunk (the
    /// service's fulltime_reconcile_run_accounts_checked: a long run's progress).
    metrics::gauge* accounts_progress = nullptr;

    /// Returns the settings of cfg.reconcile (the round-trip deadline: statement timeout plus
    /// the configured query timeout, so the server's limit fires first).
    static reconcile_run_settings from(const config& cfg);
};

/// Runs one reconciliation on connections of `pool` (one per step) and returns its summary.
/// Fails with the first step's failure (errc::deadline_exceeded past settings.run_timeout,
/// errc::pool_closed once `stop` is set: both read between steps). Must be awaited on the
/// pool's executor.
boost::asio::awaitable<db::outcome<reconcile_summary>> reconcile_once(
    db::pool& pool, reconcile_run_settings settings,
    std::shared_ptr<const std::atomic<bool>> stop = {});

/// Returns the summary as the JSON object of POST /v1/reconcile and `fulltime reconcile --json`
/// (docs/protocol-feed.md): money as decimal strings.
std::string to_json(const reconcile_summary& summary);

/// Holds the series of the reconciliation, registered once in the engine's registry.
struct reconciliation_metrics {
    /// Registers every series in `registry`, which must outlive this object.
    explicit reconciliation_metrics(metrics::registry& registry);

    /// Records a finished run: counters, the last run's duration, the last success's time and
    /// the open incidents.
    void record(const db::outcome<reconcile_summary>& run) noexcept;
    /// Sets the open-incident gauges, (kind, count) as in reconcile_summary::incidents_open.
    void set_open(const std::vector<std::pair<std::string, std::int64_t>>& open) noexcept;

    metrics::counter& runs_ok;             ///< runs that checked everything
    metrics::counter& runs_failed;         ///< runs that stopped on an error
    metrics::counter& accounts_checked;    ///< accounts compared, over all runs
    metrics::counter& transfers_checked;   ///< transfers read, over all runs
    metrics::gauge& running;               ///< 1 while a run is in progress
    metrics::gauge& run_accounts_checked;  ///< accounts checked by the run in progress, or the last
    /// Open incidents by kind (fulltime_incidents_open{kind=...}), in the schema's kind order.
    std::array<metrics::gauge*, 4> incidents_open{};
    std::atomic<std::int64_t> last_duration_us{0};      ///< the last run's, finished or failed
    std::atomic<std::int64_t> last_success_unix_ms{0};  ///< when the last complete run ended
};

/// Starts and owns the reconciliation actor.
class reconciliation_service {
public:
    /// Spawns the actor; its first scheduled run starts reconcile.interval_ms from now (none
    /// when 0). `io` is the executor the pool was made with. The pool, system and metrics must
    /// outlive this object.
    reconciliation_service(caf::actor_system& system, boost::asio::any_io_executor io,
                           db::pool& background, const config& cfg,
                           reconciliation_metrics& metrics);
    ~reconciliation_service();
    reconciliation_service(const reconciliation_service&) = delete;
    reconciliation_service& operator=(const reconciliation_service&) = delete;

    /// Runs a reconciliation that starts after this call (see the header) and returns its
    /// summary. Fails with the run's failure, errc::deadline_exceeded when no answer came within
    /// reconcile.run_timeout_ms, or errc::pool_closed when the service is stopping. Must be
    /// awaited on an executor of the io_context.
    boost::asio::awaitable<db::outcome<reconcile_summary>> run_now();

    /// Stops the actor: a run in progress ends at its next step, waiting requests are answered
    /// pool_closed. Call on the io_context before the pools close.
    void stop();

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace fulltime::actors
