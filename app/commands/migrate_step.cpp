#include "app/commands/migrate_step.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/connection.hpp"

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
    auto report = co_await db::migrate(**conn, resources::migrations());
    if (report) {
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

}  // namespace fulltime::app
