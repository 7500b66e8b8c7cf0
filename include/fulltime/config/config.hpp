#pragma once
/// The engine's configuration: the defaults of the table of settings (config/settings_table.cpp),
/// overridden by a file given with --config and then by FULLTIME_* environment variables.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fulltime {

/// Holds the settings of one connection pool.
struct pool_settings {
    std::size_t size_max = 0;      ///< connections the pool may open
    std::size_t queue_max = 0;     ///< waiters beyond which acquire fails at once
    std::int64_t wait_ms_max = 0;  ///< longest an acquire waits for a connection
};

/// Holds settings shared by every database connection.
struct database_settings {
    std::string url;       ///< libpq conninfo or URI; empty: embedded cluster
    std::string read_url;  ///< a hot standby for the `standby` pool; empty: none
    std::int64_t connect_timeout_ms = 0;
    std::int64_t statement_timeout_ms = 0;  ///< every pool session's, and per transaction
    /// idle_in_transaction_session_timeout of every pool session; 0 leaves the server's.
    std::int64_t idle_in_transaction_timeout_ms = 0;
    /// Send the two timeouts in each session's startup packet (false behind a bouncer that
    /// refuses startup options: set them per role instead, docs/config.md).
    bool session_timeouts = true;
    std::int64_t query_timeout_ms = 0;  ///< client-side deadline on one round trip
    /// lock_timeout of each migration's transaction: its DDL fails instead of queueing behind
    /// live sessions (and making every later query on the table queue behind it).
    std::int64_t migration_lock_timeout_ms = 0;
    /// Run the hot statements as protocol-level prepared statements (false behind PgBouncer in
    /// transaction mode: docs/config.md).
    bool prepared_statements = true;
    pool_settings placement;
    pool_settings settlement;
    pool_settings read;     ///< reads on the primary
    pool_settings standby;  ///< reads on read_url, when set
    pool_settings background;
};

/// Holds settings of the private cluster `fulltime serve` starts when no url is configured.
struct embedded_settings {
    std::string bin_dir;  ///< PostgreSQL server binaries (initdb, pg_ctl, postgres)
    std::int64_t start_timeout_ms = 0;
    std::string run_as_user;  ///< cluster owner when the engine runs as root
};

/// Holds settings of the HTTP/WebSocket gateway.
struct gateway_settings {
    std::string host;
    std::uint16_t port = 0;
    /// `admin_listen`: where the operator's routes are served (/metrics, /dashboard, the feed,
    /// the operator API). Unset: on `listen` with the bettors'.
    std::optional<std::string> admin_host;
    std::uint16_t admin_port = 0;
    std::size_t connections_max = 0;
    // The admission shares start at their defaults rather than 0, as the lock settings below do:
    // a configuration built field by field (the tests) must not refuse every connection.
    // settings_table_test checks that every initialiser here is 0 or the table's default.
    /// Connections one source address (an IPv6 /64) may hold; one more is refused with 503.
    std::size_t connections_per_address_max = 1000;
    /// WebSocket sessions one account (a bet-client token's) or producer may hold at once.
    std::size_t sessions_per_account_max = 32;
    std::size_t frame_bytes_max = 0;
    std::size_t inflight_per_connection_max = 0;
    std::size_t write_queue_bytes_max = 0;        ///< queued for one WebSocket, at most
    std::size_t write_queue_bytes_total_max = 0;  ///< queued for all WebSockets, at most
    /// Deadline to receive a request's whole header: from the accept for the first request,
    /// from its first byte for a later one on a kept-alive connection.
    std::int64_t header_timeout_ms = 5000;
    std::int64_t handshake_timeout_ms = 0;
    std::int64_t idle_timeout_ms = 0;
    std::int64_t shutdown_deadline_ms = 0;
    std::size_t io_threads = 0;  ///< event-loop threads; resolved from 0 to the core count
};

/// Holds settings of the actor system.
struct actor_settings {
    std::size_t scheduler_threads = 0;    ///< 0: CAF's default (one per core)
    std::string scheduler_policy;         ///< "sharing" (workers sleep when idle) or "stealing"
    std::int64_t request_timeout_ms = 0;  ///< deadline of a gateway-to-actor request
};

/// Holds settings of the placement path.
struct placement_settings {
    std::size_t actors = 0;                    ///< placement actors, each owning one connection
    std::size_t group_bets_max = 0;            ///< placements committed together, at most
    std::int64_t lock_timeout_ms = 0;          ///< SET LOCAL lock_timeout of a placement
    std::size_t lock_retries_max = 0;          ///< retries after a lock timeout, then `busy`
    std::int64_t idempotency_retention_s = 0;  ///< keys older than this are purged
    std::size_t purge_batch_max = 0;           ///< keys deleted per purge transaction
    std::int64_t purge_interval_ms = 0;        ///< pause between purge rounds
    std::int64_t purge_lock_timeout_ms = 50;   ///< SET LOCAL lock_timeout of a purge transaction
    /// The placement sessions' synchronous_commit ("": the server's). "remote_apply" makes a
    /// placement's commit wait until the synchronous standbys applied it (docs/config.md).
    std::string synchronous_commit;
};

/// Holds settings of the settlement path.
struct settlement_settings {
    std::size_t batch_bets_max = 0;     ///< bets settled per batch transaction, at most
    std::size_t batches_in_flight = 0;  ///< batch transactions at once, over all markets
    /// Lanes one large event is settled in side by side, each a connection of the settlement
    /// pool (fulltime_settle_lane); 1 while the governor steers.
    std::int64_t lanes = 2;
    std::int64_t lock_timeout_ms = 0;   ///< SET LOCAL lock_timeout of a batch; a timeout retries
    std::int64_t retry_delay_ms = 0;    ///< pause before retrying a failed or fenced step
    std::int64_t poll_interval_ms = 0;  ///< scan for markets with unapplied events
    std::int64_t duty_percent = 0;      ///< 1..100: share of time a market's batches may run
    std::int64_t push_interval_ms = 0;  ///< outbox scan for bet_settled pushes
    /// The push loop's row in outbox_cursors: its durable cursor, one per engine instance.
    std::string push_consumer;
    std::int64_t outbox_purge_interval_ms = 0;  ///< pause between two purge rounds of the outbox
    std::size_t outbox_purge_batch_max = 0;     ///< outbox rows deleted per purge transaction
    /// The governor (core/settlement_governor.hpp): the engine's placement p99 to keep
    /// settlement under, in milliseconds (0: none) or in percent of the placement p99 over the
    /// last placement_baseline_ms of placement with nothing settling (0: none); with both, the
    /// smaller; with neither, the governor is off. Measured over placement_window_ms;
    /// min_bets_per_s is the floor one market's settlement never goes below.
    std::int64_t placement_p99_budget_ms = 0;
    std::int64_t placement_p99_budget_percent = 0;
    std::int64_t placement_baseline_ms = 60'000;
    std::int64_t placement_window_ms = 1000;
    std::int64_t min_bets_per_s = 1000;
};

// The lock settings split off placement's (feed, admin, placement.purge_lock_timeout_ms) start
// at their defaults rather than 0, unlike the rest: a configuration built field by field (the
// tests) that sets only placement's must keep a bounded lock wait on these paths.
// settings_table_test checks that every initialiser here is 0 or the table's default.

/// Holds settings of the feed's own transactions: result intake and the catalog (market, odds,
/// status messages).
struct feed_settings {
    std::int64_t lock_timeout_ms = 50;  ///< SET LOCAL lock_timeout of one feed transaction
    std::size_t lock_retries_max = 3;   ///< retries after a lock timeout, then `busy`
};

/// Holds settings of the operator API's transactions (routes an admin token reaches, and
/// `fulltime void-overdue`): deposits, withdrawals and void-overdue.
struct admin_settings {
    std::int64_t lock_timeout_ms = 50;  ///< SET LOCAL lock_timeout of one operator transaction
    std::size_t lock_retries_max = 3;   ///< retries after a lock timeout, then `busy`
};

/// Holds settings of reservation deadlines and the overdue-reservation sweeper.
struct reservation_settings {
    std::int64_t grace_s = 0;              ///< added to a market's settle_deadline_at
    std::int64_t default_deadline_s = 0;   ///< deadline after created_at without settle_deadline_at
    std::int64_t sweep_interval_ms = 0;    ///< pause between two sweeps
    std::size_t sweep_batch_bets_max = 0;  ///< bets read per sweep statement
};

/// Holds settings of the reconciliation (the ledger summed and compared with the balance rows).
struct reconcile_settings {
    std::int64_t interval_ms = 0;           ///< pause between scheduled runs; 0: on demand only
    std::size_t chunk_accounts = 0;         ///< accounts compared per chunk transaction
    std::size_t chunk_transfers = 0;        ///< transfers read per ledger chunk transaction
    std::int64_t chunk_pause_ms = 0;        ///< pause between two chunks (0: none)
    std::int64_t lock_timeout_ms = 0;       ///< SET LOCAL lock_timeout of a chunk (incident rows)
    std::int64_t statement_timeout_ms = 0;  ///< SET LOCAL statement_timeout of a chunk and audit
    std::int64_t run_timeout_ms = 0;        ///< a run stops (failed) past it; POST waits as long
};

/// Holds settings of the time partitions and their keeper (docs/schema.md, "Time partitions").
/// Intervals are PostgreSQL interval text of one unit: "<n> <second|minute|hour|day|week|month|
/// year>[s]".
struct history_settings {
    std::string period;                     ///< one period: one partition of each table
    std::int64_t ahead_periods = 0;         ///< partitions exist this many periods past now
    std::string retention;                  ///< a closed period leaves this long after its end
    std::int64_t close_grace_s = 0;         ///< a period is closed no sooner after its end
    std::int64_t keeper_interval_ms = 0;    ///< pause between keeper rounds; 0: no keeper
    std::int64_t lock_timeout_ms = 0;       ///< lock_timeout of attach, detach and drop
    std::int64_t statement_timeout_ms = 0;  ///< statement_timeout of a keeper statement
};

/// Holds settings of the peak sampler (actors/peak_sampler.hpp): how often it reads the engine
/// and the database, how long it keeps what it read, and PgBouncer's admin console, when the
/// engine runs behind one.
struct diagnostics_settings {
    std::int64_t sample_interval_ms = 1000;  ///< between two samples
    std::int64_t window_s = 600;             ///< samples kept, in seconds of history
    std::int64_t verdict_window_s = 30;      ///< the newest samples the verdict judges
    std::string pgbouncer_admin_url;         ///< empty: no SHOW POOLS
};

/// Holds the defaults of a market created by the feed without its own limits.
struct market_defaults {
    std::int64_t stake_min_minor = 0;
    std::int64_t stake_max_minor = 0;
    std::int64_t liability_limit_minor = 0;
    std::size_t exposure_shards = 0;  ///< shard rows per market (1..64)
};

/// Holds settings of the read side (docs/architecture.md, "Reads"): where the bettor's reads go,
/// what staleness each accepts, read-your-writes, and the projector of the read model.
struct read_settings {
    /// The most a standby may be behind the primary for a read to go there (0: the primary only).
    std::int64_t balance_staleness_ms = 0;
    std::int64_t bets_staleness_ms = 0;
    /// Where `bets` reads: "read_model" (bet_views) or "write_tables" (bets + bet_settlements).
    std::string bets_source;
    /// Whether a session's reads see its own placements (by commit LSN and projection horizon).
    bool read_your_writes = true;
    /// How long a read waits on the standby (or for the projector) to pass the session's own
    /// write before it goes to the primary (or to the write tables).
    std::int64_t ryw_wait_ms = 0;
    /// Every this often the engine samples the primary's WAL position and the standby's replay.
    std::int64_t sample_interval_ms = 0;
    /// The projector: its pause between pages once caught up (0: this engine runs none), its
    /// page size and its row in outbox_cursors.
    std::int64_t projector_interval_ms = 0;
    std::size_t projector_page_rows_max = 0;
    std::string projector_consumer;
    /// The longest the projector leaves its pages to a settlement that holds a slot before it
    /// catches up (0: it never does).
    std::int64_t projector_yield_ms = 0;
};

/// Holds the whole configuration, validated.
struct config {
    std::string state_dir;
    std::string token_secret;       ///< empty: from a file (app/commands/secret.hpp)
    std::string token_secret_file;  ///< empty: <state_dir>/token_secret, made on first use
    /// The secret token_secret replaced, which still verifies tokens (never signs them) while a
    /// rollover lasts; empty: from token_secret_previous_file, or none.
    std::string token_secret_previous;
    std::string token_secret_previous_file;  ///< empty: no previous secret from a file
    std::string log_level;                   ///< "debug", "info", "warn" or "error"
    std::string log_format;                  ///< "text" or "json" (one object per line)
    database_settings database;
    embedded_settings embedded;
    gateway_settings gateway;
    actor_settings actors;
    placement_settings placement;
    settlement_settings settlement;
    feed_settings feed;
    admin_settings admin;
    reservation_settings reservations;
    reconcile_settings reconcile;
    history_settings history;
    read_settings read;
    diagnostics_settings diagnostics;
    market_defaults markets;
};

/// Signals a configuration that cannot be used; what() is one line naming the key and why.
class config_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Loads the configuration: the table's defaults, then the file at `path` (if any), then the
/// FULLTIME_* variables of `environment`. Throws config_error on unknown keys, wrong types,
/// values out of bounds, or a file that cannot be read.
config load_config(const std::optional<std::string>& path,
                   const std::map<std::string, std::string>& environment);

/// Returns the FULLTIME_* variables of this process's environment.
std::map<std::string, std::string> process_environment();

}  // namespace fulltime
