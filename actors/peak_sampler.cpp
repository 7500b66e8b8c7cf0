// The peak sampler: see peak_sampler.hpp.

#include "fulltime/actors/peak_sampler.hpp"

#include "actors/io_handoff.hpp"
#include "fulltime/actors/placement.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/core/latency_window.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/peak_statements.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/limits.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

namespace fulltime::actors {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;
using metrics::latency_window;

// --- peak_history -------------------------------------------------------------------------

peak_history::peak_history(std::size_t capacity, std::int64_t interval_ms,
                           diagnosis::thresholds thresholds)
    : capacity_(std::max<std::size_t>(capacity, 1)),
      interval_ms_(interval_ms),
      thresholds_(thresholds) {}

void peak_history::push(diagnosis::sample s) {
    std::lock_guard lock(mutex_);
    samples_.push_back(std::move(s));
    while (samples_.size() > capacity_) {
        samples_.pop_front();
    }
    ++samples_total_;
    // Judge only the samples the verdict's window can hold.
    const std::size_t keep = std::min<std::size_t>(
        samples_.size(),
        static_cast<std::size_t>(thresholds_.window_ms / std::max<std::int64_t>(interval_ms_, 1)) +
            2);
    const std::vector<diagnosis::sample> recent(samples_.end() - static_cast<std::ptrdiff_t>(keep),
                                                samples_.end());
    verdict_ = diagnosis::judge(recent, thresholds_);
}

void peak_history::failed(std::string why) {
    std::lock_guard lock(mutex_);
    ++failures_total_;
    last_error_ = std::move(why);
}

std::vector<diagnosis::sample> peak_history::samples() const {
    std::lock_guard lock(mutex_);
    return {samples_.begin(), samples_.end()};
}

diagnosis::verdict peak_history::verdict() const {
    std::lock_guard lock(mutex_);
    return verdict_;
}

diagnosis::sample peak_history::latest() const {
    std::lock_guard lock(mutex_);
    return samples_.empty() ? diagnosis::sample{} : samples_.back();
}

std::uint64_t peak_history::samples_total() const {
    std::lock_guard lock(mutex_);
    return samples_total_;
}

std::uint64_t peak_history::failures_total() const {
    std::lock_guard lock(mutex_);
    return failures_total_;
}

std::string peak_history::last_error() const {
    std::lock_guard lock(mutex_);
    return last_error_;
}

namespace {

using tick_atom = caf::atom_constant<caf::atom("pk_tick")>;
using sampled_atom = caf::atom_constant<caf::atom("pk_done")>;

// What the sampler remembers between two samples. Touched on the io_context only, by one
// sample at a time.
struct sampler_memory {
    bool first = true;
    bool stopped = false;
    bool sampling = false;  ///< a sample is being taken (it may be using `bouncer`)
    steady::time_point last;
    steady::time_point last_blockers;
    latency_window::snapshot placement{};
    latency_window::snapshot queue{};
    latency_window::snapshot database{};
    std::vector<latency_window::snapshot> pool_waits;  ///< in pools::stats() order
    std::uint64_t placed = 0;
    std::uint64_t rejected = 0;
    std::uint64_t replayed = 0;
    std::uint64_t busy = 0;
    std::uint64_t failed = 0;
    std::uint64_t lock_timeouts = 0;
    std::uint64_t settled = 0;
    std::unique_ptr<db::connection> bouncer;
};

struct sampler_inputs {
    asio::any_io_executor io;
    db::pools* pools = nullptr;
    placement_metrics* placement = nullptr;
    settlement_metrics* settlement = nullptr;
    std::shared_ptr<peak_history> history;
    std::shared_ptr<sampler_memory> memory;
    std::string bouncer_url;
    std::string bouncer_database;  ///< the engine's database name as PgBouncer knows it
    std::chrono::milliseconds connect_timeout{0};
    std::chrono::milliseconds query_timeout{0};
    std::chrono::milliseconds interval{0};
};

std::optional<std::int64_t> quantile_us(const latency_window::snapshot& before,
                                        const latency_window::snapshot& after, double q,
                                        std::uint64_t* count = nullptr) {
    const auto v = latency_window::quantile(before, after, q, count);
    if (!v) {
        return std::nullopt;
    }
    return v->count();
}

// Returns now - before and stores now in `before`.
std::uint64_t delta(std::uint64_t& before, std::uint64_t now) {
    const std::uint64_t d = now >= before ? now - before : 0;
    before = now;
    return d;
}

// The engine's half of a sample: counts since the previous one and gauges now.
void read_engine(const sampler_inputs& in, sampler_memory& mem, diagnosis::sample& s) {
    placement_metrics& pm = *in.placement;
    const auto placement = pm.recent.read();
    const auto queue = pm.queue_recent.read();
    const auto database = pm.database_recent.read();
    s.placement_p50_us = quantile_us(mem.placement, placement, 0.5, &s.placements);
    s.placement_p99_us = quantile_us(mem.placement, placement, 0.99);
    s.queue_p99_us = quantile_us(mem.queue, queue, 0.99);
    s.database_p99_us = quantile_us(mem.database, database, 0.99);
    mem.placement = placement;
    mem.queue = queue;
    mem.database = database;
    s.placed = delta(mem.placed, pm.placed.value());
    s.rejected =
        delta(mem.rejected, pm.rejected.value() + pm.key_reused.value() + pm.invalid.value());
    s.replayed = delta(mem.replayed, pm.replayed.value());
    s.busy = delta(mem.busy, pm.busy.value());
    s.failed = delta(mem.failed, pm.failed.value());
    s.placement_queued = pm.queued.value();
    settlement_metrics& sm = *in.settlement;
    s.lock_timeouts = delta(mem.lock_timeouts, pm.lock_timeouts.value() + sm.lock_timeouts.value());
    s.settled_bets = delta(mem.settled, sm.bets.value());
    s.batches_running = sm.batches_running.value();

    const auto pools = in.pools->stats();
    mem.pool_waits.resize(pools.size());
    for (std::size_t i = 0; i < pools.size(); ++i) {
        const auto& p = pools[i];
        s.pools.push_back({p.name, static_cast<std::int64_t>(p.size_max),
                           static_cast<std::int64_t>(p.in_use),
                           static_cast<std::int64_t>(p.waiting),
                           quantile_us(mem.pool_waits[i], p.acquire_waits, 0.99)});
        mem.pool_waits[i] = p.acquire_waits;
    }
}

// The database's half; returns why it failed, or an empty string.
asio::awaitable<std::string> read_database(const sampler_inputs& in, sampler_memory& mem,
                                           diagnosis::sample& s) {
    auto conn = co_await in.pools->background->acquire();
    if (!conn) {
        co_return "no connection: " + db::describe(conn.error());
    }
    auto read = co_await db::read_peak_database(**conn, s, limits::diagnosis_sessions_max,
                                                limits::diagnosis_markets_max);
    if (!read) {
        co_return db::describe(read.error());
    }
    const auto now = steady::now();
    if (!s.lock_waits.empty() &&
        now - mem.last_blockers >=
            std::chrono::milliseconds(limits::diagnosis_blockers_interval_ms)) {
        mem.last_blockers = now;
        auto blockers = co_await db::read_blockers(**conn, s);
        if (!blockers) {
            co_return "blockers: " + db::describe(blockers.error());
        }
    }
    co_return std::string();
}

// PgBouncer's pools; returns why it failed, or an empty string. The admin connection stays
// open between samples and is opened again after a failure.
asio::awaitable<std::string> read_bouncer(const sampler_inputs& in, sampler_memory& mem,
                                          diagnosis::sample& s) {
    if (!mem.bouncer || mem.bouncer->broken()) {
        auto opened = co_await db::connection::open(in.io, in.bouncer_url, in.connect_timeout,
                                                    in.query_timeout, false);
        if (!opened) {
            co_return "PgBouncer: " + db::describe(opened.error());
        }
        mem.bouncer = std::move(*opened);
    }
    auto pools = co_await db::read_bouncer_pools(*mem.bouncer, in.bouncer_database);
    if (!pools) {
        mem.bouncer.reset();
        co_return "PgBouncer: " + db::describe(pools.error());
    }
    s.bouncer = *pools;
    co_return std::string();
}

asio::awaitable<void> take_sample(sampler_inputs in) {
    sampler_memory& mem = *in.memory;
    if (mem.stopped) {
        co_return;
    }
    mem.sampling = true;
    const auto now = steady::now();
    diagnosis::sample s;
    s.t_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
    s.interval_ms =
        mem.first ? in.interval.count()
                  : std::chrono::duration_cast<std::chrono::milliseconds>(now - mem.last).count();
    read_engine(in, mem, s);
    const bool first = mem.first;
    mem.first = false;
    mem.last = now;
    std::string why = co_await read_database(in, mem, s);
    if (!why.empty()) {
        s.database_ok = false;
        if (!mem.stopped) {
            in.history->failed(why);
        }
    }
    if (!in.bouncer_url.empty() && !mem.stopped) {
        why = co_await read_bouncer(in, mem, s);
        if (!why.empty()) {
            in.history->failed(why);
        }
    }
    mem.sampling = false;
    if (mem.stopped) {
        mem.bouncer.reset();
        co_return;
    }
    // The first sample's counts run from the engine's start, not over one interval: it only
    // primes the snapshots.
    if (!first) {
        in.history->push(std::move(s));
    }
}

struct sampler_state {
    sampler_inputs inputs;
    steady::time_point started;
    static inline const char* name = "fulltime.peak_sampler";
};

using sampler_actor = caf::stateful_actor<sampler_state>;

caf::behavior sampler_behavior(sampler_actor* self, sampler_inputs inputs) {
    self->state.inputs = std::move(inputs);
    self->delayed_send(self, self->state.inputs.interval, tick_atom::value);
    return {
        [self](tick_atom) {
            self->state.started = steady::now();
            detail::run_on_io<sampled_atom>(self, self->state.inputs.io,
                                            [in = self->state.inputs] { return take_sample(in); });
        },
        [self](sampled_atom) {
            // One sample per interval, measured from the start of the previous one.
            const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                steady::now() - self->state.started);
            self->delayed_send(
                self, std::max(std::chrono::milliseconds(0), self->state.inputs.interval - spent),
                tick_atom::value);
        },
    };
}

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", s);
    return buf;
}

using metrics::append_header;
using metrics::append_sample;
using metrics::label;

// The sampler's own counters and the verdict, which are there before the first sample.
void render_verdict(const peak_history& history, const diagnosis::verdict& v, std::string& out) {
    append_header(out, "fulltime_diagnostics_samples_total", "Peak samples taken.", "counter");
    append_sample(out, "fulltime_diagnostics_samples_total", "",
                  std::to_string(history.samples_total()));
    append_header(out, "fulltime_diagnostics_sample_failures_total",
                  "Peak samples whose database (or PgBouncer) read failed.", "counter");
    append_sample(out, "fulltime_diagnostics_sample_failures_total", "",
                  std::to_string(history.failures_total()));
    append_header(out, "fulltime_diagnosis_verdict",
                  "1 for the mechanism the peak diagnosis names now, 0 for the others.", "gauge");
    for (const auto code :
         {diagnosis::verdict_code::no_data, diagnosis::verdict_code::quiet,
          diagnosis::verdict_code::connections, diagnosis::verdict_code::shared_rows,
          diagnosis::verdict_code::oldest_transaction}) {
        append_sample(out, "fulltime_diagnosis_verdict", label("verdict", diagnosis::name(code)),
                      v.primary.code == code ? "1" : "0");
    }
}

void render_backlog(const diagnosis::sample& s, std::string& out) {
    // The overall backlog age is the settlement coordinator's
    // fulltime_settlement_backlog_age_seconds (one family has one source); the sampler adds the
    // oldest markets'.
    append_header(out, "fulltime_settlement_market_backlog_age_seconds",
                  "Age of each backlogged market's oldest unapplied event (the oldest markets).",
                  "gauge");
    for (const auto& m : s.backlog_markets) {
        append_sample(out, "fulltime_settlement_market_backlog_age_seconds",
                      label("market", std::to_string(m.market_id)),
                      seconds_text(static_cast<double>(m.age_ms) / 1e3));
    }
}

void render_sessions(const diagnosis::sample& s, std::string& out) {
    append_header(out, "fulltime_db_lock_waiting_sessions",
                  "Sessions of the engine's database waiting for a lock.", "gauge");
    append_sample(out, "fulltime_db_lock_waiting_sessions", "", std::to_string(s.lock_waiters));
    append_header(out, "fulltime_db_idle_in_transaction_sessions",
                  "Sessions idle inside an open transaction.", "gauge");
    append_sample(out, "fulltime_db_idle_in_transaction_sessions", "",
                  std::to_string(s.idle_in_transaction));
    append_header(out, "fulltime_db_oldest_transaction_age_seconds",
                  "Age of the oldest open transaction of a client session.", "gauge");
    append_sample(
        out, "fulltime_db_oldest_transaction_age_seconds", "",
        seconds_text(s.oldest_transaction ? static_cast<double>(s.oldest_transaction->age_ms) / 1e3
                                          : 0.0));
}

void render_tables(const diagnosis::sample& s, std::string& out) {
    append_header(out, "fulltime_db_table_dead_tuples", "Dead tuples of a hot table.", "gauge");
    for (const auto& t : s.tables) {
        append_sample(out, "fulltime_db_table_dead_tuples", label("table", t.name),
                      std::to_string(t.dead_tuples));
    }
    append_header(out, "fulltime_db_table_tuples_updated_total",
                  "Rows updated in a hot table (n_tup_upd).", "counter");
    for (const auto& t : s.tables) {
        append_sample(out, "fulltime_db_table_tuples_updated_total", label("table", t.name),
                      std::to_string(t.updates));
    }
    append_header(out, "fulltime_db_table_tuples_hot_updated_total",
                  "Rows updated in place, without an index entry (n_tup_hot_upd).", "counter");
    for (const auto& t : s.tables) {
        append_sample(out, "fulltime_db_table_tuples_hot_updated_total", label("table", t.name),
                      std::to_string(t.hot_updates));
    }
    append_header(out, "fulltime_db_table_last_autovacuum_timestamp_seconds",
                  "When autovacuum last finished on a hot table (0: never).", "gauge");
    for (const auto& t : s.tables) {
        append_sample(out, "fulltime_db_table_last_autovacuum_timestamp_seconds",
                      label("table", t.name), std::to_string(t.last_autovacuum_s));
    }
}

void render_replication(const diagnosis::sample& s, std::string& out) {
    if (!s.replicas.empty()) {
        append_header(out, "fulltime_db_replica_replay_lag_seconds",
                      "Replay lag of each standby (pg_stat_replication).", "gauge");
        for (const auto& r : s.replicas) {
            if (r.replay_lag_ms) {
                append_sample(out, "fulltime_db_replica_replay_lag_seconds",
                              label("standby", r.name),
                              seconds_text(static_cast<double>(*r.replay_lag_ms) / 1e3));
            }
        }
    }
    if (!s.slots.empty()) {
        append_header(out, "fulltime_db_replication_slot_safe_wal_size_bytes",
                      "WAL that can still be written before a slot is lost.", "gauge");
        for (const auto& sl : s.slots) {
            if (sl.safe_wal_size) {
                append_sample(out, "fulltime_db_replication_slot_safe_wal_size_bytes",
                              label("slot", sl.name), std::to_string(*sl.safe_wal_size));
            }
        }
        append_header(out, "fulltime_db_replication_slot_wal_status",
                      "1 for each slot's WAL status (reserved, extended, unreserved, lost).",
                      "gauge");
        for (const auto& sl : s.slots) {
            append_sample(out, "fulltime_db_replication_slot_wal_status",
                          label("slot", sl.name) + "," + label("status", sl.wal_status), "1");
        }
    }
}

void render_bouncer(const diagnosis::sample& s, std::string& out) {
    if (s.bouncer) {
        append_header(out, "fulltime_pgbouncer_clients_waiting",
                      "PgBouncer clients waiting for a server connection (SHOW POOLS).", "gauge");
        append_sample(out, "fulltime_pgbouncer_clients_waiting", "",
                      std::to_string(s.bouncer->clients_waiting));
        append_header(out, "fulltime_pgbouncer_max_wait_seconds",
                      "Longest wait of a PgBouncer client in a pool (SHOW POOLS maxwait).",
                      "gauge");
        append_sample(out, "fulltime_pgbouncer_max_wait_seconds", "",
                      seconds_text(static_cast<double>(s.bouncer->max_wait_us) / 1e6));
    }
}

// The newest sample and the verdict as Prometheus series, at scrape time.
void render(const peak_history& history, std::string& out) {
    const auto s = history.latest();
    const auto v = history.verdict();
    render_verdict(history, v, out);
    if (s.t_ms == 0) {
        return;
    }
    render_backlog(s, out);
    if (!s.database_ok) {
        return;
    }
    render_sessions(s, out);
    render_tables(s, out);
    render_replication(s, out);
    render_bouncer(s, out);
}

}  // namespace

struct peak_sampler::impl {
    caf::actor actor;
    std::shared_ptr<peak_history> history;
    std::shared_ptr<sampler_memory> memory;
    bool stopped = false;
};

peak_sampler::peak_sampler(caf::actor_system& system, asio::any_io_executor io, db::pools& pools,
                           const config& cfg, placement_metrics& placement,
                           settlement_metrics& settlement, metrics::registry& registry)
    : impl_(std::make_shared<impl>()) {
    const auto& d = cfg.diagnostics;
    FULLTIME_ASSERT(d.sample_interval_ms > 0);
    diagnosis::thresholds rules;
    rules.window_ms = d.verdict_window_s * 1000;
    impl_->history = std::make_shared<peak_history>(
        static_cast<std::size_t>(d.window_s * 1000 / d.sample_interval_ms), d.sample_interval_ms,
        rules);
    impl_->memory = std::make_shared<sampler_memory>();
    sampler_inputs in;
    in.io = std::move(io);
    in.pools = &pools;
    in.placement = &placement;
    in.settlement = &settlement;
    in.history = impl_->history;
    in.memory = impl_->memory;
    in.bouncer_url = d.pgbouncer_admin_url;
    // SHOW POOLS lists every database the bouncer serves: count the engine's (the name in
    // database.url, which goes through the bouncer), or all when the URL names none.
    in.bouncer_database = db::database_of(cfg.database.url);
    in.connect_timeout = std::chrono::milliseconds(cfg.database.connect_timeout_ms);
    in.query_timeout = std::chrono::milliseconds(cfg.database.query_timeout_ms);
    in.interval = std::chrono::milliseconds(d.sample_interval_ms);
    std::weak_ptr<peak_history> weak = impl_->history;
    registry.add_collector([weak](std::string& out) {
        if (auto h = weak.lock()) {
            render(*h, out);
        }
    });
    impl_->actor = system.spawn(sampler_behavior, std::move(in));
}

peak_sampler::~peak_sampler() {
    if (!impl_->stopped) {
        caf::anon_send_exit(impl_->actor, caf::exit_reason::user_shutdown);
    }
}

std::shared_ptr<const peak_history> peak_sampler::history() const noexcept {
    return impl_->history;
}

void peak_sampler::stop() {
    if (impl_->stopped) {
        return;
    }
    impl_->stopped = true;
    impl_->memory->stopped = true;
    // stop() runs on the io_context, as samples do: a sample in progress closes the admin
    // connection itself when it ends.
    if (!impl_->memory->sampling) {
        impl_->memory->bouncer.reset();
    }
    caf::anon_send_exit(impl_->actor, caf::exit_reason::user_shutdown);
}

}  // namespace fulltime::actors
