#pragma once
/// The subcommands of the `fulltime` binary. Each returns the process exit status.

#include "fulltime/config/config.hpp"

#include <string>
#include <vector>

namespace fulltime::app {

/// Runs the engine until SIGINT or SIGTERM (`fulltime serve`).
int serve_command(const config& cfg);

/// Applies pending migrations and exits (`fulltime migrate`).
int migrate_command(const config& cfg, const std::vector<std::string>& args);

/// Prints a signed token (`fulltime token account ID | producer NAME | admin [--ttl SECONDS]`).
int token_command(const config& cfg, const std::vector<std::string>& args);

/// Stores the operator's void of a market's open bets, past their reservation deadline
/// (`fulltime void-overdue --market ID [--key KEY] [--force] [--operator NAME]`). Prints one JSON
/// line; a refusal (not_overdue, nothing_to_void, unknown_market, conflict) exits with 1.
int void_overdue_command(const config& cfg, const std::vector<std::string>& args);

/// Runs one reconciliation against the configured database and prints its summary
/// (`fulltime reconcile [--json]`). Exit status 0: no reconciliation incident open afterwards;
/// 1: one is; 2: the run could not be made.
int reconcile_command(const config& cfg, const std::vector<std::string>& args);

/// Checks every money invariant on the configured database and prints PASS or FAIL per
/// invariant (`fulltime audit [--json]`). Exit status 0: all hold; 1: one does not; 2: usage
/// error, or the database could not be reached or did not answer.
int audit_command(const config& cfg, const std::vector<std::string>& args);

/// Lists the time partitions, one line per period with its state and what holds it; --keep runs
/// one partition keeper round first (`fulltime partitions [--keep] [--json]`). Exit status 0; 1:
/// the --keep round failed; 2: usage error, or the database could not be reached.
int partitions_command(const config& cfg, const std::vector<std::string>& args);

/// Runs the read model's projector until it caught up, or rebuilds the read model from the write
/// tables, or checks it against them (`fulltime project [--rebuild | --verify] [--json]`). Exit
/// status 0; 1: --verify found a disagreement; 2: usage error, or the database could not be
/// reached or did not answer.
int project_command(const config& cfg, const std::vector<std::string>& args);

/// Asks a running engine (the configured listen address, or --url) for GET /v1/diagnostics and
/// prints the verdict, its evidence and the newest samples (`fulltime diagnose [--url URL]
/// [--json] [--samples N]`). Exit status 0: quiet (or too few samples yet); 1: a mechanism is
/// named; 2: usage error, or the engine could not be reached or refused.
int diagnose_command(const config& cfg, const std::vector<std::string>& args);

/// Rehearses a match night from a scenario file (`fulltime rehearse SCENARIO.json [--out DIR]
/// [--database-url URL] [--pgbouncer] [--keep]`): starts the stack, drives the engine through its
/// public interfaces, injects the scenario's faults and judges its exit criteria. Exit status 0:
/// every criterion met; 1: one was not; 2: the rehearsal could not run.
int rehearse_command(const config& cfg, const std::vector<std::string>& args);

/// Drives placements over WebSocket against a running engine and prints figures as JSON
/// (`fulltime bench-placement --port P --connections N --accounts M ...`).
int bench_command(const config& cfg, const std::vector<std::string>& args);

}  // namespace fulltime::app
