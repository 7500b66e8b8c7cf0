#include "fulltime/core/peak_diagnosis.hpp"

#include "fulltime/limits.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace fulltime::diagnosis {

namespace {

// "4.1 ms" from microseconds.
std::string ms(std::int64_t us) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(us) / 1000.0);
    return buf;
}

// "45 s" from milliseconds.
std::string seconds(std::int64_t ms_value) { return std::to_string(ms_value / 1000) + " s"; }

std::string of(std::size_t k, std::size_t n) {
    return std::to_string(k) + " of " + std::to_string(n) + " samples";
}

// "pid 1234 (psql)".
std::string who(const session& s) {
    return "pid " + std::to_string(s.pid) + " (" +
           (s.application_name.empty() ? std::string("no application_name") : s.application_name) +
           ")";
}

std::int64_t dead_tuples(const sample& s) {
    std::int64_t n = 0;
    for (const auto& t : s.tables) {
        n += t.dead_tuples;
    }
    return n;
}

bool settling(const sample& s) { return s.settled_bets > 0 || s.batches_running > 0; }

bool lock_signal(const sample& s) {
    return (s.database_ok && s.lock_waiters > 0) || s.lock_timeouts > 0;
}

// Whether a pool serves bettors (placement, and the reads of balances and bet lists). Waits in
// the settlement and background pools hold back no placement: settlement's batches are paced
// by its slots, and the background pool serves the sweeper, the pushes and diagnostics
// themselves.
bool bettor_facing(const pool_reading& p) { return p.name == "placement" || p.name == "read"; }

// Whether bets or bettors' reads waited for a connection in this sample: the placement queue's
// p99 past both the floor and `ratio` times the database time, or a bettor-facing pool (or
// PgBouncer) with waiters or a long acquire.
bool connection_signal(const sample& s, const thresholds& t) {
    if (s.queue_p99_us && *s.queue_p99_us >= t.connection_wait_us_min &&
        static_cast<double>(*s.queue_p99_us) >=
            t.connection_wait_ratio_min * static_cast<double>(s.database_p99_us.value_or(0))) {
        return true;
    }
    for (const auto& p : s.pools) {
        if (bettor_facing(p) &&
            (p.waiting > 0 ||
             (p.acquire_wait_p99_us && *p.acquire_wait_p99_us >= t.connection_wait_us_min))) {
            return true;
        }
    }
    return s.bouncer && s.bouncer->clients_waiting > 0;
}

// The worst and the median of the per-sample placement p99s (quantiles of intervals do not
// merge; these two say how bad and how usual).
std::string placement_line(std::span<const sample> w) {
    std::vector<std::int64_t> p99;
    std::uint64_t placements = 0;
    for (const auto& s : w) {
        placements += s.placements;
        if (s.placement_p99_us) {
            p99.push_back(*s.placement_p99_us);
        }
    }
    if (p99.empty()) {
        return "no placements answered in the window";
    }
    std::ranges::sort(p99);
    return "placement p99 per interval: median " + ms(p99[p99.size() / 2]) + ", worst " +
           ms(p99.back()) + " (" + std::to_string(placements) + " placements)";
}

std::optional<finding> shared_rows(std::span<const sample> w, const thresholds& t) {
    std::size_t locked = 0;
    std::size_t locked_settling = 0;
    std::int64_t peak_waiters = 0;
    std::uint64_t timeouts = 0;
    std::uint64_t peak_settled_per_s = 0;
    std::map<std::int32_t, std::pair<std::size_t, session>> blockers;  // pid -> (times, last)
    for (const auto& s : w) {
        timeouts += s.lock_timeouts;
        if (!lock_signal(s)) {
            continue;
        }
        ++locked;
        peak_waiters = std::max(peak_waiters, s.lock_waiters);
        if (settling(s)) {
            ++locked_settling;
            const auto per_s = s.interval_ms > 0 ? s.settled_bets * 1000 /
                                                       static_cast<std::uint64_t>(s.interval_ms)
                                                 : 0;
            peak_settled_per_s = std::max(peak_settled_per_s, per_s);
        }
        for (const auto& b : s.blockers) {
            auto& [times, last] = blockers[b.pid];
            ++times;
            last = b;
        }
    }
    if (locked == 0 ||
        static_cast<double>(locked) < t.lock_share_min * static_cast<double>(w.size())) {
        return std::nullopt;
    }
    finding f;
    f.code = verdict_code::shared_rows;
    const bool with_settlement = locked_settling * 2 >= locked;
    f.summary = with_settlement ? "Lock waits rise with settlement batches: placements and "
                                  "settlement contend for the same rows (shared rows)."
                                : "Sessions wait for row locks that other sessions hold "
                                  "(shared rows).";
    f.evidence.push_back("lock waits in " + of(locked, w.size()) + ": at most " +
                         std::to_string(peak_waiters) + " sessions waiting at once, " +
                         std::to_string(timeouts) + " lock timeouts in the engine");
    f.evidence.push_back("settlement ran in " + std::to_string(locked_settling) + " of those " +
                         std::to_string(locked) + " samples (at most " +
                         std::to_string(peak_settled_per_s) + " settled bets/s)");
    if (!blockers.empty()) {
        // The culprit is the root of the chains: the blocker seen most often among those not
        // waiting for a lock themselves (a settlement batch that waits while it holds rows is
        // a link, not the cause); else the one seen most often.
        const auto rank = [](const auto& kv) {
            const bool link = kv.second.second.wait_event.starts_with("Lock:");
            return std::pair(!link, kv.second.first);
        };
        const auto top = std::ranges::max_element(blockers, {}, rank);
        f.culprit = top->second.second;
        std::string line = "blocking sessions seen:";
        for (const auto& [pid, seen] : blockers) {
            line += " " + who(seen.second) + " " + std::to_string(seen.first) + "x;";
        }
        line.pop_back();
        f.evidence.push_back(line);
    }
    f.evidence.push_back(placement_line(w));
    return f;
}

std::optional<finding> connections(std::span<const sample> w, const thresholds& t,
                                   bool locks_flat) {
    std::size_t waited = 0;
    std::int64_t queue_peak = 0;
    std::int64_t database_at_peak = 0;
    std::int64_t queued_peak = 0;
    std::map<std::string, std::int64_t> pool_waiting_peak;
    std::int64_t bouncer_waiting_peak = 0;
    for (const auto& s : w) {
        if (!connection_signal(s, t)) {
            continue;
        }
        ++waited;
        if (s.queue_p99_us && *s.queue_p99_us > queue_peak) {
            queue_peak = *s.queue_p99_us;
            database_at_peak = s.database_p99_us.value_or(0);
        }
        queued_peak = std::max(queued_peak, s.placement_queued);
        for (const auto& p : s.pools) {
            if (bettor_facing(p)) {
                auto& peak = pool_waiting_peak[p.name];
                peak = std::max(peak, p.waiting);
            }
        }
        if (s.bouncer) {
            bouncer_waiting_peak = std::max(bouncer_waiting_peak, s.bouncer->clients_waiting);
        }
    }
    if (!locks_flat || static_cast<double>(waited) < t.share_min * static_cast<double>(w.size())) {
        return std::nullopt;
    }
    finding f;
    f.code = verdict_code::connections;
    f.summary =
        "Work waits for a database connection while lock waits stay flat: the pools (or the "
        "connections behind them) are too few for the load (connections).";
    f.evidence.push_back("waits for a connection in " + of(waited, w.size()));
    if (queue_peak >= t.connection_wait_us_min) {
        f.evidence.push_back("a bet's wait for its connection, p99: up to " + ms(queue_peak) +
                             ", against " + ms(database_at_peak) +
                             " in the database in that interval; at most " +
                             std::to_string(queued_peak) + " bets queued at once");
    }
    std::string pools;
    for (const auto& [name, peak] : pool_waiting_peak) {
        if (peak > 0) {
            pools += " " + name + " " + std::to_string(peak) + ";";
        }
    }
    if (!pools.empty()) {
        pools.pop_back();
        f.evidence.push_back("pool waiters at most:" + pools);
    }
    if (bouncer_waiting_peak > 0) {
        f.evidence.push_back("PgBouncer clients waiting: at most " +
                             std::to_string(bouncer_waiting_peak));
    }
    f.evidence.push_back("lock waits flat");
    f.evidence.push_back(placement_line(w));
    return f;
}

std::optional<finding> oldest_transaction(std::span<const sample> w, const thresholds& t) {
    const sample* first = nullptr;
    const sample* last = nullptr;
    std::int64_t low = 0;
    for (const auto& s : w) {
        if (!s.database_ok) {
            continue;
        }
        if (first == nullptr || dead_tuples(s) < low) {
            low = dead_tuples(s);
        }
        if (first == nullptr) {
            first = &s;
        }
        last = &s;
    }
    if (first == nullptr || first == last || !last->oldest_transaction ||
        last->oldest_transaction->age_ms < t.oldest_transaction_ms_min) {
        return std::nullopt;
    }
    const std::int64_t rise = dead_tuples(*last) - low;
    if (rise < t.dead_tuples_rise_min) {
        return std::nullopt;
    }
    const session& old = *last->oldest_transaction;
    finding f;
    f.code = verdict_code::oldest_transaction;
    f.summary = "Dead tuples climb behind the oldest transaction: " + who(old) + ", " +
                (old.state.empty() ? std::string("open") : old.state) + ", open for " +
                seconds(old.age_ms) + ", holds vacuum back (oldest transaction).";
    f.culprit = old;
    std::string tables;
    for (const auto& now : last->tables) {
        for (const auto& then : first->tables) {
            if (then.name == now.name && now.dead_tuples != then.dead_tuples) {
                tables += " " + now.name + " " + std::to_string(then.dead_tuples) + " -> " +
                          std::to_string(now.dead_tuples) + ";";
            }
        }
    }
    if (!tables.empty()) {
        tables.pop_back();
    }
    f.evidence.push_back("dead tuples on the hot tables +" + std::to_string(rise) + " over " +
                         seconds(last->t_ms - first->t_ms) + ":" + tables);
    f.evidence.push_back("oldest transaction: " + who(old) + ", state " + old.state +
                         ", open for " + seconds(old.age_ms) +
                         (old.query_start.empty() ? "" : ", last query at " + old.query_start));
    if (last->idle_in_transaction > 0) {
        std::string idle = std::to_string(last->idle_in_transaction) +
                           (last->idle_in_transaction == 1 ? " session" : " sessions") +
                           " idle in a transaction:";
        for (const auto& s : last->idle_sessions) {
            idle += " " + who(s) + " " + seconds(s.age_ms) + ";";
        }
        idle.pop_back();
        f.evidence.push_back(idle);
    }
    f.evidence.push_back(placement_line(w));
    return f;
}

finding quiet(std::span<const sample> w, const thresholds& t) {
    finding f;
    f.code = verdict_code::quiet;
    f.summary = "Nothing holds placement back.";
    f.evidence.push_back(placement_line(w));
    std::size_t locked = 0;
    std::size_t waited = 0;
    for (const auto& s : w) {
        locked += lock_signal(s) ? 1 : 0;
        waited += connection_signal(s, t) ? 1 : 0;
    }
    f.evidence.push_back("lock waits in " + of(locked, w.size()) + "; waits for a connection in " +
                         of(waited, w.size()));
    const sample& last = w.back();
    // An engine transaction caught mid-flight is no news; one open for a second or more is.
    if (last.database_ok && last.oldest_transaction && last.oldest_transaction->age_ms >= 1000) {
        f.evidence.push_back("oldest transaction open for " +
                             seconds(last.oldest_transaction->age_ms) + " (" +
                             who(*last.oldest_transaction) + ")");
    }
    if (last.backlog_known) {
        f.evidence.push_back("settlement backlog: " + std::to_string(last.backlog_events) +
                             " events, the oldest " + seconds(last.backlog_age_ms) + " old");
    }
    return f;
}

}  // namespace

std::string_view name(verdict_code code) noexcept {
    switch (code) {
        case verdict_code::no_data:
            return "no_data";
        case verdict_code::quiet:
            return "quiet";
        case verdict_code::connections:
            return "connections";
        case verdict_code::shared_rows:
            return "shared_rows";
        case verdict_code::oldest_transaction:
            return "oldest_transaction";
    }
    return "no_data";
}

thresholds::thresholds() noexcept
    : window_ms(limits::diagnosis_verdict_window_ms),
      samples_min(limits::diagnosis_samples_min),
      share_min(limits::diagnosis_share_min),
      lock_share_min(limits::diagnosis_lock_share_min),
      connection_wait_us_min(limits::diagnosis_connection_wait_us_min),
      connection_wait_ratio_min(limits::diagnosis_connection_wait_ratio_min),
      dead_tuples_rise_min(limits::diagnosis_dead_tuples_rise_min),
      oldest_transaction_ms_min(limits::diagnosis_oldest_transaction_ms_min) {}

verdict judge(std::span<const sample> samples, const thresholds& limits) {
    verdict v;
    v.window_ms = limits.window_ms;
    if (samples.empty()) {
        v.primary = {verdict_code::no_data, "No samples yet.", {}, std::nullopt};
        return v;
    }
    const std::int64_t since = samples.back().t_ms - limits.window_ms;
    const auto begin =
        std::ranges::find_if(samples, [since](const sample& s) { return s.t_ms > since; });
    const std::span<const sample> w(begin, samples.end());
    v.samples = w.size();
    if (w.size() < limits.samples_min) {
        v.primary = {verdict_code::no_data,
                     "Too few samples to judge yet (" + std::to_string(w.size()) + " of " +
                         std::to_string(limits.samples_min) + ").",
                     {},
                     std::nullopt};
        return v;
    }
    auto rows = shared_rows(w, limits);
    if (rows) {
        v.findings.push_back(std::move(*rows));
    }
    // A queue behind lock waits is the locks' doing: connections only while they stay flat.
    auto pools = connections(w, limits, v.findings.empty());
    if (pools) {
        v.findings.push_back(std::move(*pools));
    }
    auto old = oldest_transaction(w, limits);
    if (old) {
        v.findings.push_back(std::move(*old));
    }
    v.primary = v.findings.empty() ? quiet(w, limits) : v.findings.front();
    return v;
}

}  // namespace fulltime::diagnosis
