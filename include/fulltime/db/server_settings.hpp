#pragma once
/// The server settings that matter at the peak, read once when the engine starts and judged
/// (docs/config.md, "Guard rails at the peak"): the two timeouts that bound what a session can
/// hold, lock-wait logging, connections against the engine's pools, the hot tables' own
/// autovacuum settings, and the engine's role (docs/operations.md, "The database role"). Risky
/// values become warnings, logged and shown in /v1/diagnostics.

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fulltime::db {

/// Holds the settings as a session that sets nothing of its own sees them (the server's, the
/// database's and the role's), which is what an operator's psql or a script gets.
struct server_settings {
    std::int64_t idle_in_transaction_timeout_ms = 0;
    std::int64_t statement_timeout_ms = 0;
    bool log_lock_waits = false;
    std::int64_t max_connections = 0;
    std::int64_t reserved_connections = 0;  ///< superuser_reserved_connections
    /// The hot tables (updated or churned on the placement and settlement paths) that have no
    /// autovacuum_* storage parameter of their own, so run on the server's defaults.
    std::vector<std::string> hot_tables_on_defaults;
    std::string role;                ///< the session's role (current_user)
    bool role_is_superuser = false;  ///< it bypasses every permission check
    bool role_monitors = false;      ///< it has pg_monitor's privileges (sees others' sessions)
};

/// Holds what the engine itself puts on its sessions, for judging the settings against it.
struct engine_sessions {
    bool session_timeouts = true;  ///< database.session_timeouts
    std::int64_t idle_in_transaction_timeout_ms = 0;
    std::int64_t statement_timeout_ms = 0;
    std::size_t connections_max = 0;  ///< the pools' size_max, summed
};

/// Returns one warning per risky setting, each saying what it risks and what to set; none when
/// all is well.
std::vector<std::string> judge_server_settings(const server_settings& s, const engine_sessions& e);

/// Reads the settings on `conn`, which should be a session opened without session options.
boost::asio::awaitable<outcome<server_settings>> read_server_settings(connection& conn);

/// Returns the settings and their warnings as one JSON object (`settings`, `warnings`).
std::string server_settings_json(const server_settings& s,
                                 const std::vector<std::string>& warnings);

}  // namespace fulltime::db
