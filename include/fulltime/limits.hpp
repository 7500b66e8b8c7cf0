#pragma once
/// Every bound of the engine, in one place (STYLE.md, convention 3).
///
/// A runtime setting from the configuration must lie within the bounds here; the configuration
/// loader checks it at startup and refuses to start otherwise. Names carry their unit last.

#include <cstddef>
#include <cstdint>

namespace fulltime::limits {

// --- Money -------------------------------------------------------------------------------------

/// Decimal places of every currency's minor unit ("10.00" is 1000 minor units).
inline constexpr int money_decimals = 2;
/// Largest amount the engine accepts in one request, in minor units. Far below INT64_MAX so that
/// sums of many amounts (balances, exposure) cannot overflow a bigint.
inline constexpr std::int64_t amount_minor_max = 1'000'000'000'000'000;  // 10^15 minor units
/// Decimal places of odds; odds are fixed point in units of 1/10^odds_decimals.
inline constexpr int odds_decimals = 4;
/// Longest decimal string accepted for an amount or odds, digits and separator included.
inline constexpr std::size_t decimal_chars_max = 32;

// --- Wire protocol -----------------------------------------------------------------------------

/// Longest idempotency key, in bytes.
inline constexpr std::size_t idempotency_key_bytes_max = 255;
/// Longest client-chosen request id, in bytes.
inline constexpr std::size_t request_id_bytes_max = 128;
/// Upper bound on the configurable WebSocket frame (message) size.
inline constexpr std::size_t frame_bytes_max = 1 << 20;
/// Upper bound on the configurable in-flight requests per WebSocket connection.
inline constexpr std::size_t inflight_per_connection_max = 1024;
/// Upper bound on the configurable number of concurrent connections.
inline constexpr std::size_t connections_max = 100'000;
/// Largest HTTP request body the gateway reads (POST /v1/feed and the operator API).
inline constexpr std::size_t http_body_bytes_max = 1 << 20;
/// Largest HTTP request header block.
inline constexpr std::size_t http_header_bytes_max = 16 * 1024;
/// Messages queued for writing on one WebSocket before the connection is closed as too slow.
inline constexpr std::size_t ws_write_queue_max = 4096;

// --- Database ----------------------------------------------------------------------------------

/// Upper bound on the configurable size of one connection pool.
inline constexpr std::size_t pool_size_max = 512;
/// Upper bound on the configurable wait queue of one pool.
inline constexpr std::size_t pool_queue_max = 100'000;
/// Upper bound on any configurable wait or timeout, in milliseconds (one hour).
inline constexpr std::int64_t timeout_ms_max = 3'600'000;
/// Parameters in one statement (libpq itself allows 65535).
inline constexpr std::size_t statement_params_max = 65'535;

// --- Pushes and read paths ---------------------------------------------------------------------

/// Outbox rows one pass of the settlement push loop reads in one statement. A full page means
/// more rows may be waiting, and the loop reads the next page at once; a shorter one ends the
/// pass until the next interval.
inline constexpr std::size_t push_scan_rows_max = 2000;
/// Markets with a settlement backlog that GET /v1/diagnostics lists (one JSON document built by
/// PostgreSQL, so its size is bounded here).
inline constexpr std::size_t diagnostics_backlog_markets_max = 100;
/// Events refused as a whole that GET /v1/diagnostics lists, the newest first.
inline constexpr std::size_t diagnostics_refused_events_max = 20;
/// Result events GET /v1/feed/markets/{id}/events lists for one market, the newest first.
inline constexpr std::size_t market_events_listed_max = 100;

// --- Placement ---------------------------------------------------------------------------------

/// Requests waiting in one placement actor's queue (the one running excluded). Beyond it a
/// request is answered `busy` at once: at a few milliseconds per placement, a full queue is
/// already most of a second of waiting, and more would only turn into timeouts.
inline constexpr std::size_t placement_queue_per_actor_max = 256;
/// Placements one actor executes together in one transaction (natural group commit): the
/// requests that queued while its previous transaction ran. Small, because the group holds the
/// balance rows it locked until its one commit, and a lock timeout retries the whole group.
inline constexpr std::size_t placement_group_max = 16;
/// Re-executions of one placement on a fresh connection after its connection broke. Safe
/// because the idempotency key makes a re-execution return the first result.
inline constexpr std::size_t placement_reconnects_max = 2;
/// Upper bound on the configurable lock-timeout retries of one placement.
inline constexpr std::size_t placement_lock_retries_max = 100;
/// Purge transactions in one round of the idempotency purge actor; the rest waits for the next
/// round, so that one round cannot monopolise a background connection.
inline constexpr std::size_t purge_batches_per_round_max = 1000;

// --- Reconciliation ----------------------------------------------------------------------------

/// Longest configurable pause between scheduled reconciliation runs (7 days).
inline constexpr std::int64_t reconcile_interval_ms_max = 7LL * 24 * 3600 * 1000;
/// Accounts one reconciliation chunk may compare: the chunk is one statement and one short
/// transaction, whose ledger read grows with its accounts' transfers.
inline constexpr std::size_t reconcile_chunk_accounts_max = 100'000;
/// Transfers one ledger chunk may read (one statement, one primary-key probe per account leg).
inline constexpr std::size_t reconcile_chunk_transfers_max = 1'000'000;
/// Incidents GET /v1/incidents returns at most per request (its `limit`).
inline constexpr std::size_t incidents_page_max = 1000;
/// Currencies one reconciliation run keeps sums for; a ledger with more is itself an anomaly,
/// and the run fails rather than grow without bound.
inline constexpr std::size_t reconcile_currencies_max = 1000;

// --- Tokens ------------------------------------------------------------------------------------

/// Longest token accepted, in bytes; longer ones are refused before any decoding.
inline constexpr std::size_t token_bytes_max = 1024;
/// Longest producer name inside a token.
inline constexpr std::size_t producer_name_bytes_max = 64;
/// Longest token lifetime `fulltime token` issues, in seconds (one year).
inline constexpr std::int64_t token_ttl_s_max = 366LL * 24 * 3600;

// --- Relations between bounds ------------------------------------------------------------------

static_assert(idempotency_key_bytes_max < frame_bytes_max);
static_assert(request_id_bytes_max < frame_bytes_max);
static_assert(http_header_bytes_max < http_body_bytes_max);
static_assert(amount_minor_max < INT64_MAX / 1000,
              "a thousand maximal amounts must still sum inside int64");
static_assert(inflight_per_connection_max <= ws_write_queue_max,
              "every in-flight request must be able to queue its reply");

}  // namespace fulltime::limits
