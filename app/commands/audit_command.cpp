// `fulltime audit [--json]`: every money invariant (db/audit_statements.cpp, the one definition
// the tests use too) checked on the configured database, one line each:
//   PASS  <invariant>  (0 violations)
//   FAIL  <invariant>  (<n> violations)  <a few of them>
// Each check is one read-only statement in its own read-only transaction: no row lock, no
// write; some read a whole table. The last line is the read model against the write tables
// (fulltime_project_verify, in a REPEATABLE READ READ ONLY transaction of its own: docs/schema.md,
// "Read model"), counted as one more invariant. Exit status: 0 when every invariant holds, 1 when
// one does not, 3 when the database could not be reached or stopped answering, 4 when a check
// failed otherwise (its invariant is then neither PASS nor FAIL).

#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/exit_status.hpp"

#include "fulltime/db/audit_statements.hpp"
#include "fulltime/db/connection.hpp"
#include "fulltime/db/projection_statements.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>
#include <optional>

namespace fulltime::app {

namespace {

// The read model's line: its finding comes from db::verify_projection, not from one statement.
constexpr db::audit_invariant read_model_agrees{
    "read_model_agrees",
    "bet_views and market_views show what the write tables hold, but for the bets the projector "
    "has not reached yet (fulltime project --verify)",
    ""};

// Up to this many disagreements are named in the line's sample.
constexpr std::size_t read_model_sample_max = 3;

db::audit_finding read_model_finding(const std::vector<db::projection_mismatch>& found) {
    db::audit_finding f;
    f.violations = static_cast<std::int64_t>(found.size());
    for (std::size_t i = 0; i < found.size() && i < read_model_sample_max; ++i) {
        const auto& m = found[i];
        f.sample += (i == 0 ? "" : "; ") + m.kind +
                    (m.bet_id ? " bet " + std::to_string(*m.bet_id) : "") +
                    (m.market_id ? " market " + std::to_string(*m.market_id) : "");
    }
    return f;
}

struct audit_line {
    const db::audit_invariant* invariant = nullptr;
    db::outcome<db::audit_finding> finding = db::failure{};
};

struct audit_report {
    std::optional<db::failure> connect_failure;
    std::vector<audit_line> lines;
};

boost::asio::awaitable<audit_report> run_audit(boost::asio::any_io_executor executor,
                                               std::string conninfo, config cfg) {
    audit_report report;
    auto conn = co_await db::connection::open(
        executor, conninfo, std::chrono::milliseconds(cfg.database.connect_timeout_ms),
        std::chrono::milliseconds(cfg.reconcile.statement_timeout_ms +
                                  cfg.database.query_timeout_ms));
    if (!conn) {
        report.connect_failure = conn.error();
        co_return report;
    }
    for (const auto& invariant : db::audit_invariants()) {
        audit_line line;
        line.invariant = &invariant;
        line.finding =
            co_await db::check_invariant(**conn, invariant, cfg.reconcile.statement_timeout_ms);
        const bool broken = !line.finding && (*conn)->broken();
        report.lines.push_back(std::move(line));
        if (broken) {
            break;  // the rest cannot run on this connection
        }
    }
    if (report.lines.size() == db::audit_invariants().size()) {
        audit_line line;
        line.invariant = &read_model_agrees;
        auto found = co_await db::verify_projection(**conn, cfg.read.projector_consumer);
        line.finding = found ? db::outcome<db::audit_finding>(read_model_finding(*found))
                             : db::outcome<db::audit_finding>(found.error());
        report.lines.push_back(std::move(line));
    }
    co_return report;
}

}  // namespace

int audit_command(const config& cfg, bool as_json) {
    const auto target = open_command_target(cfg);

    boost::asio::io_context ioc;
    auto done = boost::asio::co_spawn(ioc, run_audit(ioc.get_executor(), target.conninfo, cfg),
                                      boost::asio::use_future);
    ioc.run();
    const audit_report report = done.get();
    if (report.connect_failure) {
        throw_failure("cannot reach the database", *report.connect_failure);
    }

    int failed = 0;
    int errors = 0;
    int status_of_errors = exit_failed;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& line : report.lines) {
        const std::string name(line.invariant->name);
        if (!line.finding) {
            ++errors;
            // A check cut off by a lost connection makes the run "unreachable": ask again later.
            if (exit_status_of(line.finding.error()) == exit_unreachable) {
                status_of_errors = exit_unreachable;
            }
            std::fprintf(stderr, "fulltime: checking %s failed: %s\n", name.c_str(),
                         db::describe(line.finding.error()).c_str());
            continue;
        }
        const auto& f = *line.finding;
        const bool passed = f.violations == 0;
        failed += passed ? 0 : 1;
        if (as_json) {
            list.push_back({{"name", name},
                            {"description", std::string(line.invariant->description)},
                            {"passed", passed},
                            {"violations", f.violations},
                            {"sample", f.sample}});
        } else {
            std::printf("%s  %s  (%lld violations)%s%s\n", passed ? "PASS" : "FAIL", name.c_str(),
                        static_cast<long long>(f.violations), f.sample.empty() ? "" : "  ",
                        f.sample.c_str());
        }
    }
    const std::size_t invariants = db::audit_invariants().size() + 1;
    if (errors > 0 || report.lines.size() != invariants) {
        return status_of_errors;
    }
    if (as_json) {
        std::printf("%s\n", nlohmann::json{{"passed", failed == 0}, {"invariants", std::move(list)}}
                                .dump()
                                .c_str());
    } else {
        std::printf("audit: %d of %zu invariants broken\n", failed, invariants);
    }
    return failed == 0 ? 0 : 1;
}

}  // namespace fulltime::app
