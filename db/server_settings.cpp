#include "fulltime/db/server_settings.hpp"

#include "db/detail_error.hpp"

#include <nlohmann/json.hpp>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// The tables the placement and settlement paths update or churn; each gets autovacuum
// thresholds of its own in 0001_baseline.sql, which a later ALTER TABLE ... RESET may have lost.
// A partitioned table's are on each partition (fulltime_history_add_period): every leaf must
// have them. The partitions are found in pg_inherits, a catalog read: pg_partition_tree() would
// take a lock on the table, and the start-up check would wait behind anyone's lock on it.
constexpr const char* hot_tables =
    "{accounts,market_exposure,idempotency_keys,outbox,settlement_progress}";

// pg_settings.setting is in the setting's base unit: milliseconds for the two timeouts.
constexpr const char* server_settings_sql =
    "SELECT (SELECT setting::bigint FROM pg_settings "
    "        WHERE name = 'idle_in_transaction_session_timeout'), "
    "       (SELECT setting::bigint FROM pg_settings WHERE name = 'statement_timeout'), "
    "       (SELECT setting = 'on' FROM pg_settings WHERE name = 'log_lock_waits'), "
    "       (SELECT setting::bigint FROM pg_settings WHERE name = 'max_connections'), "
    "       (SELECT setting::bigint FROM pg_settings "
    "        WHERE name = 'superuser_reserved_connections'), "
    "       (SELECT coalesce(string_agg(t, ',' ORDER BY t), '') FROM unnest($1::text[]) t "
    "        WHERE EXISTS (WITH RECURSIVE tree(relid) AS ("
    "                          SELECT to_regclass(t)::oid "
    "                          UNION ALL SELECT i.inhrelid FROM pg_inherits i "
    "                          JOIN tree ON i.inhparent = tree.relid) "
    "                      SELECT FROM tree JOIN pg_class c ON c.oid = tree.relid "
    "                      WHERE c.relkind = 'r' AND NOT EXISTS ("
    "                          SELECT FROM unnest(c.reloptions) o "
    "                          WHERE o LIKE 'autovacuum\\_%'))), "
    "       current_user::text, "
    "       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
    "       pg_has_role(current_user, 'pg_monitor', 'USAGE')";

std::string seconds(std::int64_t ms) {
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

std::vector<std::string> judge_server_settings(const server_settings& s, const engine_sessions& e) {
    std::vector<std::string> out;
    if (s.idle_in_transaction_timeout_ms == 0) {
        out.push_back(
            "idle_in_transaction_session_timeout is 0 for sessions that do not set it: one "
            "session left idle in a transaction (an operator's psql, a script) holds vacuum and "
            "every market's settlement fence back; set it on the server or per role (ALTER ROLE "
            "... SET idle_in_transaction_session_timeout = '60s')");
    }
    if (!e.session_timeouts && s.statement_timeout_ms == 0) {
        out.push_back(
            "the engine's sessions run without a statement_timeout: database.session_timeouts is "
            "false and the server's is 0; set it per role (ALTER ROLE ... SET statement_timeout "
            "= '" +
            seconds(e.statement_timeout_ms > 0 ? e.statement_timeout_ms : 5000) + "')");
    }
    if (!e.session_timeouts && s.idle_in_transaction_timeout_ms == 0 &&
        e.idle_in_transaction_timeout_ms > 0) {
        out.push_back(
            "the engine's sessions run without an idle_in_transaction_session_timeout: "
            "database.session_timeouts is false, so database.idle_in_transaction_timeout_ms is "
            "not applied; set it per role");
    }
    if (!s.log_lock_waits) {
        out.push_back(
            "log_lock_waits is off: a lock wait longer than deadlock_timeout is not logged with "
            "the session that holds the lock; set log_lock_waits = on");
    }
    const std::int64_t usable = s.max_connections - s.reserved_connections;
    const auto wanted = static_cast<std::int64_t>(e.connections_max);
    if (usable < wanted + wanted / 10 + 5) {
        out.push_back("max_connections is " + std::to_string(s.max_connections) + " (" +
                      std::to_string(s.reserved_connections) +
                      " reserved for superusers): the engine's pools may open " +
                      std::to_string(wanted) +
                      " connections, which leaves little or nothing for operators, the "
                      "reconciliation's audit and a second engine; raise it or shrink the pools");
    }
    if (!s.hot_tables_on_defaults.empty()) {
        std::string names;
        for (const auto& t : s.hot_tables_on_defaults) {
            names += (names.empty() ? "" : ", ") + t;
        }
        out.push_back("the hot tables " + names +
                      " have no autovacuum settings of their own (the schema gives them lower "
                      "thresholds): at the server's defaults their dead tuples pile up between "
                      "vacuums at the peak; run the migrations again on a fresh database or "
                      "restore the storage parameters (docs/schema.md)");
    }
    if (s.role_is_superuser) {
        out.push_back("the engine connects as " + s.role +
                      ", a superuser: it needs only to own its database and pg_monitor, and a "
                      "superuser bypasses every permission check and may take the connections "
                      "kept for an operator at the peak (docs/operations.md, \"The database "
                      "role\")");
    } else if (!s.role_monitors) {
        out.push_back("the engine's role " + s.role +
                      " lacks pg_monitor: /v1/diagnostics and the peak sampler cannot see what "
                      "other roles' sessions hold or wait on; GRANT pg_monitor TO " +
                      s.role);
    }
    return out;
}

asio::awaitable<outcome<server_settings>> read_server_settings(connection& conn) {
    auto rows = co_await conn.query(server_settings_sql, params(std::string(hot_tables)));
    if (!rows) {
        co_return rows.error();
    }
    server_settings s;
    auto idle = rows->get<std::int64_t>(0, 0);
    auto statement = rows->get<std::int64_t>(0, 1);
    auto lock_waits = rows->get<bool>(0, 2);
    auto max = rows->get<std::int64_t>(0, 3);
    auto reserved = rows->get<std::int64_t>(0, 4);
    auto tables = rows->get<std::string>(0, 5);
    auto role = rows->get<std::string>(0, 6);
    auto superuser = rows->get<bool>(0, 7);
    auto monitors = rows->get<bool>(0, 8);
    if (!idle || !statement || !lock_waits || !max || !reserved || !tables || !role || !superuser ||
        !monitors) {
        co_return detail::make_failure(errc::bad_result, "server settings: unexpected row");
    }
    s.idle_in_transaction_timeout_ms = *idle;
    s.statement_timeout_ms = *statement;
    s.log_lock_waits = *lock_waits;
    s.max_connections = *max;
    s.reserved_connections = *reserved;
    s.role = *role;
    s.role_is_superuser = *superuser;
    s.role_monitors = *monitors;
    for (std::size_t start = 0; start < tables->size();) {
        const auto comma = tables->find(',', start);
        s.hot_tables_on_defaults.push_back(tables->substr(start, comma - start));
        start = comma == std::string::npos ? tables->size() : comma + 1;
    }
    co_return s;
}

std::string server_settings_json(const server_settings& s,
                                 const std::vector<std::string>& warnings) {
    nlohmann::json body = {
        {"settings",
         {{"idle_in_transaction_session_timeout_ms", s.idle_in_transaction_timeout_ms},
          {"statement_timeout_ms", s.statement_timeout_ms},
          {"log_lock_waits", s.log_lock_waits},
          {"max_connections", s.max_connections},
          {"superuser_reserved_connections", s.reserved_connections},
          {"hot_tables_on_default_autovacuum", s.hot_tables_on_defaults},
          {"role", s.role},
          {"role_is_superuser", s.role_is_superuser},
          {"role_has_pg_monitor", s.role_monitors}}},
        {"warnings", warnings}};
    return body.dump();
}

}  // namespace fulltime::db
