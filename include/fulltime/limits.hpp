#pragma once
/// Every bound of the engine, in one place (STYLE.md, convention 3).
///
/// The configuration's settings have their bounds in the table of settings
/// (config/settings_table.cpp), which the loader checks at startup; it refers here for a bound
/// the engine relies on too (a pool's size, a statement's batch, a schema's CHECK), and owns
/// those that only keep a setting sensible. Names carry their unit last.

#include <cstddef>
#include <cstdint>

namespace fulltime::limits {

// --- Money -------------------------------------------------------------------------------------

/// Most decimal places of a currency's minor unit the engine holds (ISO 4217's exponent: 0 for
/// JPY, 2 for EUR, 3 for KWD; money::minor_digits). An amount whose currency is not known yet (a
/// stake, parsed before its account is read) is parsed at this scale, in thousandths.
inline constexpr int minor_digits_max = 3;
/// Decimal places a market's limits (stake_min, stake_max, liability_limit) are written with. A
/// market has no currency: its limits are minor units, compared with each bet's stake in the
/// minor units of the bet's currency, and travel as if that currency had two decimals.
inline constexpr int market_amount_digits = 2;
/// Largest amount the engine accepts in one request, in minor units. Far below INT64_MAX so that
/// sums of many amounts (balances, exposure) cannot overflow a bigint.
inline constexpr std::int64_t amount_minor_max = 1'000'000'000'000'000;  // 10^15 minor units
/// Largest amount in thousandths (an amount parsed before its currency is known):
/// amount_minor_max of a currency without decimals. The currency's own bound is checked once
/// it is known (money::thousandths_to_minor).
inline constexpr std::int64_t amount_thousandths_max = amount_minor_max * 1000;
/// Decimal places of odds; odds are fixed point in units of 1/10^odds_decimals.
inline constexpr int odds_decimals = 4;
/// Longest decimal string accepted for an amount or odds, digits and separator included.
inline constexpr std::size_t decimal_chars_max = 32;

// --- Wire protocol -----------------------------------------------------------------------------

/// Longest idempotency key, in bytes: a bet's `idempotency_key`, a deposit's or withdrawal's
/// `key` (body or Idempotency-Key header); the schema's CHECKs on bets and idempotency_keys.
inline constexpr std::size_t idempotency_key_bytes_max = 255;
/// Longest result event key, in bytes: the feed's `event_key` and void-overdue's `key` (the
/// schema's CHECK on result_events.event_key).
inline constexpr std::size_t event_key_bytes_max = 255;
/// Longest event, market or selection name, in bytes (the schema's CHECKs on events, markets and
/// selections).
inline constexpr std::size_t catalog_name_bytes_max = 200;
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
/// Bytes one read of a request's header asks for (the gateway reads the header itself before
/// Beast parses it, to see its raw lines: net/http_framing.hpp).
inline constexpr std::size_t http_header_read_bytes = 4 * 1024;
/// Messages queued for writing on one WebSocket before the connection is closed as too slow.
inline constexpr std::size_t ws_write_queue_max = 4096;
/// A session holding at most this much keeps its replies when the process bound is reached:
/// only the sessions that hold more than a reply or two are closed for it.
inline constexpr std::size_t write_queue_share_floor_bytes = 64 * 1024;
/// A session that held at least this much queued returns the freed memory to the system when
/// it ends (malloc_trim), at most once per trim interval across the process.
inline constexpr std::size_t write_queue_trim_bytes = 256 * 1024;
inline constexpr std::int64_t memory_trim_interval_ms = 1000;

/// Deepest nesting of arrays and objects accepted in a WebSocket message. Deeper input is refused
/// before it is parsed, so that no recursive walk (dump, handlers) can exhaust the stack.
inline constexpr std::size_t json_depth_max = 32;
/// Characters of client input an error message quotes; the rest is cut to "...", so that an
/// error reply cannot echo a frame back at its full size.
inline constexpr std::size_t quoted_input_chars_max = 64;

// --- Gateway -----------------------------------------------------------------------------------

/// Connections over `gateway.connections_max` that get their 503 at once, each from a short
/// coroutine; beyond this many they are closed without a response, so that a flood of
/// connections cannot grow these coroutines without bound.
inline constexpr std::size_t refusals_max = 64;
/// Of those, the refusals one source address (its share key: net/admission.hpp) may have at
/// once; beyond it its connections are closed without a response, so that one address cannot
/// take every refusal and leave no answer (a /healthz one included) for the others.
inline constexpr std::size_t refusals_per_address_max = 4;
/// Time a refused connection gets to send its request and read the 503, in milliseconds.
inline constexpr std::int64_t refusal_timeout_ms = 1000;
/// Shortest interval between two log lines about refused connections of one reason, or about
/// failed accepts, in milliseconds: each line counts what happened since the last one, so a
/// flood of refusals writes a line every ten seconds, not one per connection.
inline constexpr std::int64_t refusal_log_interval_ms = 10'000;
/// The accept loop's pause after a failed accept (out of descriptors: EMFILE, ENFILE), in
/// milliseconds: the first, doubled after each further failure up to the last, and back to the
/// first after an accept succeeds. The connection waits in the listen backlog meanwhile.
inline constexpr std::int64_t accept_backoff_ms_min = 10;
inline constexpr std::int64_t accept_backoff_ms_max = 1000;
/// Descriptors the engine keeps for itself besides its client connections, refusals and
/// database connections: listeners, event loops (epoll, eventfd, timerfd each), the log,
/// files read at run time, a private cluster's pipes. At start `gateway.connections_max` is
/// lowered so that these, the pools and the refusals fit under the hard RLIMIT_NOFILE.
inline constexpr std::size_t fds_reserved = 128;
/// Time an early answer (413, 431, 400, 503) waits while it discards the client's unread input
/// before closing, in milliseconds: closing with unread input makes the kernel send a reset,
/// which can destroy the response before the client reads it.
inline constexpr std::int64_t linger_timeout_ms = 1000;
/// Unread input discarded at most before such a close: one largest request.
inline constexpr std::size_t linger_bytes_max = http_body_bytes_max + http_header_bytes_max;
/// Size of the buffer that discarding reads into, in bytes.
inline constexpr std::size_t linger_read_bytes = 16 * 1024;
/// How often shutdown looks at the gate of in-flight work, in milliseconds. Polling keeps the
/// gate a plain atomic that sessions on any executor may leave; at 5 ms it costs nothing and
/// adds at most 5 ms to shutdown.
inline constexpr std::int64_t shutdown_gate_poll_ms = 5;
/// Time sessions get to observe their errors and unwind after the shutdown deadline has
/// force-closed every connection, in milliseconds.
inline constexpr std::int64_t shutdown_force_close_grace_ms = 1000;
/// Pause between two readiness checks, in milliseconds: /readyz answers from the newest check
/// (net/readiness_probe.hpp), which runs on a database connection of its own, so a flood of
/// probes costs the database nothing.
inline constexpr std::int64_t readiness_interval_ms = 1000;
/// Deadline of one readiness check (connect and query), in milliseconds: a database that hangs
/// shows as "database unreachable" within it, however long the pools' own deadlines are. A
/// check older than readiness_interval_ms + readiness_timeout_ms (the checks stopped) is not
/// trusted either.
inline constexpr std::int64_t readiness_timeout_ms = 3000;

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
/// Longest consumer name of the push loop's cursor (`settlement.push_consumer`), in bytes: the
/// CHECK on outbox_cursors.consumer.
inline constexpr std::size_t outbox_consumer_bytes_max = 64;
/// Outbox rows one page of the read model's projector applies (db/functions/fulltime_project.sql):
/// the page is one transaction, which holds the bet_views and market_views rows it changes until
/// it commits; a page of placements is about one bet_views row per row.
inline constexpr std::int64_t projection_page_rows_max = 10'000;
/// Upper bound on the configurable outbox rows one purge transaction deletes
/// (`settlement.outbox_purge_batch_max`): the delete holds its rows until it commits, and the
/// push loop pushes nothing while it runs.
inline constexpr std::size_t outbox_purge_batch_rows_max = 100'000;
/// Purge transactions in one round of the push loop's outbox purge; the rest waits for the next
/// round, so that a large backlog of consumed rows delays pushes by a few batches at most.
inline constexpr std::size_t outbox_purge_batches_per_round_max = 20;
/// Markets with a settlement backlog that GET /v1/diagnostics lists (one JSON document built by
/// PostgreSQL, so its size is bounded here).
inline constexpr std::size_t diagnostics_backlog_markets_max = 100;
/// Events refused as a whole that GET /v1/diagnostics lists, the newest first.
inline constexpr std::size_t diagnostics_refused_events_max = 20;
/// Result events GET /v1/feed/markets/{id}/events lists for one market, the newest first: one
/// statement that builds its JSON in PostgreSQL, so the answer stays small.
inline constexpr std::size_t market_events_listed_max = 100;

// --- Peak diagnosis (core/peak_diagnosis.hpp, actors/peak_sampler.hpp) -------------------------

/// Sessions of one kind (lock waiters, idle in transaction) and backlogged markets one sample
/// keeps, so that a sample stays small however bad the peak.
inline constexpr std::size_t diagnosis_sessions_max = 10;
inline constexpr std::size_t diagnosis_markets_max = 10;
/// Shortest pause between two pg_blocking_pids reads: the documentation warns that frequent
/// calls cost the server (it takes the lock manager's partition locks).
inline constexpr std::int64_t diagnosis_blockers_interval_ms = 2000;
/// The verdict's rules (core/peak_diagnosis.hpp, thresholds): the samples of the last 30 s
/// (`diagnostics.verdict_window_s`), at least 5 of them; waits for a connection in at least a
/// fifth of them, lock waits in at least a tenth (an instant's sample catches a lock wait less
/// often than a queue); a wait for a connection counts from 5 ms and twice the database time;
/// 1,000 dead tuples more over the window, behind a transaction open for 10 s or more.
inline constexpr std::int64_t diagnosis_verdict_window_ms = 30'000;
inline constexpr std::size_t diagnosis_samples_min = 5;
inline constexpr double diagnosis_share_min = 0.2;
inline constexpr double diagnosis_lock_share_min = 0.1;
inline constexpr std::int64_t diagnosis_connection_wait_us_min = 5'000;
inline constexpr double diagnosis_connection_wait_ratio_min = 2.0;
inline constexpr std::int64_t diagnosis_dead_tuples_rise_min = 1'000;
inline constexpr std::int64_t diagnosis_oldest_transaction_ms_min = 10'000;

// --- Placement ---------------------------------------------------------------------------------

/// Exposure shard rows one market may spread its liability over (`markets.exposure_shards`).
/// The schema's CHECK on markets.exposure_shards holds the same bound (0001_baseline.sql).
inline constexpr std::size_t exposure_shards_max = 64;

/// Requests waiting in one placement actor's queue (the one running excluded). Beyond it a
/// request is answered `busy` at once: at a few milliseconds per placement, a full queue is
/// already most of a second of waiting, and more would only turn into timeouts.
inline constexpr std::size_t placement_queue_per_actor_max = 256;
/// An account stays on its placement actor for this long after its last placement was answered
/// (actors/account_router.hpp): long enough that an account betting several times a second keeps
/// its actor and its bets keep grouping, short enough that the accounts counted on each actor are
/// the ones placing now.
inline constexpr std::int64_t placement_account_linger_ms = 1000;
/// Upper bound on `placement.group_bets_max`, the placements one actor executes together in one
/// transaction (natural group commit: the requests that queued while its previous transaction
/// ran). Bounded because the group holds the balance rows it locked until its one commit, and a
/// lock timeout retries the whole group.
inline constexpr std::size_t placement_group_max = 256;
/// Re-executions of one placement on a fresh connection after its connection broke. Safe
/// because the idempotency key makes a re-execution return the first result.
inline constexpr std::size_t placement_reconnects_max = 2;
/// A placement actor that could not open its first connection tries again after this long,
/// doubling up to the maximum (the engine is not ready until every actor has one).
inline constexpr std::int64_t placement_open_retry_ms_min = 100;
inline constexpr std::int64_t placement_open_retry_ms_max = 5000;
/// Purge transactions in one round of the idempotency purge actor; the rest waits for the next
/// round, so that one round cannot monopolise a background connection.
inline constexpr std::size_t purge_batches_per_round_max = 1000;

/// Upper bound on the configurable keys one purge transaction deletes
/// (`placement.purge_batch_max`): the delete holds its rows' locks until it commits.
inline constexpr std::size_t purge_batch_keys_max = 100'000;

// --- Settlement --------------------------------------------------------------------------------

/// Upper bound on the configurable bets one settlement step settles (`settlement.batch_bets_max`):
/// a step is one short transaction that holds its bets' and balances' locks until it commits.
inline constexpr std::size_t settlement_batch_bets_max = 100'000;
/// Upper bound on `settlement.lanes` (settlement_lanes.lane's CHECK, migration 0011).
inline constexpr std::int64_t settlement_lanes_max = 64;
/// Lock timeouts a market retries at once within the slot it holds before it gives the slot
/// back and backs off: a short wait behind a placement should cost neither.
inline constexpr std::size_t settlement_step_lock_retries_max = 3;
/// How long a market keeps its slot for batch after batch while another market waits for one,
/// in milliseconds. While none waits it keeps the slot until its event is applied: each step
/// handed back and asked for again costs a round of messages between threads, time in which the
/// database backend sits idle.
inline constexpr std::int64_t settlement_slot_hold_ms = 250;
/// Longest slice of a market's rest between two batches in its slot, in milliseconds: a stop is
/// seen within it (a pending timer keeps the event loop alive after a drain).
inline constexpr std::int64_t settlement_rest_slice_ms = 100;
/// Longest pause between attempts of a market whose steps keep failing, in milliseconds.
inline constexpr std::int64_t settlement_backoff_ms_max = 5000;
/// Times the pause after a failed step doubles (`settlement.retry_delay_ms` * 2^n) before
/// settlement_backoff_ms_max caps it.
inline constexpr int settlement_backoff_doublings_max = 7;
/// Placements the governor's baseline (the placement p99 with nothing settling) needs before a
/// budget in percent applies: the p99 of fewer says little.
inline constexpr std::uint64_t settlement_baseline_placements_min = 200;
/// A control period counts toward the baseline only once no batch has run for this long, so
/// that what a burst leaves behind (the read model catching up, pushes) stays out of it.
inline constexpr std::int64_t settlement_baseline_quiet_ms = 5'000;
/// The settlement governor's control period: how often it reads the placement p99 of the last
/// window and adjusts batch size and pause.
inline constexpr std::int64_t settlement_governor_period_ms = 100;
/// The longest pause the governor puts between a market's batches, in milliseconds.
inline constexpr std::int64_t settlement_governor_pause_ms_max = 1000;
/// The governor's additive step of the pause, in milliseconds.
inline constexpr std::int64_t settlement_governor_pause_step_ms = 5;
/// The smallest batch the governor cuts to is batch_bets_max divided by this (at least 1).
inline constexpr std::int64_t settlement_governor_batch_divisor = 20;

// --- Reservations ------------------------------------------------------------------------------

/// Markets one sweep statement reads (one short statement of index probes per page).
inline constexpr std::int64_t sweep_markets_per_page = 200;
/// Markets the sweeper remembers as clean; past this the memory starts again from nothing (the
/// next sweep re-reads every market past its deadline once), so it cannot grow without bound.
inline constexpr std::size_t sweep_clean_markets_max = 100'000;
/// Chunks of one market a sweep reads: 10^4 chunks of `reservations.sweep_batch_bets_max` bets
/// (10^7 bets at the default) before the sweep gives up on the market and reports what it
/// counted so far.
inline constexpr std::size_t sweep_chunks_per_market_max = 10'000;
/// Upper bound on the configurable bets one sweep statement reads
/// (`reservations.sweep_batch_bets_max`).
inline constexpr std::size_t sweep_batch_bets_max = 100'000;

// --- Time partitions (docs/schema.md, "Time partitions") ---------------------------------------

/// Periods one keeper round closes, and periods it drops, at most: a round after a long outage
/// catches up over several rounds instead of holding its connection for all of them.
inline constexpr int history_steps_per_round_max = 12;

/// The read side (docs/architecture.md, "Reads"). The engine keeps the primary's WAL positions of
/// the last read_lsn_samples_max sampling intervals (a standby further behind than that is as
/// stale as the oldest), and polls a standby (or the projector's horizon) for a session's own
/// write at this step while it waits.
inline constexpr std::size_t read_lsn_samples_max = 4096;
inline constexpr std::int64_t read_ryw_poll_ms = 2;
/// Slots of the table of each account's newest write (net/account_writes.hpp): 16 bytes each, so
/// 1 MiB. With more active accounts than slots, some share one and a read of either may wait for
/// the other's newer write (at most read.ryw_wait_ms, then the primary answers).
inline constexpr std::size_t account_writes_slots = std::size_t{1} << 16;

// --- Reconciliation ----------------------------------------------------------------------------

/// Incidents GET /v1/incidents returns at most per request (its `limit`).
inline constexpr std::size_t incidents_page_max = 1000;
/// Incidents GET /v1/incidents returns when the request names no `limit`.
inline constexpr std::size_t incidents_page_default = 100;
/// Lock timeouts one reconciliation step retries (its incident writes may wait on another
/// instance's run) before the run fails.
inline constexpr std::size_t reconcile_step_lock_retries_max = 3;
/// Pause between two reads of the open-incident gauges, in milliseconds: the reservation
/// sweeper (and an operator) change incidents on their own schedule, and the gauges should
/// follow within seconds. One count over the partial index of open incidents: cheap.
inline constexpr std::int64_t reconcile_open_count_interval_ms = 10'000;
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
static_assert(quoted_input_chars_max < frame_bytes_max);
static_assert(refusals_max <= connections_max,
              "refusals are a share of the connections, not more than all of them");
static_assert(refusals_per_address_max <= refusals_max);
static_assert(accept_backoff_ms_min > 0 && accept_backoff_ms_min <= accept_backoff_ms_max);
static_assert(refusal_log_interval_ms <= timeout_ms_max);
static_assert(readiness_interval_ms < readiness_timeout_ms,
              "a check that answers in time is never stale");
static_assert(refusal_timeout_ms <= timeout_ms_max && linger_timeout_ms <= timeout_ms_max &&
              readiness_timeout_ms <= timeout_ms_max);
static_assert(shutdown_gate_poll_ms < shutdown_force_close_grace_ms,
              "shutdown must look at the gate several times within the grace");
static_assert(linger_read_bytes <= linger_bytes_max);
static_assert(purge_batch_keys_max * purge_batches_per_round_max <= INT64_MAX,
              "a purge round's count must fit an int64");
static_assert(outbox_purge_batch_rows_max <= static_cast<std::size_t>(INT32_MAX),
              "fulltime_purge_outbox takes the batch size as an integer");
static_assert(settlement_batch_bets_max <= static_cast<std::size_t>(INT32_MAX),
              "fulltime_settle_step takes the batch size as an integer");
static_assert(settlement_backoff_doublings_max >= 0 && settlement_backoff_doublings_max < 31,
              "the doubling is a shift of an int");
static_assert(settlement_backoff_ms_max <= timeout_ms_max);
static_assert(sweep_batch_bets_max * sweep_chunks_per_market_max <= INT64_MAX / 2,
              "a market's counted bets must fit an int64");
static_assert(sweep_markets_per_page > 0);
static_assert(incidents_page_default <= incidents_page_max);
static_assert(reconcile_open_count_interval_ms <= timeout_ms_max);
static_assert(market_events_listed_max > 0 && market_events_listed_max <= INT32_MAX);

}  // namespace fulltime::limits
