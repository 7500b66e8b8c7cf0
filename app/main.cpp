// The `fulltime` binary: parses the command line, loads the configuration, and runs one
// subcommand. Every failure ends here as one line on stderr and a non-zero exit status.

#include "app/commands/commands.hpp"

#include "fulltime/config/config.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/version.hpp"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char* usage_text = R"(usage: fulltime [--config PATH] COMMAND [ARGS]

commands:
  serve                      run the engine (starts a private PostgreSQL when no
                             database URL is configured)
  migrate                    apply pending database migrations and exit
        [--status] [--json]  --status: list applied, pending and unknown (a newer
                             release's) migrations, change nothing; exit 0 current,
                             1 pending or newer (serve refuses a newer schema)
  token account ID           print a bet-client token for account ID
  token producer NAME        print a result-feed producer token
  token admin OPERATOR       print an operator token naming its operator (logged
                             with every action taken with it)
        [--ttl SECONDS]      token lifetime (default 86400)
  void-overdue --market ID   void the market's open bets once their reservation deadline
        [--key KEY]          has passed (a keyed event: a repeat is a duplicate; default
        [--force]            key operator:void-overdue:ID); --force voids before it;
        [--operator NAME]    refusals not_overdue, nothing_to_void, unknown_market exit 1
  reconcile [--json]         run one reconciliation now (ledger against balances, currency
                             checks) and print its summary; exit 1 while a balance_drift,
                             currency_mismatch or currency_imbalance incident is open
  audit [--json]             check every money invariant on the database, one PASS/FAIL
                             line each; exit 0 all pass, 1 one fails, 2 usage/connection
  partitions [--keep]        list the time partitions, a line per period: its state and
        [--json]             what holds it; --keep first makes the periods ahead, closes
                             the periods that are over and drops those past retention
  project [--rebuild]        run the read model's projector until it caught up with the
        [--verify] [--json]  outbox; --rebuild refills it from the write tables, --verify
                             compares it with them (exit 1 on a disagreement)
  diagnose [--url URL]       ask a running engine what holds placement back now: the
        [--json] [--samples N]  verdict, its evidence and the newest samples; exit 0
                             quiet, 1 a mechanism named, 2 the engine did not answer
  rehearse SCENARIO.json     rehearse a match night: start PostgreSQL (and PgBouncer)
        [--out DIR]          and the engine, bet, post a results burst, inject the
        [--database-url URL] scenario's faults, then judge its exit criteria; writes a
        [--pgbouncer]        JSON report and an SVG plot; exit 0 all met, 1 one not,
        [--keep]             2 could not run (docs/rehearsal.md)
  bench-placement [OPTIONS]  drive placements over WebSocket against a running engine
                             and print throughput and latency (see scripts/bench-placement)
  version                    print the version

Configuration: config/fulltime.json holds the defaults; --config PATH (or FULLTIME_CONFIG)
overrides them, FULLTIME_* variables override both. See docs/config.md.
)";

}  // namespace

int main(int argc, char** argv) {
    std::optional<std::string> config_path;
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--config") {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "fulltime: --config needs a path\n");
                return 2;
            }
            config_path = argv[++i];
        } else if (arg.rfind("--config=", 0) == 0) {
            config_path = arg.substr(9);
        } else {
            args.push_back(arg);
        }
    }
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
        std::fputs(usage_text, args.empty() ? stderr : stdout);
        return args.empty() ? 2 : 0;
    }
    const std::string command = args[0];
    args.erase(args.begin());
    if (command == "version" || command == "--version") {
        std::printf("fulltime %.*s\n", static_cast<int>(fulltime::version.size()),
                    fulltime::version.data());
        return 0;
    }

    try {
        auto env = fulltime::process_environment();
        if (!config_path) {
            if (auto it = env.find("FULLTIME_CONFIG"); it != env.end() && !it->second.empty()) {
                config_path = it->second;
            }
        }
        const fulltime::config cfg = fulltime::load_config(config_path, env);
        fulltime::log::set_level(fulltime::log::parse_level(cfg.log_level));
        fulltime::log::set_format(fulltime::log::parse_format(cfg.log_format));
        if (command == "serve" && args.empty()) {
            return fulltime::app::serve_command(cfg);
        }
        if (command == "migrate") {
            return fulltime::app::migrate_command(cfg, args);
        }
        if (command == "token") {
            return fulltime::app::token_command(cfg, args);
        }
        if (command == "void-overdue") {
            return fulltime::app::void_overdue_command(cfg, args);
        }
        if (command == "reconcile") {
            return fulltime::app::reconcile_command(cfg, args);
        }
        if (command == "audit") {
            return fulltime::app::audit_command(cfg, args);
        }
        if (command == "partitions") {
            return fulltime::app::partitions_command(cfg, args);
        }
        if (command == "project") {
            return fulltime::app::project_command(cfg, args);
        }
        if (command == "diagnose") {
            return fulltime::app::diagnose_command(cfg, args);
        }
        if (command == "rehearse") {
            return fulltime::app::rehearse_command(cfg, args);
        }
        if (command == "bench-placement") {
            return fulltime::app::bench_command(cfg, args);
        }
        std::fprintf(stderr, "fulltime: unknown command '%s' (try fulltime help)\n",
                     (command + (args.empty() ? "" : " " + args[0])).c_str());
        return 2;
    } catch (const fulltime::config_error& e) {
        std::fprintf(stderr, "fulltime: %s\n", e.what());
        return 2;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "fulltime: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fulltime: %s\n", e.what());
        return 1;
    }
}
