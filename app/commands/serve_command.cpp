#include "app/commands/commands.hpp"
#include "app/commands/database_target.hpp"
#include "app/commands/event_loops.hpp"
#include "app/commands/exit_status.hpp"
#include "app/commands/migrate_step.hpp"
#include "app/commands/secret.hpp"
#include "app/commands/systemd.hpp"

#include "fulltime/actors/partition_keeper.hpp"
#include "fulltime/actors/peak_sampler.hpp"
#include "fulltime/actors/placement.hpp"
#include "fulltime/actors/projector.hpp"
#include "fulltime/actors/reconciliation.hpp"
#include "fulltime/actors/reservation_sweeper.hpp"
#include "fulltime/actors/runtime.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/core/fd_limit.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/process_metrics.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/read_router.hpp"
#include "fulltime/limits.hpp"
#include "fulltime/net/bets_endpoint.hpp"
#include "fulltime/net/diagnostics_routes.hpp"
#include "fulltime/net/feed_endpoint.hpp"
#include "fulltime/net/market_routes.hpp"
#include "fulltime/net/operator_routes.hpp"
#include "fulltime/net/read_metrics.hpp"
#include "fulltime/net/reconciliation_routes.hpp"
#include "fulltime/net/server.hpp"
#include "fulltime/net/settlement_pushes.hpp"
#include "fulltime/version.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>

namespace fulltime::app {

namespace {

// Waits for SIGINT/SIGTERM, then drains: the gateway first (in-flight requests still need the
// actors and pools), then the placement actors (they release their connections), then the
// pools. A second signal during the drain stops the event loop at once.
boost::asio::awaitable<void> watch_signals(
    boost::asio::io_context& ioc, boost::asio::signal_set& signals,
    boost::asio::signal_set& hangups, net::server& gateway, actors::placement_service& placement,
    actors::settlement_service& settlement, actors::reservation_sweeper& sweeper,
    actors::partition_keeper* keeper, actors::reconciliation_service& reconciliation,
    actors::peak_sampler& sampler, std::shared_ptr<bool> pushes_stop,
    std::shared_ptr<std::atomic<bool>> reads_stop, db::pools& pools, std::int64_t deadline_ms) {
    auto [ec, signal_number] =
        co_await signals.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    if (ec) {
        co_return;
    }
    log::info(std::string("received ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
              ": draining for at most " + std::to_string(deadline_ms) + " ms");
    systemd::notify("STOPPING=1\nSTATUS=draining");
    signals.async_wait([&ioc](const boost::system::error_code& again, int) {
        if (!again) {
            log::warn("second signal: stopping now without draining");
            ioc.stop();
        }
    });
    // A POST /v1/reconcile waiting for a long run is answered `shutting_down` at once instead
    // of holding the drain; the run itself ends at its next step.
    reconciliation.stop();
    co_await gateway.shutdown(std::chrono::milliseconds(deadline_ms));
    placement.stop();
    settlement.stop();
    sweeper.stop();
    if (keeper != nullptr) {
        keeper->stop();
    }
    sampler.stop();
    *pushes_stop = true;
    reads_stop->store(true);
    pools.close();
    signals.cancel();
    hangups.cancel();
}

// SIGHUP is logged and ignored: the engine writes its log to stderr (a terminal, a file the
// caller opened, or journald), so there is nothing to reopen, and its configuration is read once
// at start. Until this runs (migrations at start) it is ignored outright.
void watch_hangups(boost::asio::signal_set& hangups) {
    hangups.async_wait([&hangups](const boost::system::error_code& ec, int) {
        if (ec) {
            return;
        }
        log::info("received SIGHUP: ignored (logs go to stderr; restart to change the config)");
        watch_hangups(hangups);
    });
}

// Descriptors the engine holds besides its client connections: every pool at its largest, the
// readiness check's connection, the refusals under way and its own (limits::fds_reserved).
std::size_t reserved_descriptors(const config& cfg) {
    const auto& p = cfg.database;
    return p.placement.size_max + p.settlement.size_max + p.read.size_max +
           (p.read_url.empty() ? 0 : p.standby.size_max) + p.background.size_max + 1 +
           limits::refusals_max + limits::fds_reserved;
}

// Raises the soft descriptor limit to the hard one, and lowers gateway.connections_max to what
// the hard one holds, with a line saying so; throws config_error when not one connection fits.
void fit_descriptor_limit(config& cfg) {
    const auto plan =
        process::raise_fd_limit(cfg.gateway.connections_max, reserved_descriptors(cfg));
    const auto numbers =
        "(soft " + std::to_string(plan.soft_before) + ", hard " +
        (plan.hard == std::numeric_limits<std::uint64_t>::max() ? std::string("unlimited")
                                                                : std::to_string(plan.hard)) +
        "; " + std::to_string(plan.reserved) + " reserved for the pools, refusals and the engine)";
    if (plan.connections_max == 0) {
        throw config_error("the descriptor limit " + std::to_string(plan.soft) +
                           " cannot hold even one connection " + numbers +
                           ": raise LimitNOFILE= or ulimit -n");
    }
    if (plan.soft != plan.soft_before) {
        log::info("descriptor limit raised from " + std::to_string(plan.soft_before) + " to " +
                  std::to_string(plan.soft));
    }
    if (plan.lowered()) {
        log::warn("descriptor limit " + std::to_string(plan.soft) +
                  " cannot hold gateway.connections_max " +
                  std::to_string(plan.connections_max_configured) + " " + numbers +
                  ": serving at most " + std::to_string(plan.connections_max) +
                  " connections; raise LimitNOFILE= or ulimit -Hn");
    }
    cfg.gateway.connections_max = plan.connections_max;
}

}  // namespace

int serve_command(const config& given) {
    // A copy: gateway.connections_max may be lowered to what the descriptor limit holds.
    config cfg = given;
    fit_descriptor_limit(cfg);
    std::signal(SIGHUP, SIG_IGN);
    systemd::take_notify_socket();
    systemd::require_absolute_state_dir(cfg);
    token::keyring token_keys = load_token_keyring(cfg);
    if (!token_keys.previous.empty()) {
        // Said at every start while the rollover lasts, so that a previous secret left
        // configured long after it is needed shows in the log (and in /metrics).
        log::info(
            "token secret rollover: tokens signed with the previous secret are still accepted "
            "(fulltime_tokens_verified_total{key=\"previous\"} counts them)");
    }
    database_target target = open_database_target(cfg);

    // gateway.io_threads event loops. Connections are spread over them, and each has its own
    // placement actors and placement connections, so a bet stays on one thread from its frame
    // to its reply. The main loop (loop 0) also runs the other pools and services, which are
    // single-executor; requests that need them hop there (net/ws_session.cpp).
    event_loops loops(cfg.gateway.io_threads);
    boost::asio::io_context& ioc = loops.main();
    {
        auto migrated =
            boost::asio::co_spawn(ioc, apply_migrations(ioc.get_executor(), target.conninfo, cfg),
                                  boost::asio::use_future);
        ioc.run();
        ioc.restart();
        const auto report = migrated.get();
        if (!report) {
            throw_failure("migration failed", report.error());
        }
    }
    std::string server_settings;
    {
        auto checked = boost::asio::co_spawn(
            ioc, check_server_settings(ioc.get_executor(), target.conninfo, cfg),
            boost::asio::use_future);
        ioc.run();
        ioc.restart();
        server_settings = checked.get();
    }

    metrics::registry registry;
    metrics::add_process_metrics(registry, fulltime::version);
    const auto executors = loops.executors();
    db::pools pools = db::pools::make(executors, cfg.database, target.conninfo,
                                      target.standby_conninfo, cfg.placement.synchronous_commit);
    actors::runtime actor_runtime(cfg.actors);
    actors::placement_metrics placement_metrics(registry);
    std::vector<actors::placement_loop> placement_loops;
    for (std::size_t i = 0; i < executors.size(); ++i) {
        placement_loops.push_back({loops.all()[i], pools.placement[i].get()});
    }
    actors::placement_service placement(actor_runtime.system(), std::move(placement_loops),
                                        ioc.get_executor(), *pools.background, cfg,
                                        placement_metrics);

    actors::settlement_metrics settlement_metrics(registry);
    actors::settlement_service settlement(actor_runtime.system(), ioc.get_executor(),
                                          *pools.settlement, *pools.background, cfg,
                                          settlement_metrics, &placement_metrics.recent);
    actors::reservation_metrics reservation_metrics(registry);
    actors::reservation_sweeper sweeper(actor_runtime.system(), ioc.get_executor(),
                                        *pools.background, cfg, reservation_metrics);
    actors::history_metrics history_metrics(registry);
    std::optional<actors::partition_keeper> keeper;
    if (cfg.history.keeper_interval_ms > 0) {
        keeper.emplace(actor_runtime.system(), ioc.get_executor(), *pools.background, cfg,
                       history_metrics);
    }
    actors::reconciliation_metrics reconciliation_metrics(registry);
    actors::reconciliation_service reconciliation(actor_runtime.system(), ioc.get_executor(),
                                                  *pools.background, cfg, reconciliation_metrics);
    actors::peak_sampler sampler(actor_runtime.system(), ioc.get_executor(), pools, cfg,
                                 placement_metrics, settlement_metrics, registry);

    net::services services;
    services.cfg = &cfg;
    services.pools = &pools;
    services.readiness_conninfo = target.conninfo;
    services.placement_opened = [&placement] { return placement.opened(); };
    services.metrics = &registry;
    services.token_keys = std::move(token_keys);
    services.migrations = resources::migrations();
    // Reads: the primary's read pool, and the standby's when database.read_url is set.
    db::read_router reads(*pools.read, pools.standby.get(),
                          {std::chrono::milliseconds(cfg.read.sample_interval_ms),
                           std::chrono::milliseconds(cfg.read.ryw_wait_ms)});
    net::add_read_metrics(registry, reads);
    auto& reads_behind = registry.make_counter(
        "fulltime_reads_behind_own_write_total",
        "bets reads answered from the write tables because the read model had not yet caught up "
        "with the account's own placement within read.ryw_wait_ms, or while the projector "
        "yielded to a settlement.");
    actors::projector_metrics projector_metrics(registry);
    net::add_bets_handlers(
        services.bets,
        {&placement, &placement_metrics, &reads, cfg.read, &reads_behind,
         cfg.read.projector_interval_ms > 0 ? &projector_metrics.yielding : nullptr});
    // A stored result event wakes its market's settlement actor at once (the periodic scan is
    // the safety net).
    auto feed = net::make_feed_endpoint(
        cfg, pools, registry, [&settlement](std::int64_t market) { settlement.notify(market); });
    services.feed = std::move(feed.handlers);
    services.routes = std::move(feed.routes);
    std::ranges::move(net::make_operator_routes(cfg, pools, registry),
                      std::back_inserter(services.routes));
    std::ranges::move(
        net::make_diagnostics_routes(
            pools, [&settlement_metrics] { return settlement_metrics.governor_json(); },
            std::move(server_settings), sampler.history(),
            [&reads] { return net::read_state_json(reads); }),
        std::back_inserter(services.routes));
    std::ranges::move(net::make_reconciliation_routes(pools, reconciliation),
                      std::back_inserter(services.routes));
    std::ranges::move(
        net::make_market_routes(cfg, pools, reads,
                                [&settlement](std::int64_t market) { settlement.notify(market); }),
        std::back_inserter(services.routes));
    services.loops = loops.all();
    net::server gateway(ioc, std::move(services));
    gateway.start();
    loops.start();
    log::info("listening on http://" + cfg.gateway.host + ":" + std::to_string(gateway.port()));
    if (const auto admin = gateway.admin_port()) {
        // The operators' routes (/metrics, /dashboard, the feed, the operator API) are there
        // and no longer on the bettors' port.
        log::info("operator routes on http://" + *cfg.gateway.admin_host + ":" +
                  std::to_string(*admin));
    }

    auto pushes_stop = std::make_shared<bool>(false);
    net::push_settings push_settings{
        std::chrono::milliseconds(cfg.settlement.push_interval_ms), cfg.settlement.push_consumer,
        std::chrono::milliseconds(cfg.settlement.outbox_purge_interval_ms),
        static_cast<std::int64_t>(cfg.settlement.outbox_purge_batch_max)};
    boost::asio::co_spawn(
        ioc,
        net::run_settlement_pushes(*pools.background, gateway.connections(), registry,
                                   std::move(push_settings), pushes_stop),
        boost::asio::detached);

    // The read side's loops: the router's sampler when there is a standby to date (without
    // one every read goes to the primary and nothing needs the primary's position), and the
    // projector unless this engine runs none (read.projector_interval_ms = 0: another process
    // projects). Both stop with the pushes.
    auto reads_stop = std::make_shared<std::atomic<bool>>(false);
    if (reads.has_standby()) {
        boost::asio::co_spawn(ioc, reads.sample(reads_stop), boost::asio::detached);
    }
    if (cfg.read.projector_interval_ms > 0) {
        boost::asio::co_spawn(
            ioc,
            actors::run_projector(
                *pools.background, cfg.read, projector_metrics, reads_stop,
                [&settlement_metrics] { return settlement_metrics.batches_running.value() > 0; }),
            boost::asio::detached);
    }

    boost::asio::signal_set hangups(ioc, SIGHUP);
    watch_hangups(hangups);
    boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
    boost::asio::co_spawn(
        ioc,
        watch_signals(ioc, signals, hangups, gateway, placement, settlement, sweeper,
                      keeper ? &*keeper : nullptr, reconciliation, sampler, pushes_stop, reads_stop,
                      pools, cfg.gateway.shutdown_deadline_ms),
        boost::asio::detached);
    // Ready: the gateway accepts, the actors run and the schema is current (/readyz answers 200
    // once the database answers and the placement actors have opened their connections;
    // docs/operations.md).
    systemd::notify("READY=1\nSTATUS=serving");
    ioc.run();

    // After a second signal the main loop stopped mid-drain: nothing runs on it any more, so
    // this thread may release what the drain did not (the other loops' parts are posted there).
    placement.stop();
    settlement.stop();
    sweeper.stop();
    if (keeper) {
        keeper->stop();
    }
    reconciliation.stop();
    sampler.stop();

    // The other loops end once their sessions, groups and connections are gone; a loop still
    // busy after the shutdown deadline is stopped.
    loops.finish(std::chrono::milliseconds(cfg.gateway.shutdown_deadline_ms));
    actor_runtime.shutdown();
    if (target.cluster) {
        target.cluster->stop();
    }
    log::info("stopped");
    return 0;
}

}  // namespace fulltime::app
