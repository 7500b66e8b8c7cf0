#pragma once
/// Where the engine's database is: the configured URL, or the private embedded cluster.

#include "app/commands/embedded_cluster.hpp"
#include "fulltime/config/config.hpp"

#include <optional>
#include <string>

namespace fulltime::app {

/// Holds the conninfo to use and, when no URL is configured, the cluster started for it.
struct database_target {
    std::string conninfo;
    std::string standby_conninfo;  ///< database.read_url: empty without a standby
    std::optional<embedded_cluster> cluster;
};

/// Resolves the database: starts the embedded cluster when database.url is empty (making it
/// first when there is none and `create_cluster` is true), then checks
/// that the server answers within connect_timeout_ms (a standby that does not answer is logged,
/// not fatal). Throws `unreachable` (exit_status.hpp) with one line
/// ("cannot reach the database at host=...: connection refused") otherwise.
database_target open_database_target(const config& cfg, bool create_cluster = true);

/// Leaves a private cluster that `target` found running (a `fulltime serve`'s) running when the
/// target goes away: stopping it would take the engine's database away. For commands that run
/// beside the engine.
void leave_adopted_cluster_running(database_target& target);

/// Resolves the database for a command that checks or changes it beside the engine (audit,
/// reconcile, partitions, project, void-overdue): as open_database_target, but it never makes a
/// private cluster (a new, empty one would only hide a wrong --config or a missing restore:
/// where there is none it throws `unreachable`), and one that a running `fulltime serve`
/// started is left running. Throws as open_database_target.
database_target open_command_target(const config& cfg);

/// Returns a conninfo or URI with any password replaced by "***", for logs and errors.
std::string redact_conninfo(const std::string& conninfo);

}  // namespace fulltime::app
