#pragma once
/// Reconciliation and incidents in SQL: one chunk of the accounts pass, one chunk of the ledger
/// pass, the end of a run (each currency's sum), the open incidents per kind, and the incident
/// listing of GET /v1/incidents. The rules, and why each comparison is one statement, are in
/// db/functions/fulltime_reconcile_accounts.sql, fulltime_reconcile_transfers.sql and
/// fulltime_reconcile_currencies.sql; the run that strings the chunks together is
/// actors::reconcile_once (include/fulltime/actors/reconciliation.hpp).

#include "fulltime/db/codes.hpp"
#include "fulltime/db/connection.hpp"
#include "fulltime/db/transaction.hpp"

#include <boost/asio/awaitable.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fulltime::db {

/// Holds what one incident-writing step did to the incidents table.
struct incident_changes {
    std::int64_t opened = 0;      ///< new incidents
    std::int64_t seen_again = 0;  ///< open incidents found again (last_seen, runs + 1)
    std::int64_t resolved = 0;    ///< open incidents no longer found, closed

    /// Adds another step's changes.
    incident_changes& operator+=(const incident_changes& other) noexcept {
        opened += other.opened;
        seen_again += other.seen_again;
        resolved += other.resolved;
        return *this;
    }
};

/// Holds the per-call settings of the reconciliation's statements.
struct reconcile_call_options {
    transaction_options transaction;             ///< lock_timeout and statement_timeout (SET LOCAL)
    std::chrono::milliseconds query_timeout{0};  ///< client-side deadline of the round trip
    std::size_t lock_retries_max = 3;            ///< retries of a chunk after a lock timeout
};

/// Holds one chunk of the accounts pass.
struct accounts_chunk {
    std::optional<std::int64_t> last_account;  ///< none when no account was left
    std::int64_t accounts_checked = 0;         ///< fewer than the limit: the pass is complete
    std::int64_t drifts = 0;                   ///< (account, side) pairs that differ
    incident_changes changes;
    std::vector<std::pair<std::string, std::int64_t>> accounts_per_currency;
};

/// Compares the next `limit` accounts after `after_account` with their ledger sums
/// (fulltime_reconcile_accounts) in one short transaction, and records what differs.
/// `run_started` is the run's start, "YYYY-MM-DDTHH:MM:SS.ffffffZ".
boost::asio::awaitable<outcome<accounts_chunk>> reconcile_accounts_chunk(
    connection& conn, std::int64_t after_account, std::int64_t limit, std::string run_started,
    reconcile_call_options options);

/// Holds one chunk of the ledger pass.
struct transfers_chunk {
    std::optional<std::int64_t> last_transfer;  ///< none when no transfer was left
    std::int64_t transfers_checked = 0;         ///< fewer than the limit: the pass is complete
    std::int64_t mismatches = 0;                ///< transfers whose currency is not their account's
    incident_changes changes;
    /// Every currency of the chunk and what the chunk adds to its owners' sum (0 normally).
    std::vector<std::pair<std::string, std::int64_t>> currency_sums;
};

/// Reads the next `limit` transfers after `after_transfer` (fulltime_reconcile_transfers) in one
/// short transaction and records the currency mismatches among them.
boost::asio::awaitable<outcome<transfers_chunk>> reconcile_transfers_chunk(
    connection& conn, std::int64_t after_transfer, std::int64_t limit, std::string run_started,
    reconcile_call_options options);

/// Records each currency's sum over the whole ledger (fulltime_reconcile_currencies): nonzero
/// sums as currency_imbalance incidents, open imbalances no longer found resolved. Call only
/// after a complete ledger pass. Currency codes are [A-Z]{3}, as the schema's domain holds them.
boost::asio::awaitable<outcome<incident_changes>> reconcile_currencies(
    connection& conn, std::vector<std::pair<std::string, std::int64_t>> sums,
    std::string run_started, reconcile_call_options options);

/// Names the kinds of incident the schema allows (fulltime_codes' incident_kind, which
/// incidents_kind_check lists), in a fixed order for metrics.
inline constexpr auto incident_kinds = codes::incident_kind;

/// Returns the number of open incidents of each kind, in the order of incident_kinds.
boost::asio::awaitable<outcome<std::array<std::int64_t, incident_kinds.size()>>>
count_open_incidents(connection& conn, std::chrono::milliseconds query_timeout);

/// Holds one incident row as GET /v1/incidents shows it (times in the wire format).
struct incident_row {
    std::int64_t incident_id = 0;
    std::string kind;
    std::string subject;
    std::optional<std::int64_t> account_id;
    std::optional<std::string> side;
    std::optional<std::string> currency;
    std::optional<std::int64_t> market_id;
    std::optional<std::int64_t> bet_id;
    std::optional<std::int64_t> expected;
    std::optional<std::int64_t> actual;
    std::string details_json;  ///< the details object, as JSON text
    std::string first_seen;
    std::string last_seen;
    std::int64_t runs = 0;
    std::optional<std::string> resolved_at;
    std::optional<std::string> resolution;
};

/// Names which incidents a listing returns.
enum class incident_status { open = 1, resolved, all };

/// Holds the filter of a listing; every field has been validated by the caller.
struct incident_filter {
    incident_status status = incident_status::open;
    std::optional<std::string> kind;  ///< one of incident_kinds
    std::optional<std::int64_t> account_id;
    std::int64_t limit = 100;  ///< 1..limits::incidents_page_max
};

/// Returns the incidents that match, newest first.
boost::asio::awaitable<outcome<std::vector<incident_row>>> list_incidents(connection& conn,
                                                                          incident_filter filter);

}  // namespace fulltime::db
