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

// The configuration as served: a copy of the given one, since gateway.connections_max may be
// lowered to what the descriptor limit holds. SIGHUP is ignored until watch_hangups runs.
config serving_config(const config& given) {
    config cfg = given;
    fit_descriptor_limit(cfg);
    std::signal(SIGHUP, SIG_IGN);
    systemd::take_notify_socket();
    systemd::require_absolute_state_dir(cfg);
    return cfg;
}

// The secrets tokens are verified against; throws as load_token_keyring does.
token::keyring load_secret(const config& cfg) {
    token::keyring token_keys = load_token_keyring(cfg);
    if (!token_keys.previous.empty()) {
        // Said at every start while the rollover lasts, so that a previous secret left
        // configured long after it is needed shows in the log (and in /metrics).
        log::info(
            "token secret rollover: tokens signed with the previous secret are still accepted "
            "(fulltime_tokens_verified_total{key=\"previous\"} counts them)");
    }
    return token_keys;
}

// Applies the migrations on the main loop before anything else runs there; throws on failure.
void migrate(boost::asio::io_context& ioc, const database_target& target, const config& cfg) {
    auto migrated = boost::asio::co_spawn(
        ioc, apply_migrations(ioc.get_executor(), target.conninfo, cfg), boost::asio::use_future);
    ioc.run();
    ioc.restart();
    const auto report = migrated.get();
    if (!report) {
        throw_failure("migration failed", report.error());
    }
}

// Checks the server's settings on the main loop; returns them for the diagnostics routes.
std::string check_settings(boost::asio::io_context& ioc, const database_target& target,
                           const config& cfg) {
    auto checked =
        boost::asio::co_spawn(ioc, check_server_settings(ioc.get_executor(), target.conninfo, cfg),
                              boost::asio::use_future);
    ioc.run();
    ioc.restart();
    return checked.get();
}

// One placement loop per event loop, each with that loop's placement pool.
std::vector<actors::placement_loop> placement_loops(const event_loops& loops, db::pools& pools) {
    std::vector<actors::placement_loop> placed;
    const auto all = loops.all();
    for (std::size_t i = 0; i < all.size(); ++i) {
        placed.push_back({all[i], pools.placement[i].get()});
    }
    return placed;
}

// The history keeper, unless history.keeper_interval_ms = 0. Built in place (a prvalue), since
// a keeper does not move.
std::optional<actors::partition_keeper> make_keeper(actors::runtime& runtime,
                                                    boost::asio::io_context& ioc, db::pools& pools,
                                                    const config& cfg,
                                                    actors::history_metrics& metrics) {
    if (cfg.history.keeper_interval_ms > 0) {
        return std::optional<actors::partition_keeper>(
            std::in_place, runtime.system(), ioc.get_executor(), *pools.background, cfg, metrics);
    }
    return std::nullopt;
}

// The engine's actors and their metrics, declared in the order they start (and register their
// metrics), so that they are destroyed in the reverse one, as the locals they replace were.
struct serve_actors {
    serve_actors(actors::runtime& runtime, event_loops& loops, db::pools& pools, const config& cfg,
                 metrics::registry& registry)
        : placement_metrics(registry),
          placement(runtime.system(), placement_loops(loops, pools), loops.main().get_executor(),
                    *pools.background, cfg, placement_metrics),
          settlement_metrics(registry),
          settlement(runtime.system(), loops.main().get_executor(), *pools.settlement,
                     *pools.background, cfg, settlement_metrics, &placement_metrics.recent),
          reservation_metrics(registry),
          sweeper(runtime.system(), loops.main().get_executor(), *pools.background, cfg,
                  reservation_metrics),
          history_metrics(registry),
          keeper(make_keeper(runtime, loops.main(), pools, cfg, history_metrics)),
          reconciliation_metrics(registry),
          reconciliation(runtime.system(), loops.main().get_executor(), *pools.background, cfg,
                         reconciliation_metrics),
          sampler(runtime.system(), loops.main().get_executor(), pools, cfg, placement_metrics,
                  settlement_metrics, registry) {}

    // Stops every actor; called again after the drain did, for when a second signal cut it.
    void stop() {
        placement.stop();
        settlement.stop();
        sweeper.stop();
        if (keeper) {
            keeper->stop();
        }
        reconciliation.stop();
        sampler.stop();
    }

    actors::placement_metrics placement_metrics;
    actors::placement_service placement;
    actors::settlement_metrics settlement_metrics;
    actors::settlement_service settlement;
    actors::reservation_metrics reservation_metrics;
    actors::reservation_sweeper sweeper;
    actors::history_metrics history_metrics;
    std::optional<actors::partition_keeper> keeper;
    actors::reconciliation_metrics reconciliation_metrics;
    actors::reconciliation_service reconciliation;
    actors::peak_sampler sampler;
};

// Registers the read router's metrics and returns the counter of reads answered from the write
// tables.
metrics::counter& add_reads_metrics(metrics::registry& registry, const db::read_router& reads) {
    net::add_read_metrics(registry, reads);
    return registry.make_counter(
        "fulltime_reads_behind_own_write_total",
        "bets reads answered from the write tables because the read model had not yet caught up "
        "with the account's own placement within read.ryw_wait_ms, or while the projector "
        "yielded to a settlement.");
}

// Reads: the primary's read pool, and the standby's when database.read_url is set.
struct read_side {
    read_side(db::pools& pools, const config& cfg, metrics::registry& registry)
        : reads(*pools.read, pools.standby.get(),
                {std::chrono::milliseconds(cfg.read.sample_interval_ms),
                 std::chrono::milliseconds(cfg.read.ryw_wait_ms)}),
          reads_behind(add_reads_metrics(registry, reads)),
          projector_metrics(registry) {}

    db::read_router reads;
    metrics::counter& reads_behind;
    actors::projector_metrics projector_metrics;
};

// What the gateway serves: the bets and feed handlers, and every route, over the actors.
net::services gateway_services(const config& cfg, db::pools& pools, const database_target& target,
                               token::keyring token_keys, std::string server_settings,
                               metrics::registry& registry, serve_actors& engine,
                               read_side& read_path, const event_loops& loops) {
    net::services services;
    services.cfg = &cfg;
    services.pools = &pools;
    services.readiness_conninfo = target.conninfo;
    services.placement_opened = [&engine] { return engine.placement.opened(); };
    services.metrics = &registry;
    services.token_keys = std::move(token_keys);
    services.migrations = resources::migrations();
    net::add_bets_handlers(
        services.bets,
        {&engine.placement, &engine.placement_metrics, &read_path.reads, cfg.read,
         &read_path.reads_behind,
         cfg.read.projector_interval_ms > 0 ? &read_path.projector_metrics.yielding : nullptr});
    // A stored result event wakes its market's settlement actor at once (the periodic scan is
    // the safety net).
    auto feed = net::make_feed_endpoint(
        cfg, pools, registry, [&engine](std::int64_t market) { engine.settlement.notify(market); });
    services.feed = std::move(feed.handlers);
    services.routes = std::move(feed.routes);
    std::ranges::move(net::make_operator_routes(cfg, pools, registry),
                      std::back_inserter(services.routes));
    std::ranges::move(net::make_diagnostics_routes(
                          pools, [&engine] { return engine.settlement_metrics.governor_json(); },
                          std::move(server_settings), engine.sampler.history(),
                          [&read_path] { return net::read_state_json(read_path.reads); }),
                      std::back_inserter(services.routes));
    std::ranges::move(net::make_reconciliation_routes(pools, engine.reconciliation),
                      std::back_inserter(services.routes));
    std::ranges::move(net::make_market_routes(
                          cfg, pools, read_path.reads,
                          [&engine](std::int64_t market) { engine.settlement.notify(market); }),
                      std::back_inserter(services.routes));
    services.loops = loops.all();
    return services;
}

// Listens, starts the other event loops, and says where.
void start_gateway(net::server& gateway, event_loops& loops, const config& cfg) {
    gateway.start();
    loops.start();
    log::info("listening on http://" + cfg.gateway.host + ":" + std::to_string(gateway.port()));
    if (const auto admin = gateway.admin_port()) {
        // The operators' routes (/metrics, /dashboard, the feed, the operator API) are there
        // and no longer on the bettors' port.
        log::info("operator routes on http://" + *cfg.gateway.admin_host + ":" +
                  std::to_string(*admin));
    }
}

// Starts pushing settlements to the connected bettors; returns the flag that stops it.
std::shared_ptr<bool> start_pushes(boost::asio::io_context& ioc, db::pools& pools,
                                   net::server& gateway, metrics::registry& registry,
                                   const config& cfg) {
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
    return pushes_stop;
}

// Starts the read side's loops: the router's sampler when there is a standby to date (without
// one every read goes to the primary and nothing needs the primary's position), and the
// projector unless this engine runs none (read.projector_interval_ms = 0: another process
// projects). Returns the flag that stops both, with the pushes.
std::shared_ptr<std::atomic<bool>> start_read_loops(boost::asio::io_context& ioc, db::pools& pools,
                                                    read_side& read_path, serve_actors& engine,
                                                    const config& cfg) {
    auto reads_stop = std::make_shared<std::atomic<bool>>(false);
    if (read_path.reads.has_standby()) {
        boost::asio::co_spawn(ioc, read_path.reads.sample(reads_stop), boost::asio::detached);
    }
    if (cfg.read.projector_interval_ms > 0) {
        auto& settlement_metrics = engine.settlement_metrics;
        boost::asio::co_spawn(
            ioc,
            actors::run_projector(
                *pools.background, cfg.read, read_path.projector_metrics, reads_stop,
                [&settlement_metrics] { return settlement_metrics.batches_running.value() > 0; }),
            boost::asio::detached);
    }
    return reads_stop;
}

// Releases what is left once the main loop returned, and says so.
void finish(serve_actors& engine, event_loops& loops, actors::runtime& actor_runtime,
            database_target& target, const config& cfg) {
    // After a second signal the main loop stopped mid-drain: nothing runs on it any more, so
    // this thread may release what the drain did not (the other loops' parts are posted there).
    engine.stop();

    // The other loops end once their sessions, groups and connections are gone; a loop still
    // busy after the shutdown deadline is stopped.
    loops.finish(std::chrono::milliseconds(cfg.gateway.shutdown_deadline_ms));
    actor_runtime.shutdown();
    if (target.cluster) {
        target.cluster->stop();
    }
    log::info("stopped");
}

}  // namespace

int serve_command(const config& given) {
    const config cfg = serving_config(given);
    token::keyring token_keys = load_secret(cfg);
    database_target target = open_database_target(cfg);

    // gateway.io_threads event loops. Connections are spread over them, and each has its own
    // placement actors and placement connections, so a bet stays on one thread from its frame
    // to its reply. The main loop (loop 0) also runs the other pools and services, which are
    // single-executor; requests that need them hop there (net/ws_session.cpp).
    event_loops loops(cfg.gateway.io_threads);
    boost::asio::io_context& ioc = loops.main();
    migrate(ioc, target, cfg);
    std::string server_settings = check_settings(ioc, target, cfg);

    metrics::registry registry;
    metrics::add_process_metrics(registry, fulltime::version);
    const auto executors = loops.executors();
    db::pools pools = db::pools::make(executors, cfg.database, target.conninfo,
                                      target.standby_conninfo, cfg.placement.synchronous_commit);
    actors::runtime actor_runtime(cfg.actors);
    serve_actors engine(actor_runtime, loops, pools, cfg, registry);

    read_side read_path(pools, cfg, registry);
    net::server gateway(
        ioc, gateway_services(cfg, pools, target, std::move(token_keys), std::move(server_settings),
                              registry, engine, read_path, loops));
    start_gateway(gateway, loops, cfg);
    auto pushes_stop = start_pushes(ioc, pools, gateway, registry, cfg);
    auto reads_stop = start_read_loops(ioc, pools, read_path, engine, cfg);

    boost::asio::signal_set hangups(ioc, SIGHUP);
    watch_hangups(hangups);
    boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
    boost::asio::co_spawn(
        ioc,
        watch_signals(ioc, signals, hangups, gateway, engine.placement, engine.settlement,
                      engine.sweeper, engine.keeper ? &*engine.keeper : nullptr,
                      engine.reconciliation, engine.sampler, pushes_stop, reads_stop, pools,
                      cfg.gateway.shutdown_deadline_ms),
        boost::asio::detached);
    // Ready: the gateway accepts, the actors run and the schema is current (/readyz answers 200
    // once the database answers and the placement actors have opened their connections;
    // docs/operations.md).
    systemd::notify("READY=1\nSTATUS=serving");
    ioc.run();

    finish(engine, loops, actor_runtime, target, cfg);
    return 0;
}

}  // namespace fulltime::app
