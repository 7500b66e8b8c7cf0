// `fulltime reconcile [--json]`: one reconciliation run against the configured database, with
// the actor's own code (actors::reconcile_once) and SQL, then its summary. Exit status: 0 when
// the run finished and no balance_drift, currency_mismatch or currency_imbalance incident is
// open, 1 when one is; a run that could not be made throws (3 unreachable, 4 failed).

#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/exit_status.hpp"

#include "fulltime/actors/reconciliation.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/db/pool.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdio>
#include <exception>
#include <stdexcept>

namespace fulltime::app {

namespace {

void print_summary(const actors::reconcile_summary& s) {
    std::printf(
        "reconciled %lld accounts in %lld chunks and %lld transfers in %lld chunks "
        "in %lld ms\n",
        static_cast<long long>(s.accounts_checked), static_cast<long long>(s.chunks),
        static_cast<long long>(s.transfers_checked), static_cast<long long>(s.transfer_chunks),
        static_cast<long long>(s.duration_ms));
    std::printf("found %lld balance drifts and %lld currency mismatches\n",
                static_cast<long long>(s.drifts), static_cast<long long>(s.mismatches));
    std::printf("incidents: %lld opened, %lld seen again, %lld resolved\n",
                static_cast<long long>(s.incidents_opened),
                static_cast<long long>(s.incidents_seen_again),
                static_cast<long long>(s.incidents_resolved));
    for (const auto& c : s.currencies) {
        std::printf("currency %s: %lld accounts, imbalance %s\n", c.code.c_str(),
                    static_cast<long long>(c.accounts),
                    money::format_amount(c.imbalance_minor, c.code).c_str());
    }
    for (const auto& [kind, count] : s.incidents_open) {
        std::printf("open %s: %lld\n", kind.c_str(), static_cast<long long>(count));
    }
}

}  // namespace

int reconcile_command(const config& cfg, bool as_json) {
    const auto target = open_command_target(cfg);

    const auto settings = actors::reconcile_run_settings::from(cfg);
    boost::asio::io_context ioc;
    db::pool pool(ioc.get_executor(), "reconcile", target.conninfo,
                  pool_settings{1, 1, cfg.database.connect_timeout_ms},
                  std::chrono::milliseconds(cfg.database.connect_timeout_ms),
                  settings.query_timeout);
    auto done =
        boost::asio::co_spawn(ioc, actors::reconcile_once(pool, settings), boost::asio::use_future);
    ioc.run();
    const auto run = done.get();
    if (!run) {
        throw_failure("the reconciliation failed", run.error());
    }
    if (as_json) {
        std::printf("%s\n", actors::to_json(*run).c_str());
    } else {
        print_summary(*run);
    }
    return run->reconciliation_incidents_open() > 0 ? 1 : 0;
}

}  // namespace fulltime::app
