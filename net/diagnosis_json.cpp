#include "fulltime/net/diagnosis_json.hpp"

#include <map>
#include <string>

namespace fulltime::net {

using nlohmann::json;

namespace {

json session_json(const diagnosis::session& s) {
    json j = {{"pid", s.pid},
              {"application_name", s.application_name},
              {"state", s.state},
              {"age_ms", s.age_ms},
              {"waiting_ms", s.waiting_ms},
              {"query_start", s.query_start}};
    if (!s.wait_event.empty()) {
        j["wait_event"] = s.wait_event;
    }
    if (!s.blocked_by.empty()) {
        j["blocked_by"] = s.blocked_by;
    }
    return j;
}

json finding_json(const diagnosis::finding& f) {
    json j = {{"code", diagnosis::name(f.code)}, {"summary", f.summary}, {"evidence", f.evidence}};
    if (f.culprit) {
        j["culprit"] = session_json(*f.culprit);
    }
    return j;
}

json ms(std::optional<std::int64_t> us) {
    if (!us) {
        return nullptr;
    }
    return static_cast<double>(*us) / 1000.0;
}

double per_s(std::uint64_t n, std::int64_t interval_ms) {
    return interval_ms > 0 ? static_cast<double>(n) * 1000.0 / static_cast<double>(interval_ms)
                           : 0.0;
}

// Returns the array under `key` of a map of named series, made of nulls up to `size` when new:
// a name first seen at sample i has no value before it.
json& named(json& family, const std::string& key, std::size_t size) {
    if (!family.contains(key)) {
        family[key] = json::array();
    }
    json& a = family[key];
    while (a.size() < size) {
        a.push_back(nullptr);
    }
    return a;
}

// Pads every array of a family to `size` with nulls (a name absent from the newer samples).
void pad(json& family, std::size_t size) {
    for (auto& [key, a] : family.items()) {
        while (a.size() < size) {
            a.push_back(nullptr);
        }
    }
}

// Each hot table's vacuum readings, by name.
json hot_tables_json(const diagnosis::sample& s) {
    json out = json::object();
    for (const auto& t : s.tables) {
        const double hot = t.updates > 0
                               ? static_cast<double>(t.hot_updates) / static_cast<double>(t.updates)
                               : 0.0;
        out[t.name] = {{"n_dead_tup", t.dead_tuples},
                       {"n_tup_upd", t.updates},
                       {"n_tup_hot_upd", t.hot_updates},
                       {"hot_update_share", hot},
                       {"last_autovacuum",
                        t.last_autovacuum.empty() ? json(nullptr) : json(t.last_autovacuum)}};
    }
    return out;
}

}  // namespace

json database_json(const diagnosis::sample& s) {
    if (!s.database_ok) {
        return json::object();
    }
    return {{"sampled_at_ms", s.t_ms},
            {"lock_waiters", s.lock_waiters},
            {"idle_in_transaction", s.idle_in_transaction},
            {"oldest_transaction_ms", s.oldest_transaction ? s.oldest_transaction->age_ms : 0},
            {"hot_tables", hot_tables_json(s)}};
}

json verdict_json(const diagnosis::verdict& v) {
    json j = finding_json(v.primary);
    j["window_s"] = v.window_ms / 1000;
    j["samples"] = v.samples;
    j["findings"] = json::array();
    for (const auto& f : v.findings) {
        j["findings"].push_back(finding_json(f));
    }
    return j;
}

namespace {

/// Holds the series' columns as they fill, one value per sample each (a family of named
/// columns pads the names a sample lacks with null).
struct series_columns {
    json t = json::array();
    json interval = json::array();
    json rate = json::array();
    json p50 = json::array();
    json p99 = json::array();
    json queue = json::array();
    json database = json::array();
    json queued = json::array();
    json outcomes = {{"placed", json::array()},
                     {"rejected", json::array()},
                     {"replayed", json::array()},
                     {"busy", json::array()},
                     {"failed", json::array()}};
    json lock_timeouts = json::array();
    json settled = json::array();
    json backlog_age = json::array();
    json backlog_events = json::array();
    json by_market = json::object();
    json lock_waiters = json::array();
    json idle = json::array();
    json oldest = json::array();
    json dead = json::object();
    json pool_waiting = json::object();
    json pool_wait_p99 = json::object();
    json replay_lag = json::object();
    json bouncer_waiting = json::array();
    json bouncer_wait = json::array();
    bool bouncer = false;

    // Adds sample `i` to every column.
    void add(const diagnosis::sample& s, std::size_t i) {
        t.push_back(s.t_ms);
        interval.push_back(s.interval_ms);
        add_placement(s);
        add_settlement(s, i);
        add_database(s, i);
        add_pools(s, i);
        const std::size_t n = i + 1;
        for (json* family : {&by_market, &dead, &pool_waiting, &pool_wait_p99, &replay_lag}) {
            pad(*family, n);
        }
    }

    void add_placement(const diagnosis::sample& s) {
        rate.push_back(per_s(s.placements, s.interval_ms));
        p50.push_back(ms(s.placement_p50_us));
        p99.push_back(ms(s.placement_p99_us));
        queue.push_back(ms(s.queue_p99_us));
        database.push_back(ms(s.database_p99_us));
        queued.push_back(s.placement_queued);
        outcomes["placed"].push_back(per_s(s.placed, s.interval_ms));
        outcomes["rejected"].push_back(per_s(s.rejected, s.interval_ms));
        outcomes["replayed"].push_back(per_s(s.replayed, s.interval_ms));
        outcomes["busy"].push_back(per_s(s.busy, s.interval_ms));
        outcomes["failed"].push_back(per_s(s.failed, s.interval_ms));
        lock_timeouts.push_back(per_s(s.lock_timeouts, s.interval_ms));
    }

    void add_settlement(const diagnosis::sample& s, std::size_t i) {
        settled.push_back(per_s(s.settled_bets, s.interval_ms));
        backlog_age.push_back(s.backlog_known ? json(s.backlog_age_ms) : json(nullptr));
        backlog_events.push_back(s.backlog_known ? json(s.backlog_events) : json(nullptr));
        for (const auto& m : s.backlog_markets) {
            named(by_market, std::to_string(m.market_id), i).push_back(m.age_ms);
        }
    }

    void add_database(const diagnosis::sample& s, std::size_t i) {
        lock_waiters.push_back(s.database_ok ? json(s.lock_waiters) : json(nullptr));
        idle.push_back(s.database_ok ? json(s.idle_in_transaction) : json(nullptr));
        oldest.push_back(!s.database_ok         ? json(nullptr)
                         : s.oldest_transaction ? json(s.oldest_transaction->age_ms)
                                                : json(0));
        if (s.database_ok) {
            for (const auto& tb : s.tables) {
                named(dead, tb.name, i).push_back(tb.dead_tuples);
            }
            for (const auto& r : s.replicas) {
                named(replay_lag, r.name, i)
                    .push_back(r.replay_lag_ms ? json(*r.replay_lag_ms) : json(nullptr));
            }
        }
    }

    void add_pools(const diagnosis::sample& s, std::size_t i) {
        for (const auto& p : s.pools) {
            named(pool_waiting, p.name, i).push_back(p.waiting);
            named(pool_wait_p99, p.name, i).push_back(ms(p.acquire_wait_p99_us));
        }
        bouncer = bouncer || s.bouncer.has_value();
        bouncer_waiting.push_back(s.bouncer ? json(s.bouncer->clients_waiting) : json(nullptr));
        bouncer_wait.push_back(
            s.bouncer ? json(static_cast<double>(s.bouncer->max_wait_us) / 1000.0) : json(nullptr));
    }

    // The columns by their names in the answer; the standbys' and PgBouncer's only when there
    // were any.
    json take() {
        json out = {{"t_ms", std::move(t)},
                    {"interval_ms", std::move(interval)},
                    {"placements_per_s", std::move(rate)},
                    {"placement_p50_ms", std::move(p50)},
                    {"placement_p99_ms", std::move(p99)},
                    {"placement_queue_p99_ms", std::move(queue)},
                    {"placement_database_p99_ms", std::move(database)},
                    {"placement_queued", std::move(queued)},
                    {"placement_outcomes_per_s", std::move(outcomes)},
                    {"lock_timeouts_per_s", std::move(lock_timeouts)},
                    {"settled_bets_per_s", std::move(settled)},
                    {"settlement_backlog_age_ms", std::move(backlog_age)},
                    {"settlement_backlog_events", std::move(backlog_events)},
                    {"settlement_backlog_age_ms_by_market", std::move(by_market)},
                    {"lock_waiters", std::move(lock_waiters)},
                    {"idle_in_transaction", std::move(idle)},
                    {"oldest_transaction_ms", std::move(oldest)},
                    {"dead_tuples", std::move(dead)},
                    {"pool_waiting", std::move(pool_waiting)},
                    {"pool_acquire_wait_p99_ms", std::move(pool_wait_p99)}};
        if (!replay_lag.empty()) {
            out["replay_lag_ms"] = std::move(replay_lag);
        }
        if (bouncer) {
            out["pgbouncer_clients_waiting"] = std::move(bouncer_waiting);
            out["pgbouncer_max_wait_ms"] = std::move(bouncer_wait);
        }
        return out;
    }
};

}  // namespace

json series_json(std::span<const diagnosis::sample> samples) {
    series_columns columns;
    for (const auto& s : samples) {
        columns.add(s, columns.t.size());
    }
    return columns.take();
}

json latest_json(const diagnosis::sample& s) {
    json j = {{"t_ms", s.t_ms}, {"database_ok", s.database_ok}};
    if (!s.database_ok) {
        return j;
    }
    j["lock_waits"] = json::array();
    for (const auto& w : s.lock_waits) {
        j["lock_waits"].push_back(session_json(w));
    }
    j["blockers"] = json::array();
    for (const auto& b : s.blockers) {
        j["blockers"].push_back(session_json(b));
    }
    j["idle_in_transaction_sessions"] = json::array();
    for (const auto& i : s.idle_sessions) {
        j["idle_in_transaction_sessions"].push_back(session_json(i));
    }
    j["oldest_transaction"] =
        s.oldest_transaction ? session_json(*s.oldest_transaction) : json(nullptr);
    j["hot_tables"] = hot_tables_json(s);
    j["replicas"] = json::array();
    for (const auto& r : s.replicas) {
        j["replicas"].push_back(
            {{"name", r.name},
             {"state", r.state},
             {"replay_lag_ms", r.replay_lag_ms ? json(*r.replay_lag_ms) : json(nullptr)}});
    }
    j["slots"] = json::array();
    for (const auto& sl : s.slots) {
        j["slots"].push_back(
            {{"name", sl.name},
             {"type", sl.type},
             {"active", sl.active},
             {"wal_status", sl.wal_status},
             {"safe_wal_size", sl.safe_wal_size ? json(*sl.safe_wal_size) : json(nullptr)}});
    }
    if (s.bouncer) {
        j["pgbouncer"] = {{"clients_waiting", s.bouncer->clients_waiting},
                          {"max_wait_ms", static_cast<double>(s.bouncer->max_wait_us) / 1000.0}};
    }
    return j;
}

}  // namespace fulltime::net
