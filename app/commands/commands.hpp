#pragma once
/// The subcommands of the `fulltime` binary. Each takes its options as app/cli.cpp parsed them
/// and returns the process exit status (app/commands/exit_status.hpp: 0 ok, 1 a domain "no",
/// 2 usage, 3 unreachable, 4 failed); the failures it throws are mapped by main the same way.

#include "fulltime/config/config.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace fulltime::app {

/// Runs the engine until SIGINT or SIGTERM (`fulltime serve`). A database whose schema is newer
/// than this binary is refused (exit 1).
int serve_command(const config& cfg);

struct migrate_options {
    bool status = false;  ///< list, change nothing
    bool json = false;    ///< with status: one JSON object
};

/// Applies pending migrations and exits (`fulltime migrate`); with --status lists them and exits
/// 1 when something is pending or the schema is newer than this binary.
int migrate_command(const config& cfg, const migrate_options& o);

struct token_options {
    std::string kind;             ///< account, producer or admin
    std::int64_t account_id = 0;  ///< account
    std::string name;             ///< the producer's or the operator's name (may be empty)
    std::int64_t ttl_s = 24 * 3600;
};

/// Prints a signed token (`fulltime token account ID | producer NAME | admin OPERATOR
/// [--ttl SECONDS]`).
int token_command(const config& cfg, const token_options& o);

struct void_overdue_options {
    std::int64_t market_id = 0;
    std::optional<std::string> key;  ///< default operator:void-overdue:ID
    bool force = false;
    std::string operator_name = "cli";
};

/// Stores the operator's void of a market's open bets, past their reservation deadline
/// (`fulltime void-overdue --market ID [--key KEY] [--force] [--operator NAME]`). Prints one JSON
/// line; a refusal (not_overdue, nothing_to_void, unknown_market, conflict) exits with 1.
int void_overdue_command(const config& cfg, const void_overdue_options& o);

struct close_gap_options {
    std::int64_t market_id = 0;
    std::int64_t from = 0;
    std::int64_t through = 0;
    std::optional<std::string> key;  ///< default operator:close-gap:ID:FROM-THROUGH
    std::string operator_name = "cli";
};

/// Stores the operator's decision that seqs FROM to THROUGH of a market's feed will never come
/// (`fulltime close-gap --market ID --from FROM --through THROUGH [--key KEY] [--operator NAME]`),
/// so the events after the hole apply. Prints one JSON line; a refusal (not_a_gap, conflict,
/// unknown_market) exits with 1.
int close_gap_command(const config& cfg, const close_gap_options& o);

/// Runs one reconciliation against the configured database and prints its summary
/// (`fulltime reconcile [--json]`). Exit status 0: no reconciliation incident open afterwards;
/// 1: one is.
int reconcile_command(const config& cfg, bool as_json);

/// Checks every money invariant on the configured database and prints PASS or FAIL per
/// invariant (`fulltime audit [--json]`). Exit status 0: all hold; 1: one does not.
int audit_command(const config& cfg, bool as_json);

/// Lists the time partitions, one line per period with its state and what holds it; --keep runs
/// one partition keeper round first (`fulltime partitions [--keep] [--json]`). Exit status 0;
/// 4: the --keep round failed (what it did stays done).
int partitions_command(const config& cfg, bool keep, bool as_json);

enum class project_mode { catch_up, rebuild, verify };

/// Runs the read model's projector until it caught up, or rebuilds the read model from the write
/// tables, or checks it against them (`fulltime project [--rebuild | --verify] [--json]`). Exit
/// status 0; 1: --verify found a disagreement.
int project_command(const config& cfg, project_mode mode, bool as_json);

struct diagnose_options {
    std::optional<std::string> url;  ///< http://HOST:PORT; default the configured listen address
    bool json = false;
    std::int64_t samples = 10;
};

/// Where `fulltime diagnose` asks: host and port.
struct engine_address {
    std::string host;
    std::string port;
};

/// Returns the host and port of "http://HOST:PORT[/...]"; throws std::invalid_argument naming
/// --url otherwise.
engine_address parse_engine_url(const std::string& url);

/// Asks a running engine (the configured listen address, or --url) for GET /v1/diagnostics and
/// prints the verdict, its evidence and the newest samples (`fulltime diagnose [--url URL]
/// [--json] [--samples N]`). Exit status 0: quiet (or too few samples yet); 1: a mechanism is
/// named; 3: the engine could not be reached; 4: it answered with an error.
int diagnose_command(const config& cfg, const diagnose_options& o);

struct rehearse_options {
    std::string scenario_path;
    std::string out_dir;
    std::string database_url;
    bool pgbouncer = false;  ///< PgBouncer in between whatever the scenario says
    bool keep = false;
};

/// Rehearses a match night from a scenario file (`fulltime rehearse SCENARIO.json [--out DIR]
/// [--database-url URL] [--pgbouncer] [--keep]`): starts the stack, drives the engine through its
/// public interfaces, injects the scenario's faults and judges its exit criteria. Exit status 0:
/// every criterion met; 1: one was not; 2: a bad scenario; 4: the stack or the run failed (3
/// when the rehearsal's own connection to the database could not be made).
int rehearse_command(const config& cfg, const rehearse_options& o);

/// The options of `fulltime bench-placement` as given; bench_command checks and expands them.
struct bench_arguments {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;
    std::size_t connections = 16;
    std::int64_t accounts = 16;
    std::int64_t first_account = 1;
    std::string selections = "1";  ///< "ID[:W],..." (--selection ID is one with weight 1)
    std::string stakes = "1.00";   ///< "AMOUNT[:W],..."
    std::string odds = "2.00";
    double duration_s = 10;
    double warmup_s = 0;  ///< leading seconds left out of latency and rate
    double rate = 0;      ///< requests/s in total; 0: closed loop
    std::string arrivals = "uniform";
    std::size_t inflight = 4;  ///< per connection, closed loop
    double repeat_ratio = 0.1;
    std::string key_prefix = "bench";
    std::string samples_out;  ///< where each measured reply's time and latency go ("": nowhere)
};

/// Drives placements over WebSocket against a running engine and prints figures as JSON
/// (`fulltime bench-placement --port P --connections N --accounts M ...`). SIGINT or SIGTERM
/// ends the run early as its duration would. Exit status 0; 1: a connection or a request failed.
int bench_command(const config& cfg, const bench_arguments& a);

}  // namespace fulltime::app
