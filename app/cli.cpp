// The whole command tree of `fulltime`, built with CLI11 (Debian's libcli11-dev). CLI11 is a
// heavy header-only library and this machine builds on few cores: this is the only translation
// unit that includes it. Each subcommand fills its options struct (app/commands/commands.hpp);
// the command itself checks what CLI11 cannot (lengths, combinations with the configuration).

#include "app/cli.hpp"

#include "app/commands/commands.hpp"
#include "app/commands/exit_status.hpp"

#include "fulltime/config/config.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/limits.hpp"
#include "fulltime/version.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::app {

namespace {

constexpr const char* footer = R"(
Exit status, every command: 0 ok; 1 a domain "no" (a refusal, a drift, a failed
invariant, something pending, a criterion not met); 2 usage (bad arguments or
configuration); 3 unreachable (the database; for diagnose, the engine); 4 any other
failure (a SQL error, a stack that did not start).

Configuration: config/fulltime.json holds the defaults; --config PATH (or FULLTIME_CONFIG)
overrides them, FULLTIME_* variables override both. See docs/config.md.)";

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

// The deepest subcommand the command line reached: its help and its errors are the ones shown.
const CLI::App* reached(const CLI::App& app) {
    const CLI::App* at = &app;
    while (!at->get_subcommands().empty()) {
        at = at->get_subcommands().front();
    }
    return at;
}

// "fulltime token admin" for the token admin subcommand.
std::string path_of(const CLI::App* app) {
    std::string path;
    for (; app != nullptr; app = app->get_parent()) {
        path = app->get_name() + (path.empty() ? "" : " " + path);
    }
    return path;
}

// A subcommand: options after it that it does not know go to its parents (--config anywhere).
CLI::App* add(CLI::App& parent, const std::string& name, const std::string& description) {
    CLI::App* sub = parent.add_subcommand(name, description);
    sub->fallthrough();
    return sub;
}

// Makes `run` what runs, with the configuration, once `sub` parsed.
void on_parsed(CLI::App* sub, std::function<int(const config&)>& action,
               std::function<int(const config&)> run) {
    sub->callback([&action, run = std::move(run)] { action = run; });
}

void add_json(CLI::App* sub, bool& json, const std::string& description) {
    sub->add_flag("--json", json, description);
}

// What the command line parses into: every subcommand's options, which CLI11 binds by
// reference, so it outlives the parse; `action` is what the parsed subcommand runs once the
// configuration is loaded.
struct parsed_line {
    std::function<int(const config&)> action;
    migrate_options migrate;
    token_options token;
    void_overdue_options void_overdue;
    bool void_json = false;
    close_gap_options close_gap;
    bool close_gap_json = false;
    bool reconcile_json = false;
    bool audit_json = false;
    bool partitions_keep = false;
    bool partitions_json = false;
    bool project_rebuild = false;
    bool project_verify = false;
    bool project_json = false;
    diagnose_options diagnose;
    rehearse_options rehearse;
    bench_arguments bench;
    bool bench_json = false;
    bool version_json = false;
    bool version_asked = false;
};

void add_serve(CLI::App& app, parsed_line& line) {
    CLI::App* serve = add(app, "serve",
                          "run the engine (starts a private PostgreSQL when no database URL is "
                          "configured); a newer schema is refused (1)");
    on_parsed(serve, line.action, [](const config& cfg) { return serve_command(cfg); });
}

void add_migrate(CLI::App& app, parsed_line& line) {
    CLI::App* migrate_app = add(app, "migrate", "apply pending database migrations and exit");
    CLI::Option* status = migrate_app->add_flag(
        "--status", line.migrate.status,
        "list applied, pending and unknown (a newer release's) migrations, change nothing; exit "
        "1 when something is pending or the schema is newer");
    migrate_app->add_flag("--json", line.migrate.json, "with --status: one JSON object")
        ->needs(status);
    on_parsed(migrate_app, line.action,
              [&line](const config& cfg) { return migrate_command(cfg, line.migrate); });
}

void add_token(CLI::App& app, parsed_line& line) {
    CLI::App* token_app = add(app, "token", "print a signed token");
    token_app->require_subcommand(1);
    const auto add_token_kind = [&line, token_app](const std::string& kind,
                                                   const std::string& description) {
        CLI::App* sub = add(*token_app, kind, description);
        sub->add_option("--ttl", line.token.ttl_s, "token lifetime in seconds")
            ->default_val(line.token.ttl_s)
            ->check(CLI::Range(std::int64_t{1}, limits::token_ttl_s_max));
        sub->callback([&line, kind] {
            line.token.kind = kind;
            line.action = [&line](const config& cfg) { return token_command(cfg, line.token); };
        });
        return sub;
    };
    add_token_kind("account", "a bet-client token for an account")
        ->add_option("ID", line.token.account_id, "the account")
        ->required()
        ->check(CLI::Range(std::int64_t{1}, int64_max));
    add_token_kind("producer", "a result-feed producer token")
        ->add_option("NAME", line.token.name, "the producer's name")
        ->required();
    // Not required here: the command says what an admin token needs (its operator's name).
    add_token_kind("admin",
                   "an operator token naming its operator (logged with every action taken with it)")
        ->add_option("OPERATOR", line.token.name, "the operator's name, e.g. alice");
}

void add_void_overdue(CLI::App& app, parsed_line& line) {
    void_overdue_options& void_overdue = line.void_overdue;
    CLI::App* void_app = add(app, "void-overdue",
                             "void a market's open bets once their reservation deadline has "
                             "passed; refusals (not_overdue, nothing_to_void, unknown_market, "
                             "conflict) exit 1; prints one JSON line");
    void_app->add_option("--market", void_overdue.market_id, "the market")
        ->required()
        ->check(CLI::Range(std::int64_t{1}, int64_max));
    void_app->add_option("--key", void_overdue.key,
                         "the event's key (a repeat is a duplicate; default "
                         "operator:void-overdue:ID)");
    void_app->add_flag("--force", void_overdue.force, "void before the deadline");
    void_app->add_option("--operator", void_overdue.operator_name, "the operator's name")
        ->default_val(void_overdue.operator_name);
    add_json(void_app, line.void_json, "the output is JSON already (accepted on every command)");
    on_parsed(void_app, line.action,
              [&line](const config& cfg) { return void_overdue_command(cfg, line.void_overdue); });
}

void add_close_gap(CLI::App& app, parsed_line& line) {
    close_gap_options& close_gap = line.close_gap;
    CLI::App* gap_app = add(app, "close-gap",
                            "declare that seqs FROM to THROUGH of a market's feed will never come, "
                            "so the events after them apply; refusals (not_a_gap, conflict, "
                            "unknown_market) exit 1; prints one JSON line");
    gap_app->add_option("--market", close_gap.market_id, "the market")
        ->required()
        ->check(CLI::Range(std::int64_t{1}, int64_max));
    gap_app->add_option("--from", close_gap.from, "the first missing seq")->required();
    gap_app->add_option("--through", close_gap.through, "the last missing seq")->required();
    gap_app->add_option("--key", close_gap.key,
                        "the event's key (a repeat is a duplicate; default "
                        "operator:close-gap:ID:FROM-THROUGH)");
    gap_app->add_option("--operator", close_gap.operator_name, "the operator's name")
        ->default_val(close_gap.operator_name);
    add_json(gap_app, line.close_gap_json,
             "the output is JSON already (accepted on every command)");
    on_parsed(gap_app, line.action,
              [&line](const config& cfg) { return close_gap_command(cfg, line.close_gap); });
}

void add_reconcile(CLI::App& app, parsed_line& line) {
    CLI::App* reconcile = add(app, "reconcile",
                              "run one reconciliation now (ledger against balances, currency "
                              "checks) and print its summary; exit 1 while a balance_drift, "
                              "currency_mismatch or currency_imbalance incident is open");
    add_json(reconcile, line.reconcile_json, "print the summary as JSON");
    on_parsed(reconcile, line.action,
              [&line](const config& cfg) { return reconcile_command(cfg, line.reconcile_json); });
}

void add_audit(CLI::App& app, parsed_line& line) {
    CLI::App* audit = add(app, "audit",
                          "check every money invariant on the database, one PASS/FAIL line each; "
                          "exit 1 when one fails");
    add_json(audit, line.audit_json, "print the invariants as JSON");
    on_parsed(audit, line.action,
              [&line](const config& cfg) { return audit_command(cfg, line.audit_json); });
}

void add_partitions(CLI::App& app, parsed_line& line) {
    CLI::App* partitions = add(app, "partitions",
                               "list the time partitions, a line per period: its state and what "
                               "holds it");
    partitions->add_flag("--keep", line.partitions_keep,
                         "first make the periods ahead, close the periods that are over and drop "
                         "those past retention, as the keeper does");
    add_json(partitions, line.partitions_json, "print the periods as JSON");
    on_parsed(partitions, line.action, [&line](const config& cfg) {
        return partitions_command(cfg, line.partitions_keep, line.partitions_json);
    });
}

void add_project(CLI::App& app, parsed_line& line) {
    CLI::App* project =
        add(app, "project", "run the read model's projector until it caught up with the outbox");
    CLI::Option* rebuild = project->add_flag("--rebuild", line.project_rebuild,
                                             "refill the read model from the write tables");
    project
        ->add_flag("--verify", line.project_verify,
                   "compare the read model with the write tables; exit 1 on a disagreement")
        ->excludes(rebuild);
    add_json(project, line.project_json, "print the result as JSON");
    on_parsed(project, line.action, [&line](const config& cfg) {
        const project_mode mode = line.project_rebuild  ? project_mode::rebuild
                                  : line.project_verify ? project_mode::verify
                                                        : project_mode::catch_up;
        return project_command(cfg, mode, line.project_json);
    });
}

void add_diagnose(CLI::App& app, parsed_line& line) {
    diagnose_options& diagnose = line.diagnose;
    CLI::App* diagnose_app = add(app, "diagnose",
                                 "ask a running engine what holds placement back now: the "
                                 "verdict, its evidence and the newest samples; exit 1 when a "
                                 "mechanism is named, 3 when the engine does not answer");
    diagnose_app->add_option("--url", diagnose.url,
                             "the engine's operators' address, http://HOST:PORT (default: the "
                             "configured listen address)");
    add_json(diagnose_app, diagnose.json, "print the engine's whole answer as JSON");
    diagnose_app->add_option("--samples", diagnose.samples, "how many of the newest samples")
        ->default_val(diagnose.samples)
        ->check(CLI::Range(std::int64_t{1}, int64_max));
    on_parsed(diagnose_app, line.action,
              [&line](const config& cfg) { return diagnose_command(cfg, line.diagnose); });
}

void add_rehearse(CLI::App& app, parsed_line& line) {
    rehearse_options& rehearse = line.rehearse;
    CLI::App* rehearse_app = add(app, "rehearse",
                                 "rehearse a match night: start PostgreSQL (and PgBouncer) and "
                                 "the engine, bet, post a results burst, inject the scenario's "
                                 "faults, then judge its exit criteria (exit 1 when one is not "
                                 "met); writes a JSON report and an SVG plot (docs/rehearsal.md)");
    rehearse_app->add_option("SCENARIO", rehearse.scenario_path, "the scenario, a JSON file")
        ->required();
    rehearse_app->add_option("--out", rehearse.out_dir,
                             "where the report and plot go (default rehearsal-NAME)");
    rehearse_app->add_option("--database-url", rehearse.database_url,
                             "rehearse on this database instead of a PostgreSQL of its own");
    rehearse_app->add_flag("--pgbouncer", rehearse.pgbouncer,
                           "put PgBouncer in between whatever the scenario says");
    rehearse_app->add_flag("--keep", rehearse.keep, "keep the work directory");
    on_parsed(rehearse_app, line.action,
              [&line](const config& cfg) { return rehearse_command(cfg, line.rehearse); });
}

void add_bench(CLI::App& app, parsed_line& line) {
    bench_arguments& bench = line.bench;
    CLI::App* bench_app = add(app, "bench-placement",
                              "drive placements over WebSocket against a running engine and "
                              "print throughput and latency as JSON (see scripts/bench-placement); "
                              "exit 1 when a connection or a request failed");
    // --help shows each option's default, read from `bench` as the options are made.
    bench_app->option_defaults()->always_capture_default();
    bench_app->add_option("--host", bench.host, "the engine's address");
    bench_app->add_option("--port", bench.port, "the engine's port");
    bench_app->add_option("--connections", bench.connections, "WebSocket connections");
    bench_app->add_option("--accounts", bench.accounts,
                          "accounts (connection i uses FIRST + i % M)");
    bench_app->add_option("--first-account", bench.first_account, "the first account");
    bench_app->add_option("--selection", bench.selections, "one selection for every bet");
    bench_app->add_option("--selections", bench.selections, "selections with weights: ID:W,...");
    bench_app->add_option("--stake", bench.stakes, "one stake for every bet");
    bench_app->add_option("--stakes", bench.stakes, "stakes with weights: AMOUNT:W,...");
    bench_app->add_option("--odds", bench.odds, "the odds sent");
    bench_app->add_option("--duration-s", bench.duration_s, "how long to run");
    bench_app->add_option("--warmup-s", bench.warmup_s,
                          "leading seconds left out of latency and rate");
    bench_app->add_option("--rate", bench.rate, "requests/s in total (open loop); 0: closed loop");
    bench_app->add_option("--arrivals", bench.arrivals, "open loop's schedule")
        ->check(CLI::IsMember({"uniform", "poisson"}));
    bench_app->add_option("--inflight", bench.inflight, "outstanding requests per connection");
    bench_app->add_option("--repeat-ratio", bench.repeat_ratio,
                          "share of requests that repeat an earlier one exactly");
    bench_app->add_option("--key-prefix", bench.key_prefix, "idempotency keys' prefix");
    bench_app->add_option("--samples-out", bench.samples_out,
                          "write one line per measured reply to this file: its scheduled (open "
                          "loop) or send time, Unix seconds; its latency, ms; its send lag "
                          "(open loop: how late it left against its schedule), ms; its outcome");
    add_json(bench_app, line.bench_json, "the output is JSON already (accepted on every command)");
    on_parsed(bench_app, line.action,
              [&line](const config& cfg) { return bench_command(cfg, line.bench); });
}

void add_version(CLI::App& app, parsed_line& line) {
    CLI::App* version_app = add(app, "version", "print the version");
    add_json(version_app, line.version_json, "print {\"version\": ...}");
    version_app->callback([&line] { line.version_asked = true; });
}

// Parses the arguments into the tree; returns the exit status when the command line is done
// with (--help, --version, or a usage error, said in one line), nothing when a command runs.
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
    // `fulltime help` as `fulltime --help`, as before CLI11.
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args.front() == "help") {
        args.front() = "--help";
    }
    std::reverse(args.begin(), args.end());  // CLI11 takes a vector in reverse order
    try {
        app.parse(args);
    } catch (const CLI::Success& e) {  // --help, --version
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        const CLI::App* at = reached(app);
        std::string what = e.what();
        // An argument nobody took is the mistake to name, whatever CLI11 found missing first
        // ("A subcommand is required" for `fulltime frobnicate`).
        if (const auto extra = app.remaining(true); !extra.empty()) {
            const bool option = extra.front().rfind('-', 0) == 0;
            what = std::string(option       ? "unknown option '"
                               : at == &app ? "unknown command '"
                                            : "unexpected argument '") +
                   extra.front() + "'";
        }
        // One line naming the subcommand, as every other failure is ("fulltime: ...").
        const std::string path = path_of(at);
        const std::string where = at == &app ? "" : path.substr(app.get_name().size() + 1) + ": ";
        std::fprintf(stderr, "fulltime: %s%s (see %s --help)\n", where.c_str(), what.c_str(),
                     path.c_str());
        return exit_usage;
    }
    return std::nullopt;
}

int print_version(bool json) {
    const std::string v(version);
    if (json) {
        std::printf("%s\n", nlohmann::json{{"version", v}}.dump().c_str());
    } else {
        std::printf("fulltime %s\n", v.c_str());
    }
    return exit_ok;
}

// Loads the configuration from --config, else FULLTIME_CONFIG, and sets up the log with it.
config load_configuration(std::optional<std::string> config_path) {
    auto env = process_environment();
    if (!config_path) {
        if (auto it = env.find("FULLTIME_CONFIG"); it != env.end() && !it->second.empty()) {
            config_path = it->second;
        }
    }
    config cfg = load_config(config_path, env);
    log::set_level(log::parse_level(cfg.log_level));
    log::set_format(log::parse_format(cfg.log_format));
    return cfg;
}

}  // namespace

int run_command_line(int argc, char** argv) {
    CLI::App app{"Fulltime, a sportsbook engine on PostgreSQL.", "fulltime"};
    app.footer(footer);
    app.require_subcommand(1);
    app.set_version_flag("--version", "fulltime " + std::string(version));
    std::optional<std::string> config_path;
    app.add_option("--config", config_path, "configuration file (default: FULLTIME_CONFIG)");

    // The subcommands in the order --help lists them.
    parsed_line line;
    add_serve(app, line);
    add_migrate(app, line);
    add_token(app, line);
    add_void_overdue(app, line);
    add_close_gap(app, line);
    add_reconcile(app, line);
    add_audit(app, line);
    add_partitions(app, line);
    add_project(app, line);
    add_diagnose(app, line);
    add_rehearse(app, line);
    add_bench(app, line);
    add_version(app, line);

    if (const auto done = parse(app, argc, argv)) {
        return *done;
    }
    if (line.version_asked) {
        return print_version(line.version_json);
    }
    const config cfg = load_configuration(config_path);
    return line.action(cfg);
}

}  // namespace fulltime::app
