#include "fulltime/db/peak_statements.hpp"

#include "db/detail_error.hpp"

#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// One JSON document per sample, built by PostgreSQL. The sessions are this database's client
// backends other than the sampler's own; times are milliseconds, timestamps ISO 8601 UTC.
// $1: sessions of one kind kept, $2: backlogged markets kept.
constexpr const char* sample_sql = R"sql(
WITH a AS (
  SELECT pid, coalesce(application_name, '') AS app, coalesce(state, '') AS state,
         coalesce(wait_event_type || ':' || wait_event, '') AS wait, wait_event_type, xact_start,
         coalesce((extract(epoch FROM now() - xact_start) * 1000)::bigint, 0) AS age_ms,
         coalesce((extract(epoch FROM now() - state_change) * 1000)::bigint, 0) AS waiting_ms,
         coalesce(to_char(query_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '')
           AS query_start
  FROM pg_stat_activity
  WHERE datname = current_database() AND pid <> pg_backend_pid()
    AND backend_type = 'client backend'),
s AS (SELECT pid, app, state, wait, age_ms, waiting_ms, query_start FROM a),
backlog AS (
  SELECT p.market_id, count(*) AS events,
         (extract(epoch FROM now() - min(e.received_at)) * 1000)::bigint AS age_ms
  FROM settlement_progress p JOIN result_events e
    ON e.market_id = p.market_id AND e.seq > p.applied_seq
  GROUP BY p.market_id)
SELECT jsonb_build_object(
  'lock_waiters', (SELECT count(*) FROM a WHERE wait_event_type = 'Lock'),
  'lock_waits', (SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.waiting_ms DESC), '[]')
                 FROM (SELECT s.* FROM s JOIN a USING (pid) WHERE a.wait_event_type = 'Lock'
                       ORDER BY s.waiting_ms DESC LIMIT $1::integer) x),
  'idle_in_transaction', (SELECT count(*) FROM a WHERE state LIKE 'idle in transaction%'),
  'idle_sessions', (SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.age_ms DESC), '[]')
                    FROM (SELECT * FROM s WHERE state LIKE 'idle in transaction%'
                          ORDER BY age_ms DESC LIMIT $1::integer) x),
  'oldest', (SELECT to_jsonb(x) FROM (SELECT s.* FROM s JOIN a USING (pid)
                                     WHERE a.xact_start IS NOT NULL
                                     ORDER BY a.xact_start LIMIT 1) x),
  'tables', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                 'name', relname, 'dead', n_dead_tup, 'upd', n_tup_upd, 'hot', n_tup_hot_upd,
                 'autovacuum', coalesce(to_char(last_autovacuum AT TIME ZONE 'UTC',
                                                'YYYY-MM-DD"T"HH24:MI:SS"Z"'), ''),
                 'autovacuum_s', coalesce(extract(epoch FROM last_autovacuum)::bigint, 0))
                 ORDER BY relname), '[]')
             FROM pg_stat_user_tables WHERE relname IN ('accounts', 'market_exposure',
               'idempotency_keys', 'settlement_progress')),
  'backlog', (SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.age_ms DESC), '[]')
              FROM (SELECT * FROM backlog ORDER BY age_ms DESC LIMIT $2::integer) x),
  'backlog_events', (SELECT coalesce(sum(events), 0) FROM backlog),
  'backlog_age_ms', (SELECT coalesce(max(age_ms), 0) FROM backlog),
  'replicas', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'name', coalesce(nullif(application_name, ''), host(client_addr),
                                    'pid ' || pid),
                   'state', coalesce(state, ''),
                   'replay_lag_ms', (extract(epoch FROM replay_lag) * 1000)::bigint)), '[]')
               FROM pg_stat_replication),
  'slots', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'name', slot_name, 'type', slot_type, 'active', active,
                'wal_status', coalesce(wal_status, ''), 'safe_wal_size', safe_wal_size)), '[]')
            FROM pg_replication_slots))::text
)sql";

// $1: the waiting pids as an int[] literal. pg_blocking_pids runs once per waiter (the CTE is
// materialised: it is referenced twice).
constexpr const char* blockers_sql = R"sql(
WITH w AS (SELECT pid, pg_blocking_pids(pid) AS by FROM unnest($1::integer[]) AS pid),
b AS (SELECT DISTINCT unnest(by) AS pid FROM w)
SELECT jsonb_build_object(
  'waits', (SELECT coalesce(jsonb_agg(jsonb_build_object('pid', pid, 'by', to_jsonb(by))), '[]')
            FROM w),
  'blockers', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'pid', a.pid, 'app', coalesce(a.application_name, ''),
                   'state', coalesce(a.state, ''),
                   'wait', coalesce(a.wait_event_type || ':' || a.wait_event, ''),
                   'age_ms', coalesce((extract(epoch FROM now() - a.xact_start) * 1000)::bigint, 0),
                   'waiting_ms', coalesce((extract(epoch FROM now() - a.state_change) * 1000)
                                          ::bigint, 0),
                   'query_start', coalesce(to_char(a.query_start AT TIME ZONE 'UTC',
                                                   'YYYY-MM-DD"T"HH24:MI:SS"Z"'), ''))), '[]')
               FROM pg_stat_activity a JOIN b USING (pid)))::text
)sql";

diagnosis::session session_of(const json& j) {
    diagnosis::session s;
    s.pid = j.value("pid", 0);
    s.application_name = j.value("app", std::string());
    s.state = j.value("state", std::string());
    s.wait_event = j.value("wait", std::string());
    s.age_ms = j.value("age_ms", std::int64_t{0});
    s.waiting_ms = j.value("waiting_ms", std::int64_t{0});
    s.query_start = j.value("query_start", std::string());
    return s;
}

// Returns the one JSON document a statement returned, parsed; bad_result when it is not one.
asio::awaitable<outcome<json>> read_document(connection& conn, const char* sql, params args) {
    auto rows = co_await conn.query(sql, std::move(args));
    if (!rows) {
        co_return rows.error();
    }
    auto text = rows->get<std::string>(0, 0);
    if (!text) {
        co_return text.error();
    }
    auto doc = json::parse(*text, nullptr, false);
    if (!doc.is_object()) {
        co_return detail::make_failure(errc::bad_result, "a peak sample is not a JSON object");
    }
    // In place: a json converts to almost anything, so result's converting constructors are
    // ambiguous for it.
    co_return outcome<json>(boost::system::in_place_value, std::move(doc));
}

std::optional<std::int64_t> optional_integer(const json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) {
        return std::nullopt;
    }
    return it->get<std::int64_t>();
}

// Returns the integer in column `name` of row `row`, 0 when absent or not a number.
std::int64_t integer_column(const result& r, int row, const char* name) {
    const int col = r.column(name);
    if (col < 0) {
        return 0;
    }
    auto v = r.get<std::optional<std::int64_t>>(row, col);
    return v && *v ? **v : 0;
}

}  // namespace

asio::awaitable<outcome<void>> read_peak_database(connection& conn, diagnosis::sample& out,
                                                  std::size_t sessions_max,
                                                  std::size_t markets_max) {
    auto doc = co_await read_document(
        conn, sample_sql,
        params(static_cast<std::int64_t>(sessions_max), static_cast<std::int64_t>(markets_max)));
    if (!doc) {
        co_return doc.error();
    }
    const json& d = *doc;
    out.lock_waiters = d.value("lock_waiters", std::int64_t{0});
    for (const auto& j : d.value("lock_waits", json::array())) {
        out.lock_waits.push_back(session_of(j));
    }
    out.idle_in_transaction = d.value("idle_in_transaction", std::int64_t{0});
    for (const auto& j : d.value("idle_sessions", json::array())) {
        out.idle_sessions.push_back(session_of(j));
    }
    if (const auto it = d.find("oldest"); it != d.end() && it->is_object()) {
        out.oldest_transaction = session_of(*it);
    }
    for (const auto& j : d.value("tables", json::array())) {
        out.tables.push_back({j.value("name", std::string()), j.value("dead", std::int64_t{0}),
                              j.value("upd", std::int64_t{0}), j.value("hot", std::int64_t{0}),
                              j.value("autovacuum", std::string()),
                              j.value("autovacuum_s", std::int64_t{0})});
    }
    for (const auto& j : d.value("backlog", json::array())) {
        out.backlog_markets.push_back({j.value("market_id", std::int64_t{0}),
                                       j.value("age_ms", std::int64_t{0}),
                                       j.value("events", std::int64_t{0})});
    }
    out.backlog_events = d.value("backlog_events", std::int64_t{0});
    out.backlog_age_ms = d.value("backlog_age_ms", std::int64_t{0});
    out.backlog_known = true;
    for (const auto& j : d.value("replicas", json::array())) {
        out.replicas.push_back({j.value("name", std::string()), j.value("state", std::string()),
                                optional_integer(j, "replay_lag_ms")});
    }
    for (const auto& j : d.value("slots", json::array())) {
        out.slots.push_back({j.value("name", std::string()), j.value("type", std::string()),
                             j.value("active", false), j.value("wal_status", std::string()),
                             optional_integer(j, "safe_wal_size")});
    }
    out.database_ok = true;
    co_return outcome<void>{};
}

asio::awaitable<outcome<void>> read_blockers(connection& conn, diagnosis::sample& out) {
    if (out.lock_waits.empty()) {
        co_return outcome<void>{};
    }
    std::string pids = "{";
    for (const auto& w : out.lock_waits) {
        pids += std::to_string(w.pid) + ",";
    }
    pids.back() = '}';
    auto doc = co_await read_document(conn, blockers_sql, params(pids));
    if (!doc) {
        co_return doc.error();
    }
    for (const auto& j : doc->value("waits", json::array())) {
        const auto pid = j.value("pid", 0);
        for (auto& w : out.lock_waits) {
            if (w.pid == pid) {
                w.blocked_by = j.value("by", std::vector<std::int32_t>());
            }
        }
    }
    for (const auto& j : doc->value("blockers", json::array())) {
        out.blockers.push_back(session_of(j));
    }
    co_return outcome<void>{};
}

std::string conninfo_value(const std::string& conninfo, std::string_view keyword) {
    char* error = nullptr;
    PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
    if (error != nullptr) {
        PQfreemem(error);
    }
    std::string value;
    for (auto* o = options; o != nullptr && o->keyword != nullptr; ++o) {
        if (std::string_view(o->keyword) == keyword && o->val != nullptr) {
            value = o->val;
        }
    }
    PQconninfoFree(options);
    return value;
}

std::string database_of(const std::string& conninfo) { return conninfo_value(conninfo, "dbname"); }

asio::awaitable<outcome<diagnosis::bouncer_reading>> read_bouncer_pools(
    connection& conn, const std::string& database) {
    auto rows = co_await conn.execute_script("SHOW POOLS");
    if (!rows) {
        co_return rows.error();
    }
    const int db_col = rows->column("database");
    if (db_col < 0 || rows->column("cl_waiting") < 0) {
        co_return detail::make_failure(errc::bad_result,
                                       "SHOW POOLS has no database or cl_waiting column: is the "
                                       "URL PgBouncer's admin console?");
    }
    diagnosis::bouncer_reading r;
    for (int i = 0; i < rows->rows(); ++i) {
        if (!database.empty() && rows->text(i, db_col) != database) {
            continue;
        }
        r.clients_waiting += integer_column(*rows, i, "cl_waiting");
        const std::int64_t wait_us = integer_column(*rows, i, "maxwait") * 1'000'000 +
                                     integer_column(*rows, i, "maxwait_us");
        r.max_wait_us = std::max(r.max_wait_us, wait_us);
    }
    co_return r;
}

}  // namespace fulltime::db
