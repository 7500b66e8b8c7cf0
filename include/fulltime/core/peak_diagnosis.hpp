#pragma once
/// Peak diagnosis (docs/design.md, "Observability at the peak"): what the sampler records once
/// per interval, the engine's and the database's readings on one time axis, and the verdict the
/// article's rules draw from a window of them:
///   - the wait for a connection grows while lock waits stay flat: connections;
///   - lock waits rise with settlement batches: shared rows;
///   - neither moves while dead tuples climb behind an old transaction: the oldest transaction,
///     named with its pid, age and application.
/// Pure: no I/O, no clock. The sampler (actors/peak_sampler.hpp) fills the samples; the routes
/// and `fulltime diagnose` show what judge() says.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace fulltime::diagnosis {

/// Holds one database session as pg_stat_activity showed it.
struct session {
    std::int32_t pid = 0;
    std::string application_name;
    std::string state;            ///< "active", "idle in transaction", ...
    std::string wait_event;       ///< "Lock:transactionid", empty when not waiting
    std::int64_t age_ms = 0;      ///< since its transaction started (0 when none is open)
    std::int64_t waiting_ms = 0;  ///< since its state last changed (lock waits, idle sessions)
    std::string query_start;      ///< ISO 8601, empty when unknown
    std::vector<std::int32_t> blocked_by;  ///< pg_blocking_pids, when it was asked
};

/// Holds one hot table's vacuum readings (pg_stat_user_tables).
struct table_reading {
    std::string name;
    std::int64_t dead_tuples = 0;
    std::int64_t updates = 0;            ///< n_tup_upd since the statistics were reset
    std::int64_t hot_updates = 0;        ///< n_tup_hot_upd
    std::string last_autovacuum;         ///< ISO 8601, empty when never
    std::int64_t last_autovacuum_s = 0;  ///< the same as Unix seconds, 0 when never
};

/// Holds one engine pool at the sample instant and its acquire waits over the interval.
struct pool_reading {
    std::string name;
    std::int64_t size_max = 0;
    std::int64_t in_use = 0;
    std::int64_t waiting = 0;
    std::optional<std::int64_t> acquire_wait_p99_us;  ///< none when nothing was acquired
};

/// Holds one standby (pg_stat_replication).
struct replica_reading {
    std::string name;  ///< application_name, else client address
    std::string state;
    std::optional<std::int64_t> replay_lag_ms;
};

/// Holds one replication slot (pg_replication_slots).
struct slot_reading {
    std::string name;
    std::string type;  ///< "physical" or "logical"
    bool active = false;
    std::string wal_status;                     ///< "reserved", "extended", "unreserved", "lost"
    std::optional<std::int64_t> safe_wal_size;  ///< bytes; none when max_slot_wal_keep_size is -1
};

/// Holds PgBouncer's SHOW POOLS summed over the engine's database.
struct bouncer_reading {
    std::int64_t clients_waiting = 0;  ///< cl_waiting
    std::int64_t max_wait_us = 0;      ///< maxwait and maxwait_us, the largest pool's
};

/// Holds one market's settlement backlog.
struct market_backlog {
    std::int64_t market_id = 0;
    std::int64_t age_ms = 0;  ///< its oldest unapplied result event's
    std::int64_t events = 0;
};

/// Holds everything one sampler tick read. Counts are over the interval that ended at t_ms.
struct sample {
    std::int64_t t_ms = 0;         ///< Unix time, milliseconds
    std::int64_t interval_ms = 0;  ///< since the previous sample

    // The engine's placement path.
    std::uint64_t placements = 0;  ///< place requests answered
    std::optional<std::int64_t> placement_p50_us;
    std::optional<std::int64_t> placement_p99_us;
    std::optional<std::int64_t> queue_p99_us;     ///< waiting for the actor's connection
    std::optional<std::int64_t> database_p99_us;  ///< in the database
    std::uint64_t placed = 0;
    std::uint64_t rejected = 0;
    std::uint64_t replayed = 0;
    std::uint64_t busy = 0;
    std::uint64_t failed = 0;
    std::int64_t placement_queued = 0;  ///< bets waiting for a connection at the instant
    std::uint64_t lock_timeouts = 0;    ///< placement and settlement lock timeouts

    // Settlement.
    std::uint64_t settled_bets = 0;
    std::int64_t batches_running = 0;
    bool backlog_known = false;
    std::int64_t backlog_events = 0;
    std::int64_t backlog_age_ms = 0;
    std::vector<market_backlog> backlog_markets;  ///< the oldest first, bounded

    std::vector<pool_reading> pools;

    // The database; meaningful only when database_ok.
    bool database_ok = false;
    std::int64_t lock_waiters = 0;
    std::vector<session> lock_waits;  ///< bounded; blocked_by filled at a bounded rate
    std::vector<session> blockers;    ///< the sessions named in blocked_by, when asked
    std::int64_t idle_in_transaction = 0;
    std::vector<session> idle_sessions;  ///< bounded, the oldest first
    std::optional<session> oldest_transaction;
    std::vector<table_reading> tables;
    std::vector<replica_reading> replicas;
    std::vector<slot_reading> slots;
    std::optional<bouncer_reading> bouncer;
};

/// Names the mechanism a verdict points at.
enum class verdict_code {
    no_data,             ///< too few samples to judge
    quiet,               ///< nothing holds placement back
    connections,         ///< waits for a connection, lock waits flat
    shared_rows,         ///< lock waits, with or without settlement batches
    oldest_transaction,  ///< dead tuples climbing behind an old transaction
};

/// Returns the code's name on the wire ("shared_rows").
std::string_view name(verdict_code code) noexcept;

/// Holds one rule that fired, with the readings that made it fire.
struct finding {
    verdict_code code = verdict_code::quiet;
    std::string summary;
    std::vector<std::string> evidence;
    std::optional<session> culprit;  ///< the session to look at, when one is named
};

/// Holds the verdict over a window: the strongest finding first in `findings`.
struct verdict {
    finding primary;
    std::vector<finding> findings;  ///< every rule that fired, strongest first; empty when quiet
    std::int64_t window_ms = 0;
    std::size_t samples = 0;
};

/// Holds the rules' thresholds. The defaults are limits::diagnosis_*.
struct thresholds {
    std::int64_t window_ms;                  ///< the samples judged: those this recent
    std::size_t samples_min;                 ///< fewer: no_data
    double share_min;                        ///< of samples that must show a wait for a connection
    double lock_share_min;                   ///< of samples that must show a lock wait
    std::int64_t connection_wait_us_min;     ///< a wait for a connection shorter is no signal
    double connection_wait_ratio_min;        ///< ... and it must exceed the database time so
    std::int64_t dead_tuples_rise_min;       ///< over the window, summed over the hot tables
    std::int64_t oldest_transaction_ms_min;  ///< younger transactions hold nothing back
    thresholds() noexcept;
};

/// Returns the verdict over the samples no older than `limits.window_ms` before the newest one.
/// `samples` are in time order.
verdict judge(std::span<const sample> samples, const thresholds& limits = {});

}  // namespace fulltime::diagnosis
