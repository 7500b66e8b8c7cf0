// `fulltime project [--rebuild | --verify] [--json]`: the read model by hand (docs/schema.md,
// "Read model"; docs/architecture.md, "Reads").
//   (none)     runs the projector until it has caught up with the outbox, as `fulltime serve`
//              does every read.projector_interval_ms, and prints how many rows it applied;
//   --rebuild  refills bet_views and market_views from the write tables and puts the
//              projector's cursor at the tail (in one transaction; placements, settlements and
//              a running projector go on meanwhile);
//   --verify   compares the read model with the write tables and prints each disagreement.
// Exit status: 0; 1 when --verify found a disagreement; 3 when the database could not be reached
// or stopped answering; 4 when a statement failed otherwise.

#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/exit_status.hpp"

#include "fulltime/db/pool.hpp"
#include "fulltime/db/projection_statements.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <variant>

namespace fulltime::app {

namespace {

// Pages run by hand before the command gives up catching up (the outbox may be written to as
// fast as it is read while an engine runs; the engine's own projector then goes on).
constexpr int catch_up_pages_max = 100000;

struct caught_up {
    std::int64_t rows = 0;
    std::int64_t pages = 0;
    std::string consumed_below;
    bool reached = false;
};

using project_result =
    std::variant<caught_up, db::rebuild_report, std::vector<db::projection_mismatch>>;

boost::asio::awaitable<db::outcome<project_result>> run_project(db::pool& pool, config cfg,
                                                                project_mode mode) {
    auto conn = co_await pool.acquire();
    if (!conn) {
        co_return conn.error();
    }
    const std::string consumer = cfg.read.projector_consumer;
    if (mode == project_mode::rebuild) {
        auto report = co_await db::rebuild_projection(**conn, consumer);
        if (!report) {
            co_return report.error();
        }
        co_return project_result{std::move(*report)};
    }
    if (mode == project_mode::verify) {
        auto found = co_await db::verify_projection(**conn, consumer);
        if (!found) {
            co_return found.error();
        }
        co_return project_result{std::move(*found)};
    }
    caught_up done;
    while (done.pages < catch_up_pages_max) {
        auto step = co_await db::project_page(
            **conn, consumer, static_cast<std::int64_t>(cfg.read.projector_page_rows_max));
        if (!step) {
            co_return step.error();
        }
        ++done.pages;
        done.rows += step->rows;
        done.consumed_below = step->consumed_below;
        if (step->caught_up) {
            done.reached = true;
            break;
        }
    }
    co_return project_result{std::move(done)};
}

std::string text_or_null(const std::optional<std::string>& s) { return s ? *s : "(none)"; }

}  // namespace

int project_command(const config& cfg, project_mode mode, bool as_json) {
    const auto target = open_command_target(cfg);
    boost::asio::io_context ioc;
    // A rebuild and a check read every bet the write tables keep: the reconciliation's bound.
    db::pool pool(ioc.get_executor(), "project", target.conninfo,
                  pool_settings{1, 1, cfg.database.connect_timeout_ms},
                  std::chrono::milliseconds(cfg.database.connect_timeout_ms),
                  std::chrono::milliseconds(cfg.reconcile.statement_timeout_ms +
                                            cfg.database.query_timeout_ms));
    auto done = boost::asio::co_spawn(ioc, run_project(pool, cfg, mode), boost::asio::use_future);
    ioc.run();
    const auto result = done.get();
    if (!result) {
        throw_failure("project", result.error());
    }
    if (const auto* c = std::get_if<caught_up>(&*result)) {
        if (as_json) {
            std::printf("%s\n", nlohmann::json{{"rows", c->rows},
                                               {"pages", c->pages},
                                               {"caught_up", c->reached},
                                               {"consumed_below", c->consumed_below}}
                                    .dump()
                                    .c_str());
        } else {
            std::printf("applied %lld outbox row(s) in %lld page(s)%s; horizon %s\n",
                        static_cast<long long>(c->rows), static_cast<long long>(c->pages),
                        c->reached ? ", caught up" : ", not caught up yet",
                        c->consumed_below.c_str());
        }
        return 0;
    }
    if (const auto* r = std::get_if<db::rebuild_report>(&*result)) {
        if (as_json) {
            std::printf("%s\n", nlohmann::json{{"bets_projected", r->bets_projected},
                                               {"bets_kept", r->bets_kept},
                                               {"markets", r->markets},
                                               {"consumed_below", r->consumed_below}}
                                    .dump()
                                    .c_str());
        } else {
            std::printf(
                "rebuilt: %lld bet(s) from the write tables, %lld kept past retention, "
                "%lld market summary row(s); horizon %s\n",
                static_cast<long long>(r->bets_projected), static_cast<long long>(r->bets_kept),
                static_cast<long long>(r->markets), r->consumed_below.c_str());
        }
        return 0;
    }
    const auto& found = std::get<std::vector<db::projection_mismatch>>(*result);
    if (as_json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& m : found) {
            list.push_back(
                {{"kind", m.kind},
                 {"bet_id", m.bet_id ? nlohmann::json(*m.bet_id) : nlohmann::json()},
                 {"market_id", m.market_id ? nlohmann::json(*m.market_id) : nlohmann::json()},
                 {"expected", m.expected ? nlohmann::json(*m.expected) : nlohmann::json()},
                 {"actual", m.actual ? nlohmann::json(*m.actual) : nlohmann::json()}});
        }
        std::printf("%s\n", nlohmann::json{{"mismatches", std::move(list)}}.dump().c_str());
    } else if (found.empty()) {
        std::printf("PASS  the read model agrees with the write tables\n");
    } else {
        std::printf("FAIL  %zu disagreement(s)\n", found.size());
        for (const auto& m : found) {
            std::printf("  %s  bet %s  market %s  expected %s  actual %s\n", m.kind.c_str(),
                        m.bet_id ? std::to_string(*m.bet_id).c_str() : "-",
                        m.market_id ? std::to_string(*m.market_id).c_str() : "-",
                        text_or_null(m.expected).c_str(), text_or_null(m.actual).c_str());
        }
    }
    return found.empty() ? 0 : 1;
}

}  // namespace fulltime::app
