// `fulltime migrate`: applies pending migrations and exits. `fulltime migrate --status [--json]`
// changes nothing: it lists the migrations this binary carries as applied or pending, those the
// database records that it does not carry (a newer release's: serve and migrate refuse such a
// database), and the function files not recorded as this binary has them. Exit 0 when nothing
// is pending, 1 when something is (or the schema is newer); 3 when the database could not be
// reached, 4 when reading or applying failed otherwise.

#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/exit_status.hpp"
#include "app/commands/migrate_step.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/connection.hpp"
#include "fulltime/db/migrations.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace fulltime::app {

namespace {

// Takes the two timeouts rather than the config: GCC 12 miscopied a config parameter into
// this coroutine's frame (a std::bad_alloc from a string copied out of the wrong offset).
boost::asio::awaitable<db::outcome<db::migration_status>> read_status(
    boost::asio::any_io_executor executor, std::string conninfo,
    std::chrono::milliseconds connect_timeout, std::chrono::milliseconds query_timeout) {
    auto conn = co_await db::connection::open(executor, conninfo, connect_timeout, query_timeout);
    if (!conn) {
        co_return conn.error();
    }
    auto status = co_await db::read_migration_status(**conn, resources::migrations());
    co_return status;
}

int print_status(const db::migration_status& s, bool as_json) {
    const bool newer = !s.unknown.empty();
    const bool pending = !s.pending.empty() || !s.functions_changed.empty();
    const char* state = newer ? "newer" : pending ? "pending" : "current";
    if (as_json) {
        const nlohmann::json j{{"state", state},
                               {"applied", s.applied},
                               {"pending", s.pending},
                               {"unknown", s.unknown},
                               {"functions_changed", s.functions_changed},
                               {"functions_current", s.functions_current}};
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        for (const auto& name : s.applied) {
            std::printf("applied   %s\n", name.c_str());
        }
        for (const auto& name : s.pending) {
            std::printf("pending   %s\n", name.c_str());
        }
        for (const auto& name : s.unknown) {
            std::printf("unknown   %s (recorded by a newer release)\n", name.c_str());
        }
        for (const auto& name : s.functions_changed) {
            std::printf("function  %s (not recorded as this release has it)\n", name.c_str());
        }
        std::printf(
            "schema %s: %zu applied, %zu pending, %zu unknown; function files %zu "
            "current, %zu to apply\n",
            state, s.applied.size(), s.pending.size(), s.unknown.size(), s.functions_current,
            s.functions_changed.size());
        if (newer) {
            std::printf("this release refuses the database: run the release that migrated it\n");
        } else if (pending) {
            std::printf("`fulltime migrate` (or `fulltime serve`) applies what is pending\n");
        }
    }
    return newer || pending ? 1 : 0;
}

}  // namespace

int migrate_command(const config& cfg, const migrate_options& o) {
    if (o.json && !o.status) {
        throw std::invalid_argument("--json goes with --status");
    }
    // A first `fulltime migrate` may make the private cluster; one a running `fulltime serve`
    // started stays running (migrate --status is what an operator runs beside the service).
    auto target = open_database_target(cfg);
    leave_adopted_cluster_running(target);
    boost::asio::io_context ioc;
    if (o.status) {
        auto done = boost::asio::co_spawn(
            ioc,
            read_status(ioc.get_executor(), target.conninfo,
                        std::chrono::milliseconds(cfg.database.connect_timeout_ms),
                        std::chrono::milliseconds(cfg.database.query_timeout_ms)),
            boost::asio::use_future);
        ioc.run();
        const auto read = done.get();
        if (!read) {
            throw_failure("migrate --status", read.error());
        }
        return print_status(*read, o.json);
    }
    auto done = boost::asio::co_spawn(
        ioc, apply_migrations(ioc.get_executor(), target.conninfo, cfg), boost::asio::use_future);
    ioc.run();
    const auto report = done.get();
    if (!report) {
        throw_failure("migration failed", report.error());
    }
    return 0;
}

}  // namespace fulltime::app
