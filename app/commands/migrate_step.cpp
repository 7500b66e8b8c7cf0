#include "app/commands/migrate_step.hpp"

#include "app/commands/exit_status.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/connection.hpp"
#include "fulltime/db/server_settings.hpp"

#include <nlohmann/json.hpp>

#include <chrono>

namespace fulltime::app {

boost::asio::awaitable<db::outcome<db::migration_report>> apply_migrations(
    boost::asio::any_io_executor executor, std::string conninfo, config cfg) {
    auto conn = co_await db::connection::open(
        executor, conninfo, std::chrono::milliseconds(cfg.database.connect_timeout_ms),
        std::chrono::milliseconds(cfg.database.query_timeout_ms));
    if (!conn) {
        co_return conn.error();
    }
    // The first migrate of a database stores history.period as the length of its time partitions
    // (db/migrations/0005_time_partitions.sql reads the setting); later, the partition keeper
    // stores a changed one.
    auto period = co_await db::set_history_period(**conn, cfg.history.period);
    if (!period) {
        co_return period.error();
    }
    auto report = co_await db::migrate(**conn, resources::migrations(),
                                       cfg.database.migration_lock_timeout_ms);
    if (!report && report.error().code == db::errc::bad_result) {
        // db::migrate refuses a newer schema with bad_result; the status read back tells that
        // refusal from a malformed result without reading the message.
        auto status = co_await db::read_migration_status(**conn, resources::migrations());
        if (status && !status->unknown.empty()) {
            throw refusal(report.error().message);
        }
    }
    if (report) {
        if (report->periods_added > 0) {
            log::info("made " + std::to_string(report->periods_added) +
                      " time partition period(s) ahead");
        }
        for (const auto& name : report->applied) {
            log::info("applied migration " + name);
        }
        for (const auto& name : report->functions_applied) {
            log::info("applied function file " + name);
        }
        log::info("schema up to date (" + std::to_string(report->applied.size()) + " applied, " +
                  std::to_string(report->already_applied) + " already applied; functions: " +
                  std::to_string(report->functions_applied.size()) + " applied, " +
                  std::to_string(report->functions_unchanged) + " unchanged)");
    }
    co_return report;
}

boost::asio::awaitable<std::string> check_server_settings(boost::asio::any_io_executor executor,
                                                          std::string conninfo, config cfg) {
    db::session_options plain;
    plain.application_name = "fulltime-check";
    auto conn = co_await db::connection::open(
        executor, conninfo, std::chrono::milliseconds(cfg.database.connect_timeout_ms),
        std::chrono::milliseconds(cfg.database.query_timeout_ms), true, plain);
    // Not `conn ? co_await ... : ...`: GCC 12 copies the result of a co_await in a conditional
    // operator bitwise, and a std::string in it (the role's name, in its inline buffer) then
    // frees a pointer into the coroutine frame.
    db::outcome<db::server_settings> settings = db::outcome<db::server_settings>(db::failure{});
    if (conn) {
        settings = co_await db::read_server_settings(**conn);
    } else {
        settings = conn.error();
    }
    if (!settings) {
        const std::string why = db::describe(settings.error());
        log::warn("server settings: not checked: " + why);
        co_return nlohmann::json{{"error", why}}.dump();
    }
    const auto& d = cfg.database;
    db::engine_sessions engine{
        d.session_timeouts, d.idle_in_transaction_timeout_ms, d.statement_timeout_ms,
        d.placement.size_max + d.settlement.size_max + d.background.size_max + d.read.size_max};
    const auto warnings = db::judge_server_settings(*settings, engine);
    for (const auto& w : warnings) {
        log::warn("server settings: " + w);
    }
    co_return db::server_settings_json(*settings, warnings);
}

}  // namespace fulltime::app
