#include "config/settings_table.hpp"

#include "fulltime/limits.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <regex>

namespace fulltime::settings {

namespace {

using namespace std::string_view_literals;

// Bounds that only the configuration has: each keeps an operator's typo from asking for
// something absurd. Bounds the engine relies on elsewhere are in limits.hpp.

/// Far above any core count this engine is sized for, so that a typo cannot start thousands of
/// threads (gateway.io_threads, actors.scheduler_threads).
constexpr std::int64_t io_threads_max = 64;
constexpr std::int64_t scheduler_threads_max = 256;
/// The floor of one WebSocket's write queue holds the largest reply (a `bets` page of 200 bets
/// with the longest keys) several times over.
constexpr std::int64_t write_queue_bytes_min = 256 * 1024;
constexpr std::int64_t write_queue_bytes_max = std::int64_t{1} << 30;
constexpr std::int64_t write_queue_bytes_total_min = std::int64_t{1} << 20;
constexpr std::int64_t write_queue_bytes_total_max = std::int64_t{64} << 30;
/// Lock-timeout retries of one transaction (placement, feed, operator): each retry is another
/// lock_timeout of waiting before the answer.
constexpr std::int64_t lock_retries_max = 100;
/// Retention and deadlines in seconds: a year (and a day) at most.
constexpr std::int64_t year_s = 366LL * 24 * 3600;
/// A sample every 100 ms at the fastest (each is a handful of catalog reads), and at most an
/// hour of them kept (diagnostics.*).
constexpr std::int64_t diagnosis_interval_ms_min = 100;
constexpr std::int64_t diagnosis_interval_ms_max = 60'000;
constexpr std::int64_t diagnosis_window_s_max = 3600;
/// A reconciliation chunk is one statement in one short transaction, whose ledger read grows
/// with its accounts' transfers.
constexpr std::int64_t reconcile_chunk_accounts_max = 100'000;
constexpr std::int64_t reconcile_chunk_transfers_max = 1'000'000;
constexpr std::int64_t timeout_ms_max = limits::timeout_ms_max;
/// Shortest token secret: 16 characters (128 bits of a random hex or base64 secret at most).
constexpr std::size_t secret_chars_min = 16;

constexpr std::array log_levels{"debug"sv, "info"sv, "warn"sv, "error"sv};
constexpr std::array log_formats{"text"sv, "json"sv};
constexpr std::array scheduler_policies{"sharing"sv, "stealing"sv};
constexpr std::array synchronous_commit_levels{""sv,      "on"sv,           "off"sv,
                                               "local"sv, "remote_write"sv, "remote_apply"sv};
constexpr std::array bets_sources{"read_model"sv, "write_tables"sv};

void check_secret(std::string_view name, const std::string& value) {
    if (!value.empty() && value.size() < secret_chars_min) {
        fail("'" + std::string(name) +
             "' must be at least 16 characters (or empty to generate one)");
    }
}

void check_previous_secret(std::string_view name, const std::string& value) {
    if (!value.empty() && value.size() < secret_chars_min) {
        fail("'" + std::string(name) + "' must be at least 16 characters (or empty for none)");
    }
}

void check_address(std::string_view name, const std::string& value) {
    if (!value.empty()) {
        parse_address(name, value);
    }
}

// One unit of PostgreSQL interval text: what fulltime_history_boundary aligns (whole months, or
// a fixed length) and an operator reads at a glance.
void check_interval(std::string_view name, const std::string& value) {
    static const std::regex one_unit{"[1-9][0-9]{0,5} (second|minute|hour|day|week|month|year)s?"};
    if (!std::regex_match(value, one_unit)) {
        fail("'" + std::string(name) +
             "' must be '<n> <second|minute|hour|day|week|month|year>', got '" + value + "'");
    }
}

// A consumer's name is its row in outbox_cursors, whose CHECK holds its length.
void check_push_consumer(std::string_view name, const std::string& value) {
    if (value.size() > limits::outbox_consumer_bytes_max) {
        fail("'" + std::string(name) + "' must be at most " +
             std::to_string(limits::outbox_consumer_bytes_max) + " bytes, got " +
             std::to_string(value.size()));
    }
}

void check_projector_consumer(std::string_view name, const std::string& value) {
    if (value.size() > limits::outbox_consumer_bytes_max) {
        fail("'" + std::string(name) + "' must be 1 to " +
             std::to_string(limits::outbox_consumer_bytes_max) + " characters");
    }
}

// A deadline or a wait: 1 ms to an hour (limits::timeout_ms_max), as the engine's own waits.
constexpr setting timeout_ms(std::string_view name, std::int64_t value, std::string_view doc,
                             field_fn field) {
    return {.name = name,
            .value = value,
            .min = 1,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = doc,
            .field = field};
}

// A pool's size and wait queue: the same bounds and doc for every pool (docs/config.md has one
// row for each over all pools).
constexpr setting pool_size(std::string_view name, std::int64_t value, field_fn field) {
    return {.name = name,
            .value = value,
            .min = 1,
            .max = limits::pool_size_max,
            .unit = "connections",
            .doc = "Connections the pool may open.",
            .field = field};
}

constexpr setting pool_queue(std::string_view name, std::int64_t value, field_fn field) {
    return {.name = name,
            .value = value,
            .min = 0,
            .max = limits::pool_queue_max,
            .unit = "waiters",
            .doc = "Waiters beyond which an acquire fails at once.",
            .field = field};
}

// The rows, in the order of docs/config.md. A `field` lambda names where a value goes; rules
// between settings (a share of a pool, one bound at least another) are config.cpp's,
// check_relations, and each has a bounds_note here for the documentation.
constexpr std::array rows{
    // --- General -------------------------------------------------------------------------
    setting{.name = "state_dir",
            .value = "./var"sv,
            .doc = "Where the engine keeps its state: the token secret and the private cluster.",
            .field = [](config& c) -> field_ref { return &c.state_dir; }},
    setting{.name = "token_secret",
            .value = ""sv,
            .empty_ok = true,
            .check = check_secret,
            .doc = "HMAC-SHA256 secret for tokens; empty: from a credential or a file.",
            .bounds_note = "empty or ≥ 16 chars",
            .field = [](config& c) -> field_ref { return &c.token_secret; }},
    setting{.name = "token_secret_file",
            .value = ""sv,
            .empty_ok = true,
            .doc = "A file whose first line is the token secret.",
            .bounds_note = "a path",
            .field = [](config& c) -> field_ref { return &c.token_secret_file; }},
    setting{.name = "token_secret_previous",
            .value = ""sv,
            .empty_ok = true,
            .check = check_previous_secret,
            .doc = "The secret token_secret replaced, still verifying tokens during a rollover.",
            .bounds_note = "empty or ≥ 16 chars, not `token_secret`",
            .field = [](config& c) -> field_ref { return &c.token_secret_previous; }},
    setting{.name = "token_secret_previous_file",
            .value = ""sv,
            .empty_ok = true,
            .doc = "A file whose first line is the previous secret.",
            .bounds_note = "a path",
            .field = [](config& c) -> field_ref { return &c.token_secret_previous_file; }},
    setting{.name = "log_level",
            .value = "info"sv,
            .choices = log_levels,
            .doc = "Lowest level written to stderr.",
            .field = [](config& c) -> field_ref { return &c.log_level; }},
    setting{.name = "log_format",
            .value = "text"sv,
            .choices = log_formats,
            .doc = "Log lines as text, or one JSON object per line.",
            .field = [](config& c) -> field_ref { return &c.log_format; }},
    setting{.name = "listen",
            .value = "127.0.0.1:8080"sv,
            .check = check_address,
            .doc = "Address of the HTTP/WebSocket gateway.",
            .bounds_note = "`host:port`, `[v6]:port`; port 0..65535 (0: any free port)"},
    setting{.name = "admin_listen",
            .value = ""sv,
            .empty_ok = true,
            .check = check_address,
            .doc = "Where the operators' routes are served; empty: on `listen`.",
            .bounds_note = "empty, or as `listen` and not the same address"},

    // --- Database ------------------------------------------------------------------------
    setting{.name = "database.url",
            .value = ""sv,
            .empty_ok = true,
            .doc = "The PostgreSQL to use; empty: a private cluster.",
            .bounds_note = "libpq conninfo or URI",
            .field = [](config& c) -> field_ref { return &c.database.url; }},
    setting{.name = "database.read_url",
            .value = ""sv,
            .empty_ok = true,
            .doc = "A hot standby of the primary for the standby pool; empty: none.",
            .bounds_note = "libpq conninfo or URI",
            // The name docs/design.md gives it.
            .env_alias = "FULLTIME_READ_DATABASE_URL",
            .field = [](config& c) -> field_ref { return &c.database.read_url; }},
    timeout_ms("database.connect_timeout_ms", 5000, "Deadline to open one connection.",
               [](config& c) -> field_ref { return &c.database.connect_timeout_ms; }),
    timeout_ms("database.statement_timeout_ms", 5000, "statement_timeout of every pool session.",
               [](config& c) -> field_ref { return &c.database.statement_timeout_ms; }),
    setting{
        .name = "database.idle_in_transaction_timeout_ms",
        .value = 30'000,
        .min = 0,
        .max = timeout_ms_max,
        .unit = "ms",
        .doc = "idle_in_transaction_session_timeout of every pool session; 0: the server's.",
        .field = [](config& c) -> field_ref { return &c.database.idle_in_transaction_timeout_ms; }},
    setting{.name = "database.session_timeouts",
            .value = true,
            .doc = "Send the timeouts and jit = off in each connection's startup packet.",
            .field = [](config& c) -> field_ref { return &c.database.session_timeouts; }},
    timeout_ms("database.migration_lock_timeout_ms", 5000,
               "lock_timeout of each migration's transaction.",
               [](config& c) -> field_ref { return &c.database.migration_lock_timeout_ms; }),
    timeout_ms("database.query_timeout_ms", 10'000, "Client-side deadline on one round trip.",
               [](config& c) -> field_ref { return &c.database.query_timeout_ms; }),
    setting{.name = "database.prepared_statements",
            .value = true,
            .doc = "Run the placement group as a protocol-level prepared statement.",
            .field = [](config& c) -> field_ref { return &c.database.prepared_statements; }},

    // The pools' rows are written out rather than generated per pool: each name stays a literal
    // that a search for it finds, each default is on its own row, and the table stays constexpr.
    pool_size("database.pools.placement.size_max", 8,
              [](config& c) -> field_ref { return &c.database.placement.size_max; }),
    pool_queue("database.pools.placement.queue_max", 4096,
               [](config& c) -> field_ref { return &c.database.placement.queue_max; }),
    timeout_ms("database.pools.placement.wait_ms_max", 200, "Longest wait for a connection.",
               [](config& c) -> field_ref { return &c.database.placement.wait_ms_max; }),
    pool_size("database.pools.settlement.size_max", 4,
              [](config& c) -> field_ref { return &c.database.settlement.size_max; }),
    pool_queue("database.pools.settlement.queue_max", 1024,
               [](config& c) -> field_ref { return &c.database.settlement.queue_max; }),
    timeout_ms("database.pools.settlement.wait_ms_max", 5000, "Longest wait for a connection.",
               [](config& c) -> field_ref { return &c.database.settlement.wait_ms_max; }),
    pool_size("database.pools.read.size_max", 4,
              [](config& c) -> field_ref { return &c.database.read.size_max; }),
    pool_queue("database.pools.read.queue_max", 4096,
               [](config& c) -> field_ref { return &c.database.read.queue_max; }),
    timeout_ms("database.pools.read.wait_ms_max", 500, "Longest wait for a connection.",
               [](config& c) -> field_ref { return &c.database.read.wait_ms_max; }),
    pool_size("database.pools.standby.size_max", 4,
              [](config& c) -> field_ref { return &c.database.standby.size_max; }),
    pool_queue("database.pools.standby.queue_max", 4096,
               [](config& c) -> field_ref { return &c.database.standby.queue_max; }),
    timeout_ms("database.pools.standby.wait_ms_max", 200, "Longest wait for a connection.",
               [](config& c) -> field_ref { return &c.database.standby.wait_ms_max; }),
    pool_size("database.pools.background.size_max", 2,
              [](config& c) -> field_ref { return &c.database.background.size_max; }),
    pool_queue("database.pools.background.queue_max", 256,
               [](config& c) -> field_ref { return &c.database.background.queue_max; }),
    timeout_ms("database.pools.background.wait_ms_max", 5000, "Longest wait for a connection.",
               [](config& c) -> field_ref { return &c.database.background.wait_ms_max; }),

    // --- The private cluster -------------------------------------------------------------
    setting{.name = "embedded.bin_dir",
            .value = "/usr/lib/postgresql/15/bin"sv,
            .doc = "Where initdb, pg_ctl and postgres are.",
            .field = [](config& c) -> field_ref { return &c.embedded.bin_dir; }},
    timeout_ms("embedded.start_timeout_ms", 60'000, "How long pg_ctl start may take.",
               [](config& c) -> field_ref { return &c.embedded.start_timeout_ms; }),
    setting{.name = "embedded.run_as_user",
            .value = "postgres"sv,
            .doc = "Owner of the private cluster when the engine runs as root.",
            .bounds_note = "an existing user",
            .field = [](config& c) -> field_ref { return &c.embedded.run_as_user; }},

    // --- Gateway -------------------------------------------------------------------------
    setting{.name = "gateway.connections_max",
            .value = 10'000,
            .min = 1,
            .max = limits::connections_max,
            .unit = "connections",
            .doc = "Open connections; one more is answered 503.",
            .field = [](config& c) -> field_ref { return &c.gateway.connections_max; }},
    setting{.name = "gateway.connections_per_address_max",
            .value = 1000,
            .min = 1,
            .max = limits::connections_max,
            .unit = "connections",
            .doc = "Open connections one source address (an IPv6 /64) may hold.",
            .field = [](config& c) -> field_ref { return &c.gateway.connections_per_address_max; }},
    setting{.name = "gateway.sessions_per_account_max",
            .value = 32,
            .min = 1,
            .max = 10'000,
            .unit = "sessions",
            .doc = "WebSocket sessions one account or producer may hold at once.",
            .field = [](config& c) -> field_ref { return &c.gateway.sessions_per_account_max; }},
    setting{.name = "gateway.frame_bytes_max",
            .value = 65'536,
            .min = 256,
            .max = limits::frame_bytes_max,
            .unit = "bytes",
            .doc = "Largest WebSocket message.",
            .field = [](config& c) -> field_ref { return &c.gateway.frame_bytes_max; }},
    setting{.name = "gateway.inflight_per_connection_max",
            .value = 64,
            .min = 1,
            .max = limits::inflight_per_connection_max,
            .unit = "requests",
            .doc = "Requests one WebSocket may have in flight.",
            .field = [](config& c) -> field_ref { return &c.gateway.inflight_per_connection_max; }},
    setting{.name = "gateway.write_queue_bytes_max",
            .value = 1'048'576,
            .min = write_queue_bytes_min,
            .max = write_queue_bytes_max,
            .unit = "bytes",
            .doc = "Bytes of replies one WebSocket may have waiting to be written.",
            .field = [](config& c) -> field_ref { return &c.gateway.write_queue_bytes_max; }},
    setting{.name = "gateway.write_queue_bytes_total_max",
            .value = 268'435'456,
            .min = write_queue_bytes_total_min,
            .max = write_queue_bytes_total_max,
            .unit = "bytes",
            .doc = "Bytes of replies waiting on all WebSockets together.",
            .bounds_note = "at least `gateway.write_queue_bytes_max`",
            .field = [](config& c) -> field_ref { return &c.gateway.write_queue_bytes_total_max; }},
    timeout_ms("gateway.header_timeout_ms", 5000, "Deadline to receive a request's whole header.",
               [](config& c) -> field_ref { return &c.gateway.header_timeout_ms; }),
    timeout_ms("gateway.handshake_timeout_ms", 10'000,
               "Deadline of a body, a kept-alive wait, a response, a WebSocket handshake.",
               [](config& c) -> field_ref { return &c.gateway.handshake_timeout_ms; }),
    timeout_ms("gateway.idle_timeout_ms", 300'000,
               "A WebSocket with no traffic for this long is closed.",
               [](config& c) -> field_ref { return &c.gateway.idle_timeout_ms; }),
    timeout_ms("gateway.shutdown_deadline_ms", 10'000,
               "How long in-flight requests may take to finish at shutdown.",
               [](config& c) -> field_ref { return &c.gateway.shutdown_deadline_ms; }),
    setting{.name = "gateway.io_threads",
            .value = 0,
            .min = 0,
            .max = io_threads_max,
            .unit = "threads",
            .doc = "Event-loop threads; 0: one per core.",
            .field = [](config& c) -> field_ref { return &c.gateway.io_threads; }},

    // --- Actors --------------------------------------------------------------------------
    setting{.name = "actors.scheduler_threads",
            .value = 0,
            .min = 0,
            .max = scheduler_threads_max,
            .unit = "threads",
            .doc = "CAF scheduler threads; 0: CAF's choice (one per core).",
            .field = [](config& c) -> field_ref { return &c.actors.scheduler_threads; }},
    setting{.name = "actors.scheduler_policy",
            .value = "sharing"sv,
            .choices = scheduler_policies,
            .doc = "CAF scheduler: workers sleep when idle (sharing) or poll first (stealing).",
            .field = [](config& c) -> field_ref { return &c.actors.scheduler_policy; }},
    timeout_ms("actors.request_timeout_ms", 5000, "Deadline of a gateway-to-actor request.",
               [](config& c) -> field_ref { return &c.actors.request_timeout_ms; }),

    // --- Placement -----------------------------------------------------------------------
    setting{.name = "placement.actors",
            .value = 0,
            .min = 0,
            .max = limits::pool_size_max,
            .unit = "actors",
            .doc = "Placement actors, each owning one connection; 0: one per connection.",
            .bounds_note = "at most `database.pools.placement.size_max`",
            .field = [](config& c) -> field_ref { return &c.placement.actors; }},
    setting{.name = "placement.group_bets_max",
            .value = 64,
            .min = 1,
            .max = limits::placement_group_max,
            .unit = "bets",
            .doc = "Placements one actor commits together in one transaction.",
            .field = [](config& c) -> field_ref { return &c.placement.group_bets_max; }},
    timeout_ms("placement.lock_timeout_ms", 50, "SET LOCAL lock_timeout of a placement.",
               [](config& c) -> field_ref { return &c.placement.lock_timeout_ms; }),
    setting{.name = "placement.lock_retries_max",
            .value = 3,
            .min = 0,
            .max = lock_retries_max,
            .unit = "retries",
            .doc = "Retries after a lock timeout before the answer is busy.",
            .field = [](config& c) -> field_ref { return &c.placement.lock_retries_max; }},
    setting{.name = "placement.idempotency_retention_s",
            .value = 86'400,
            .min = 60,
            .max = year_s,
            .unit = "s",
            .doc = "Idempotency keys older than this are purged.",
            .field = [](config& c) -> field_ref { return &c.placement.idempotency_retention_s; }},
    setting{.name = "placement.purge_batch_max",
            .value = 1000,
            .min = 1,
            .max = limits::purge_batch_keys_max,
            .unit = "keys",
            .doc = "Keys deleted per purge transaction.",
            .field = [](config& c) -> field_ref { return &c.placement.purge_batch_max; }},
    timeout_ms("placement.purge_interval_ms", 60'000, "Pause between purge rounds.",
               [](config& c) -> field_ref { return &c.placement.purge_interval_ms; }),
    timeout_ms("placement.purge_lock_timeout_ms", 50,
               "SET LOCAL lock_timeout of a purge transaction.",
               [](config& c) -> field_ref { return &c.placement.purge_lock_timeout_ms; }),
    setting{.name = "placement.synchronous_commit",
            .value = ""sv,
            .choices = synchronous_commit_levels,
            .doc = "synchronous_commit of the placement sessions; empty: the server's.",
            .field = [](config& c) -> field_ref { return &c.placement.synchronous_commit; }},

    // --- Settlement ----------------------------------------------------------------------
    setting{.name = "settlement.batch_bets_max",
            .value = 500,
            .min = 1,
            .max = limits::settlement_batch_bets_max,
            .unit = "bets",
            .doc = "Bets settled per batch transaction, at most.",
            .field = [](config& c) -> field_ref { return &c.settlement.batch_bets_max; }},
    setting{.name = "settlement.batches_in_flight",
            .value = 0,
            .min = 0,
            .max = limits::pool_size_max,
            .unit = "batches",
            .doc = "Batch transactions at once over all markets; 0: the settlement pool's size.",
            .bounds_note = "at most `database.pools.settlement.size_max`",
            .field = [](config& c) -> field_ref { return &c.settlement.batches_in_flight; }},
    setting{.name = "settlement.lanes",
            .value = 2,
            .min = 1,
            .max = limits::settlement_lanes_max,
            .unit = "lanes",
            .doc = "Lanes one large event is settled in side by side.",
            .bounds_note = "at most `database.pools.settlement.size_max`",
            .field = [](config& c) -> field_ref { return &c.settlement.lanes; }},
    timeout_ms("settlement.lock_timeout_ms", 200, "SET LOCAL lock_timeout of a settlement step.",
               [](config& c) -> field_ref { return &c.settlement.lock_timeout_ms; }),
    timeout_ms("settlement.retry_delay_ms", 50, "Pause before retrying a failed or fenced step.",
               [](config& c) -> field_ref { return &c.settlement.retry_delay_ms; }),
    timeout_ms("settlement.poll_interval_ms", 1000, "Scan for markets with events not yet applied.",
               [](config& c) -> field_ref { return &c.settlement.poll_interval_ms; }),
    setting{.name = "settlement.duty_percent",
            .value = 100,
            .min = 1,
            .max = 100,
            .unit = "percent",
            .doc = "Share of one backend's time a market's batches may use.",
            .field = [](config& c) -> field_ref { return &c.settlement.duty_percent; }},
    timeout_ms("settlement.push_interval_ms", 50,
               "How often the outbox is read for bet_settled pushes.",
               [](config& c) -> field_ref { return &c.settlement.push_interval_ms; }),
    setting{.name = "settlement.push_consumer",
            .value = "push"sv,
            .check = check_push_consumer,
            .doc = "The push loop's row in outbox_cursors, one per engine instance.",
            .bounds_note = "1..64 bytes",
            .field = [](config& c) -> field_ref { return &c.settlement.push_consumer; }},
    timeout_ms("settlement.outbox_purge_interval_ms", 10'000,
               "At most one purge round of the outbox per interval.",
               [](config& c) -> field_ref { return &c.settlement.outbox_purge_interval_ms; }),
    setting{.name = "settlement.outbox_purge_batch_max",
            .value = 5000,
            .min = 1,
            .max = limits::outbox_purge_batch_rows_max,
            .unit = "rows",
            .doc = "Outbox rows one purge transaction deletes, at most.",
            .field = [](config& c) -> field_ref { return &c.settlement.outbox_purge_batch_max; }},
    // The governor's budgets: above a minute, or 100 times the quiet p99, a budget is none.
    setting{.name = "settlement.placement_p99_budget_ms",
            .value = 0,
            .min = 0,
            .max = 60'000,
            .unit = "ms",
            .doc = "The placement p99 settlement keeps under; 0: none.",
            .field = [](config& c) -> field_ref { return &c.settlement.placement_p99_budget_ms; }},
    setting{
        .name = "settlement.placement_p99_budget_percent",
        .value = 0,
        .min = 0,
        .max = 10'000,
        .unit = "percent",
        .doc = "The same budget in percent of the placement p99 while quiet; 0: none.",
        .bounds_note = "0 or at least 100",
        .field = [](config& c) -> field_ref { return &c.settlement.placement_p99_budget_percent; }},
    setting{.name = "settlement.placement_baseline_ms",
            .value = 60'000,
            .min = 1000,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "The quiet placement time the baseline p99 covers.",
            .field = [](config& c) -> field_ref { return &c.settlement.placement_baseline_ms; }},
    setting{.name = "settlement.placement_window_ms",
            .value = 1000,
            .min = 100,
            .max = 60'000,
            .unit = "ms",
            .doc = "The governor's sliding window of placements.",
            .field = [](config& c) -> field_ref { return &c.settlement.placement_window_ms; }},
    setting{.name = "settlement.min_bets_per_s",
            .value = 1000,
            .min = 1,
            .max = 1'000'000,
            .unit = "bets/s",
            .doc = "The governor's floor: one market's settlement is never slower.",
            .field = [](config& c) -> field_ref { return &c.settlement.min_bets_per_s; }},

    // --- Feed and operator transactions --------------------------------------------------
    timeout_ms("feed.lock_timeout_ms", 50, "SET LOCAL lock_timeout of the feed's transactions.",
               [](config& c) -> field_ref { return &c.feed.lock_timeout_ms; }),
    setting{.name = "feed.lock_retries_max",
            .value = 3,
            .min = 0,
            .max = lock_retries_max,
            .unit = "retries",
            .doc = "Retries of a feed transaction after a lock timeout.",
            .field = [](config& c) -> field_ref { return &c.feed.lock_retries_max; }},
    timeout_ms("admin.lock_timeout_ms", 50,
               "SET LOCAL lock_timeout of the operator API's transactions.",
               [](config& c) -> field_ref { return &c.admin.lock_timeout_ms; }),
    setting{.name = "admin.lock_retries_max",
            .value = 3,
            .min = 0,
            .max = lock_retries_max,
            .unit = "retries",
            .doc = "Retries of an operator transaction after a lock timeout.",
            .field = [](config& c) -> field_ref { return &c.admin.lock_retries_max; }},

    // --- Reservations --------------------------------------------------------------------
    setting{.name = "reservations.grace_s",
            .value = 3600,
            .min = 0,
            .max = year_s,
            .unit = "s",
            .doc = "Added to a market's settle_deadline_at for its reservations' deadline.",
            .field = [](config& c) -> field_ref { return &c.reservations.grace_s; }},
    setting{.name = "reservations.default_deadline_s",
            .value = 604'800,
            .min = 60,
            .max = year_s,
            .unit = "s",
            .doc = "Deadline after created_at of a market without settle_deadline_at.",
            .field = [](config& c) -> field_ref { return &c.reservations.default_deadline_s; }},
    timeout_ms("reservations.sweep_interval_ms", 60'000,
               "Pause between two sweeps for overdue reservations.",
               [](config& c) -> field_ref { return &c.reservations.sweep_interval_ms; }),
    setting{.name = "reservations.sweep_batch_bets_max",
            .value = 1000,
            .min = 1,
            .max = limits::sweep_batch_bets_max,
            .unit = "bets",
            .doc = "Bets the sweeper reads per statement.",
            .field = [](config& c) -> field_ref { return &c.reservations.sweep_batch_bets_max; }},

    // --- Reconciliation ------------------------------------------------------------------
    setting{.name = "reconcile.interval_ms",
            .value = 300'000,
            .min = 0,
            .max = 7LL * 24 * 3600 * 1000,
            .unit = "ms",
            .doc = "Pause between scheduled runs; 0: on demand only.",
            .field = [](config& c) -> field_ref { return &c.reconcile.interval_ms; }},
    setting{.name = "reconcile.chunk_accounts",
            .value = 1000,
            .min = 1,
            .max = reconcile_chunk_accounts_max,
            .unit = "accounts",
            .doc = "Accounts compared per step of a run.",
            .field = [](config& c) -> field_ref { return &c.reconcile.chunk_accounts; }},
    setting{.name = "reconcile.chunk_transfers",
            .value = 20'000,
            .min = 1,
            .max = reconcile_chunk_transfers_max,
            .unit = "transfers",
            .doc = "Transfers read per step of the ledger pass.",
            .field = [](config& c) -> field_ref { return &c.reconcile.chunk_transfers; }},
    setting{.name = "reconcile.chunk_pause_ms",
            .value = 0,
            .min = 0,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "Pause between two steps of a run.",
            .field = [](config& c) -> field_ref { return &c.reconcile.chunk_pause_ms; }},
    timeout_ms("reconcile.lock_timeout_ms", 1000, "SET LOCAL lock_timeout of a step.",
               [](config& c) -> field_ref { return &c.reconcile.lock_timeout_ms; }),
    timeout_ms("reconcile.statement_timeout_ms", 60'000,
               "SET LOCAL statement_timeout of a step and of an audit's check.",
               [](config& c) -> field_ref { return &c.reconcile.statement_timeout_ms; }),
    timeout_ms("reconcile.run_timeout_ms", 600'000,
               "A run still going after this stops and counts as failed.",
               [](config& c) -> field_ref { return &c.reconcile.run_timeout_ms; }),

    // --- Reads ---------------------------------------------------------------------------
    setting{.name = "read.balance_staleness_ms",
            .value = 1000,
            .min = 0,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "How far behind the standby may be for a balance read; 0: the primary.",
            .field = [](config& c) -> field_ref { return &c.read.balance_staleness_ms; }},
    setting{.name = "read.bets_staleness_ms",
            .value = 5000,
            .min = 0,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "The same for bets.",
            .field = [](config& c) -> field_ref { return &c.read.bets_staleness_ms; }},
    setting{.name = "read.bets_source",
            .value = "read_model"sv,
            .choices = bets_sources,
            .doc = "Where bets reads: the read model or the write tables.",
            .field = [](config& c) -> field_ref { return &c.read.bets_source; }},
    setting{.name = "read.read_your_writes",
            .value = true,
            .doc = "An account's reads show the placements this engine answered for it.",
            .field = [](config& c) -> field_ref { return &c.read.read_your_writes; }},
    setting{.name = "read.ryw_wait_ms",
            .value = 200,
            .min = 0,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "How long such a read waits for the standby or the projector.",
            .field = [](config& c) -> field_ref { return &c.read.ryw_wait_ms; }},
    setting{.name = "read.sample_interval_ms",
            .value = 100,
            .min = 10,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "How often the primary's and the standby's WAL positions are read.",
            .field = [](config& c) -> field_ref { return &c.read.sample_interval_ms; }},
    setting{.name = "read.projector_interval_ms",
            .value = 20,
            .min = 0,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "Pause of the caught-up projector; 0: this engine runs none.",
            .field = [](config& c) -> field_ref { return &c.read.projector_interval_ms; }},
    setting{.name = "read.projector_page_rows_max",
            .value = 5000,
            .min = 1,
            .max = limits::projection_page_rows_max,
            .unit = "rows",
            .doc = "Outbox rows the projector applies in one transaction, at most.",
            .field = [](config& c) -> field_ref { return &c.read.projector_page_rows_max; }},
    setting{.name = "read.projector_consumer",
            .value = "projector"sv,
            .check = check_projector_consumer,
            .doc = "The projector's row in outbox_cursors.",
            .bounds_note = "1..64 chars",
            .field = [](config& c) -> field_ref { return &c.read.projector_consumer; }},
    setting{.name = "read.projector_yield_ms",
            .value = 10'000,
            .min = 0,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "Longest the projector leaves its pages to a settlement; 0: never.",
            .field = [](config& c) -> field_ref { return &c.read.projector_yield_ms; }},

    // --- Time partitions -----------------------------------------------------------------
    setting{.name = "history.period",
            .value = "1 month"sv,
            .check = check_interval,
            .doc = "Length of a period: one partition of each time-partitioned table.",
            .bounds_note = "`<n> <second|minute|hour|day|week|month|year>`",
            .field = [](config& c) -> field_ref { return &c.history.period; }},
    setting{.name = "history.ahead_periods",
            .value = 2,
            .min = 1,
            .max = 1000,
            .unit = "periods",
            .doc = "Partitions exist this many periods past now.",
            .field = [](config& c) -> field_ref { return &c.history.ahead_periods; }},
    setting{.name = "history.retention",
            .value = "13 months"sv,
            .check = check_interval,
            .doc = "A closed period leaves this long after its end.",
            .bounds_note = "as `history.period`",
            .field = [](config& c) -> field_ref { return &c.history.retention; }},
    setting{.name = "history.close_grace_s",
            .value = 300,
            .min = 0,
            .max = 7LL * 24 * 3600,
            .unit = "s",
            .doc = "A period is closed no sooner after its end.",
            .field = [](config& c) -> field_ref { return &c.history.close_grace_s; }},
    setting{.name = "history.keeper_interval_ms",
            .value = 60'000,
            .min = 0,
            .max = timeout_ms_max,
            .unit = "ms",
            .doc = "Pause between rounds of the partition keeper; 0: no keeper.",
            .field = [](config& c) -> field_ref { return &c.history.keeper_interval_ms; }},
    timeout_ms("history.lock_timeout_ms", 2000,
               "lock_timeout of the keeper's attach, close and detach.",
               [](config& c) -> field_ref { return &c.history.lock_timeout_ms; }),
    timeout_ms("history.statement_timeout_ms", 600'000,
               "statement_timeout of the keeper's statements.",
               [](config& c) -> field_ref { return &c.history.statement_timeout_ms; }),

    // --- Peak diagnosis ------------------------------------------------------------------
    setting{.name = "diagnostics.sample_interval_ms",
            .value = 1000,
            .min = diagnosis_interval_ms_min,
            .max = diagnosis_interval_ms_max,
            .unit = "ms",
            .doc = "How often the peak sampler reads the engine and the database.",
            .field = [](config& c) -> field_ref { return &c.diagnostics.sample_interval_ms; }},
    setting{.name = "diagnostics.window_s",
            .value = 600,
            .min = 10,
            .max = diagnosis_window_s_max,
            .unit = "s",
            .doc = "Seconds of samples kept in memory.",
            .field = [](config& c) -> field_ref { return &c.diagnostics.window_s; }},
    setting{.name = "diagnostics.verdict_window_s",
            .value = 30,
            .min = 5,
            .max = diagnosis_window_s_max,
            .max_setting = "diagnostics.window_s",
            .unit = "s",
            .doc = "The newest samples the verdict judges.",
            .field = [](config& c) -> field_ref { return &c.diagnostics.verdict_window_s; }},
    setting{.name = "diagnostics.pgbouncer_admin_url",
            .value = ""sv,
            .empty_ok = true,
            .doc = "PgBouncer's admin console, for SHOW POOLS in each sample; empty: none.",
            .bounds_note = "empty, or a libpq URI",
            .field = [](config& c) -> field_ref { return &c.diagnostics.pgbouncer_admin_url; }},

    // --- Markets' defaults ---------------------------------------------------------------
    setting{.name = "markets.stake_min_minor",
            .value = 10,
            .min = 1,
            .max = limits::amount_minor_max,
            .unit = "minor units",
            .doc = "Default smallest stake of a market.",
            .field = [](config& c) -> field_ref { return &c.markets.stake_min_minor; }},
    setting{.name = "markets.stake_max_minor",
            .value = 100'000'000,
            .min = 1,
            .max = limits::amount_minor_max,
            .min_setting = "markets.stake_min_minor",
            .unit = "minor units",
            .doc = "Default largest stake of a market.",
            .field = [](config& c) -> field_ref { return &c.markets.stake_max_minor; }},
    setting{.name = "markets.liability_limit_minor",
            .value = 10'000'000'000,
            .min = 1,
            .max = limits::amount_minor_max,
            .unit = "minor units",
            .doc = "Default liability limit of a market, spread over its shards.",
            .field = [](config& c) -> field_ref { return &c.markets.liability_limit_minor; }},
    setting{.name = "markets.exposure_shards",
            .value = 8,
            .min = 1,
            .max = limits::exposure_shards_max,
            .unit = "shards",
            .doc = "Exposure shard rows per market.",
            .field = [](config& c) -> field_ref { return &c.markets.exposure_shards; }},
};

// Renders a bound: digits, or 10^n for the powers of ten past a billion that limits.hpp writes
// so (amount_minor_max).
std::string bound_text(std::int64_t v) {
    int exponent = 0;
    std::int64_t rest = v;
    while (rest >= 10 && rest % 10 == 0) {
        rest /= 10;
        ++exponent;
    }
    if (rest == 1 && exponent > 9) {
        return "10^" + std::to_string(exponent);
    }
    return std::to_string(v);
}

std::string join_choices(std::span<const std::string_view> choices) {
    std::string out;
    for (const auto choice : choices) {
        out += out.empty() ? "" : ", ";
        out += choice.empty() ? "\"\"" : std::string(choice);
    }
    return out;
}

}  // namespace

setting_type setting::type() const {
    if (std::holds_alternative<std::int64_t>(value)) {
        return setting_type::integer;
    }
    if (std::holds_alternative<bool>(value)) {
        return setting_type::boolean;
    }
    return choices.empty() ? setting_type::string : setting_type::choice;
}

std::span<const setting> table() { return rows; }

const setting* find(std::string_view name) {
    const auto it =
        std::find_if(rows.begin(), rows.end(), [name](const setting& s) { return s.name == name; });
    return it == rows.end() ? nullptr : &*it;
}

std::string env_name(std::string_view name) {
    std::string out = "FULLTIME_";
    for (const char c : name) {
        out += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

void fail(const std::string& what) { throw config_error("config: " + what); }

std::string out_of_range(std::string_view name, std::int64_t min, std::int64_t max,
                         std::int64_t value) {
    return "'" + std::string(name) + "' must be between " + std::to_string(min) + " and " +
           std::to_string(max) + ", got " + std::to_string(value);
}

std::pair<std::string, std::uint16_t> parse_address(std::string_view name,
                                                    const std::string& text) {
    const std::string key(name);
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
        fail("'" + key + "' must be host:port, got '" + text + "'");
    }
    std::string host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    const std::string port_text = text.substr(colon + 1);
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || ec != std::errc{} || ptr != port_text.data() + port_text.size() ||
        port > 65535) {
        fail("'" + key + "' port must be 0..65535, got '" + port_text + "'");
    }
    return {host, static_cast<std::uint16_t>(port)};
}

std::string default_text(const setting& s) {
    if (const auto* v = std::get_if<std::int64_t>(&s.value)) {
        return std::to_string(*v);
    }
    if (const auto* v = std::get_if<bool>(&s.value)) {
        return *v ? "`true`" : "`false`";
    }
    const auto text = std::get<std::string_view>(s.value);
    return text.empty() ? "`\"\"`" : "`" + std::string(text) + "`";
}

// A string's note is its whole rule (its check); any other type's note adds to its range or
// values.
std::string bounds_text(const setting& s) {
    std::string rule;
    switch (s.type()) {
        case setting_type::integer:
            rule = (s.min_setting.empty() ? bound_text(s.min)
                                          : "`" + std::string(s.min_setting) + "`") +
                   ".." +
                   (s.max_setting.empty() ? bound_text(s.max)
                                          : "`" + std::string(s.max_setting) + "`");
            break;
        case setting_type::boolean:
            rule = "true, false";
            break;
        case setting_type::choice:
            rule = join_choices(s.choices);
            break;
        case setting_type::string:
            if (!s.bounds_note.empty()) {
                return std::string(s.bounds_note);
            }
            return s.empty_ok ? "" : "non-empty";
    }
    return s.bounds_note.empty() ? rule : rule + ", " + std::string(s.bounds_note);
}

}  // namespace fulltime::settings
