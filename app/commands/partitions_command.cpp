// `fulltime partitions [--keep] [--json]`: the time partitions (docs/schema.md, "Time
// partitions"), one line per period not dropped yet, oldest first:
//   <start> .. <end>  <state>  <bets>  <size>  <what holds it>
// state: open (not ended), ended (not closed yet), closed, dropping (a drop began). A period
// whose holds are empty leaves at the keeper's next round. --keep first runs one keeper round
// (the periods ahead, closing, retention) as `fulltime serve` does every
// history.keeper_interval_ms. Exit status: 0; 4 when the --keep round failed (what it did stays
// done: an error, not a domain "no"); reading the partitions throws when it fails (3 the database
// could not be reached, 4 otherwise).

#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/exit_status.hpp"

#include "fulltime/actors/partition_keeper.hpp"
#include "fulltime/db/history_statements.hpp"
#include "fulltime/db/pool.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>
#include <optional>

namespace fulltime::app {

namespace {

struct partitions_report {
    std::optional<actors::keeper_report> kept;
    db::outcome<std::vector<db::history_period>> periods = db::failure{};
};

boost::asio::awaitable<partitions_report> run_partitions(db::pool& pool, config cfg, bool keep) {
    partitions_report report;
    if (keep) {
        report.kept = co_await actors::keep_history(pool, cfg.history);
    }
    auto conn = co_await pool.acquire();
    if (!conn) {
        report.periods = conn.error();
        co_return report;
    }
    report.periods = co_await db::list_periods(**conn, cfg.history);
    co_return report;
}

std::string state_of(const db::history_period& p) {
    if (p.dropping) {
        return "dropping";
    }
    if (p.closed_at) {
        return "closed";
    }
    for (const auto& h : p.holds) {
        if (h == "open") {
            return "open";
        }
    }
    return "ended";
}

std::string megabytes(std::int64_t bytes) {
    char out[32];
    std::snprintf(out, sizeof out, "%.1f MB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return out;
}

// The holds, with the counts of those that have one.
std::string holds_text(const db::history_period& p) {
    if (p.holds.empty()) {
        return "nothing holds it: it leaves at the next round";
    }
    std::string out;
    for (const auto& h : p.holds) {
        std::optional<std::int64_t> n;
        if (h == "open_bets") {
            n = p.open_bets;
        } else if (h == "unsettled_markets") {
            n = p.unsettled_markets;
        } else if (h == "unconsumed_outbox") {
            n = p.unconsumed_outbox;
        }
        out += (out.empty() ? "" : ", ") + h + (n ? " (" + std::to_string(*n) + ")" : "");
    }
    return out;
}

nlohmann::json to_json(const db::history_period& p) {
    auto optional = [](const std::optional<std::int64_t>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json();
    };
    return {{"period_start", p.period_start},
            {"period_end", p.period_end},
            {"state", state_of(p)},
            {"closed_at", p.closed_at ? nlohmann::json(*p.closed_at) : nlohmann::json()},
            {"holds", p.holds},
            {"open_bets", optional(p.open_bets)},
            {"unsettled_markets", optional(p.unsettled_markets)},
            {"unconsumed_outbox", optional(p.unconsumed_outbox)},
            {"bets_estimate", p.bets},
            {"bytes", p.bytes}};
}

}  // namespace

int partitions_command(const config& cfg, bool keep, bool as_json) {
    const auto target = open_command_target(cfg);

    boost::asio::io_context ioc;
    db::pool pool(ioc.get_executor(), "partitions", target.conninfo,
                  pool_settings{1, 1, cfg.database.connect_timeout_ms},
                  std::chrono::milliseconds(cfg.database.connect_timeout_ms),
                  std::chrono::milliseconds(cfg.history.statement_timeout_ms +
                                            cfg.database.query_timeout_ms));
    auto done =
        boost::asio::co_spawn(ioc, run_partitions(pool, cfg, keep), boost::asio::use_future);
    ioc.run();
    const auto report = done.get();
    if (!report.periods) {
        throw_failure("reading the partitions failed", report.periods.error());
    }
    const bool kept_ok = !report.kept || report.kept->ok;
    if (report.kept && !report.kept->ok) {
        std::fprintf(stderr, "fulltime: the keeper round failed: %s\n", report.kept->error.c_str());
    }
    if (as_json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& p : *report.periods) {
            list.push_back(to_json(p));
        }
        nlohmann::json out = {{"period", cfg.history.period},
                              {"retention", cfg.history.retention},
                              {"periods", std::move(list)}};
        if (report.kept) {
            out["kept"] = {{"ok", report.kept->ok},
                           {"added", report.kept->added},
                           {"closed", report.kept->closed},
                           {"dropped", report.kept->dropped}};
        }
        std::printf("%s\n", out.dump().c_str());
    } else {
        if (report.kept) {
            std::printf("keeper round: %lld period(s) added, %zu closed, %zu dropped\n",
                        static_cast<long long>(report.kept->added), report.kept->closed.size(),
                        report.kept->dropped.size());
        }
        for (const auto& p : *report.periods) {
            std::printf("%s .. %s  %-8s  %lld bets  %s  %s\n", p.period_start.c_str(),
                        p.period_end.c_str(), state_of(p).c_str(), static_cast<long long>(p.bets),
                        megabytes(p.bytes).c_str(), holds_text(p).c_str());
        }
    }
    return kept_ok ? exit_ok : exit_failed;
}

}  // namespace fulltime::app
