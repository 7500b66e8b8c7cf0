#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/migrate_step.hpp"

#include "fulltime/core/log.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <stdexcept>

namespace fulltime::app {

int migrate_command(const config& cfg) {
    auto target = open_database_target(cfg);
    boost::asio::io_context ioc;
    auto done = boost::asio::co_spawn(
        ioc, apply_migrations(ioc.get_executor(), target.conninfo, cfg), boost::asio::use_future);
    ioc.run();
    const auto report = done.get();
    if (!report) {
        throw std::runtime_error("migration failed: " + db::describe(report.error()));
    }
    return 0;
}

}  // namespace fulltime::app
