#include "support/engine_fixture.hpp"

#include "fulltime/actors/partition_keeper.hpp"
#include "fulltime/actors/placement.hpp"
#include "fulltime/actors/projector.hpp"
#include "fulltime/actors/reconciliation.hpp"
#include "fulltime/actors/reservation_sweeper.hpp"
#include "fulltime/actors/runtime.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/db/read_router.hpp"
#include "fulltime/net/bets_endpoint.hpp"
#include "fulltime/net/feed_endpoint.hpp"
#include "fulltime/net/market_routes.hpp"
#include "fulltime/net/operator_routes.hpp"
#include "fulltime/net/server.hpp"
#include "support/invariants.hpp"
#include "support/pg_support.hpp"
#include "support/test_config.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <iterator>
#include <optional>
#include <thread>

namespace fulltime::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Members are declared so that the registry, the pools and the io_context outlive the services
// and the sessions destroyed with them.
struct engine::impl {
    // Made once the test's configuration says whether the migrated template fits it.
    std::optional<scratch_database> db;
    metrics::registry registry;
    config cfg;
    asio::io_context ioc{1};
    asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ioc);
    db::pools pools;
    std::unique_ptr<actors::runtime> runtime;
    std::unique_ptr<actors::placement_metrics> placement_metrics;
    std::unique_ptr<actors::placement_service> placement;
    std::unique_ptr<actors::settlement_metrics> settlement_metrics;
    std::unique_ptr<actors::settlement_service> settlement;
    // Further instances (add_settlement_instance), each with a registry of its own as a second
    // process would have; a deque keeps the registries where the metrics point.
    std::deque<metrics::registry> other_registries;
    std::vector<std::unique_ptr<actors::settlement_metrics>> other_metrics;
    std::vector<std::unique_ptr<actors::settlement_service>> others;
    std::unique_ptr<actors::reconciliation_metrics> reconciliation_metrics;
    std::unique_ptr<actors::reconciliation_service> reconciliation;
    std::unique_ptr<actors::reservation_metrics> reservation_metrics;
    std::unique_ptr<actors::reservation_sweeper> sweeper;
    std::unique_ptr<actors::history_metrics> history_metrics;
    std::unique_ptr<actors::partition_keeper> keeper;
    // The read side: the router over the read (and standby) pools, and the projector's loop,
    // which runs whenever the gateway serves bets.
    std::unique_ptr<db::read_router> reads;
    metrics::counter* reads_behind = nullptr;
    std::unique_ptr<actors::projector_metrics> projector_metrics;
    std::shared_ptr<std::atomic<bool>> reads_stop = std::make_shared<std::atomic<bool>>(false);
    std::unique_ptr<net::server> server;
    std::thread thread;
    bool server_shut_down = false;

    // Wakes the settlement of `market`, when there is a settlement.
    void notify(std::int64_t market) {
        if (settlement) {
            settlement->notify(market);
        }
    }

    net::services make_services(const engine_parts& parts) {
        net::services s;
        s.cfg = &cfg;
        s.pools = parts.pools ? &pools : nullptr;
        if (parts.pools) {
            s.readiness_conninfo = parts.pools_url.empty() ? db->url() : parts.pools_url;
        }
        s.metrics = &registry;
        s.token_keys.current = token_secret;
        s.migrations = resources::migrations();
        if (placement) {
            s.placement_opened = [p = placement.get()] { return p->opened(); };
            net::add_bets_handlers(
                s.bets, {placement.get(), placement_metrics.get(), reads.get(), cfg.read,
                         reads_behind, projector_metrics ? &projector_metrics->yielding : nullptr});
        }
        if (parts.feed) {
            net::result_event_hook hook = parts.on_result_event;
            if (!hook) {
                hook = [this](std::int64_t market) { notify(market); };
            }
            auto feed = net::make_feed_endpoint(cfg, pools, registry, std::move(hook));
            s.feed = std::move(feed.handlers);
            s.routes = std::move(feed.routes);
        }
        if (parts.operator_routes) {
            std::ranges::move(net::make_operator_routes(cfg, pools, registry),
                              std::back_inserter(s.routes));
        }
        if (parts.market_routes) {
            std::ranges::move(
                net::make_market_routes(cfg, pools, *reads,
                                        [this](std::int64_t market) { notify(market); }),
                std::back_inserter(s.routes));
        }
        if (parts.add_services) {
            parts.add_services(s);
        }
        return s;
    }

    // Runs on the loop: serve_command's drain order.
    static asio::awaitable<bool> drain(impl* self) {
        if (self->reconciliation) {
            self->reconciliation->stop();
        }
        if (self->server && !self->server_shut_down) {
            self->server_shut_down = true;
            co_await self->server->shutdown(2000ms);
        }
        if (self->placement) {
            self->placement->stop();
        }
        if (self->settlement) {
            self->settlement->stop();
        }
        for (auto& other : self->others) {
            other->stop();
        }
        if (self->sweeper) {
            self->sweeper->stop();
        }
        if (self->keeper) {
            self->keeper->stop();
        }
        self->reads_stop->store(true);
        self->pools.close();
        co_return true;
    }

    static asio::awaitable<bool> start_server(net::server* server) {
        server->start();
        co_return true;
    }
};

engine::engine(const engine_parts& parts, const std::function<void(config&)>& configure,
               const std::function<void(config&)>& configure_case)
    : impl_(std::make_unique<impl>()) {
    auto& m = *impl_;
    m.cfg = test_config("");
    for (const auto* change : {&configure, &configure_case}) {
        if (*change) {
            (*change)(m.cfg);
        }
    }
    // A copy of the migrated template when the migrations would make the same database, so
    // that the migration below finds nothing left to apply; else an empty one it migrates.
    m.db.emplace(parts.migrate && template_fits(m.cfg.history.period) ? scratch_contents::migrated
                                                                      : scratch_contents::empty);
    m.cfg.database.url = m.db->url();
    if (parts.pools) {
        const auto& url = parts.pools_url.empty() ? m.db->url() : parts.pools_url;
        const boost::asio::any_io_executor loop = m.ioc.get_executor();
        m.pools = db::pools::make({&loop, 1}, m.cfg.database, url, m.cfg.database.read_url,
                                  m.cfg.placement.synchronous_commit);
        m.reads = std::make_unique<db::read_router>(
            *m.pools.read, m.pools.standby.get(),
            db::read_router_settings{std::chrono::milliseconds(m.cfg.read.sample_interval_ms),
                                     std::chrono::milliseconds(m.cfg.read.ryw_wait_ms)});
        m.reads_behind = &m.registry.make_counter("fulltime_reads_behind_own_write_total",
                                                  "bets reads answered from the write tables.");
    }
    m.thread = std::thread([&ioc = m.ioc] { ioc.run(); });
    bool migrated = true;
    try {
        if (parts.migrate) {
            migrated = on_loop(apply_migrations(m.pools.background.get(), m.cfg.history.period));
        }
        if (migrated) {
            if (parts.placement || parts.settlement || parts.reconciliation) {
                m.runtime = std::make_unique<actors::runtime>(m.cfg.actors);
            }
            if (parts.placement) {
                m.placement_metrics = std::make_unique<actors::placement_metrics>(m.registry);
                m.placement = std::make_unique<actors::placement_service>(
                    m.runtime->system(),
                    std::vector<actors::placement_loop>{{&m.ioc, m.pools.placement.front().get()}},
                    m.ioc.get_executor(), *m.pools.background, m.cfg, *m.placement_metrics);
            }
            if (parts.settlement) {
                m.settlement_metrics = std::make_unique<actors::settlement_metrics>(m.registry);
                m.settlement = std::make_unique<actors::settlement_service>(
                    m.runtime->system(), m.ioc.get_executor(), *m.pools.settlement,
                    *m.pools.background, m.cfg, *m.settlement_metrics,
                    m.placement_metrics ? &m.placement_metrics->recent : nullptr);
            }
            if (parts.reconciliation) {
                m.reconciliation_metrics =
                    std::make_unique<actors::reconciliation_metrics>(m.registry);
                m.reconciliation = std::make_unique<actors::reconciliation_service>(
                    m.runtime->system(), m.ioc.get_executor(), *m.pools.background, m.cfg,
                    *m.reconciliation_metrics);
            }
            if (parts.gateway && parts.placement && m.cfg.read.projector_interval_ms > 0) {
                m.projector_metrics = std::make_unique<actors::projector_metrics>(m.registry);
                asio::co_spawn(m.ioc,
                               actors::run_projector(*m.pools.background, m.cfg.read,
                                                     *m.projector_metrics, m.reads_stop,
                                                     [s = m.settlement_metrics.get()] {
                                                         return s != nullptr &&
                                                                s->batches_running.value() > 0;
                                                     }),
                               asio::detached);
                asio::co_spawn(m.ioc, m.reads->sample(m.reads_stop), asio::detached);
            }
            if (parts.gateway) {
                m.server = std::make_unique<net::server>(m.ioc, m.make_services(parts));
                on_loop(impl::start_server(m.server.get()));
            }
        }
    } catch (...) {
        stop();
        throw;
    }
    if (!migrated) {
        stop();
    }
    REQUIRE_MESSAGE(migrated, "the engine's migrations did not apply");
}

engine::~engine() {
    try {
        stop();
    } catch (const std::exception& e) {
        MESSAGE("stopping the engine: " << e.what());
    }
}

void engine::stop() {
    auto& m = *impl_;
    if (!m.thread.joinable()) {
        return;
    }
    spawn(impl::drain(impl_.get())).wait_for(10s);
    m.work.reset();
    m.ioc.stop();
    m.thread.join();
    if (m.runtime) {
        m.runtime->shutdown();
    }
}

std::future<void> engine::begin_shutdown(std::chrono::milliseconds deadline) {
    impl_->server_shut_down = true;
    return spawn(impl_->server->shutdown(deadline));
}

boost::asio::io_context& engine::ioc() noexcept { return impl_->ioc; }
const config& engine::cfg() const noexcept { return impl_->cfg; }
const std::string& engine::url() const noexcept { return impl_->db->url(); }
std::uint16_t engine::port() const { return impl_->server->port(); }
net::server& engine::server() { return *impl_->server; }
db::pools& engine::pools() { return impl_->pools; }
std::string engine::metrics_text() const { return impl_->registry.render(); }

actors::placement_service& engine::placement() { return *impl_->placement; }
actors::placement_metrics& engine::placement_metrics() { return *impl_->placement_metrics; }
actors::settlement_service& engine::settlement() { return *impl_->settlement; }
actors::settlement_metrics& engine::settlement_metrics() { return *impl_->settlement_metrics; }
actors::reconciliation_service& engine::reconciliation() { return *impl_->reconciliation; }
actors::reconciliation_metrics& engine::reconciliation_metrics() {
    return *impl_->reconciliation_metrics;
}

actors::settlement_service& engine::add_settlement_instance() {
    auto& m = *impl_;
    m.other_metrics.push_back(
        std::make_unique<actors::settlement_metrics>(m.other_registries.emplace_back()));
    m.others.push_back(std::make_unique<actors::settlement_service>(
        m.runtime->system(), m.ioc.get_executor(), *m.pools.settlement, *m.pools.background, m.cfg,
        *m.other_metrics.back()));
    return *m.others.back();
}

actors::reservation_metrics& engine::start_sweeper() {
    auto& m = *impl_;
    m.reservation_metrics = std::make_unique<actors::reservation_metrics>(m.registry);
    m.sweeper = std::make_unique<actors::reservation_sweeper>(
        m.runtime->system(), m.ioc.get_executor(), *m.pools.background, m.cfg,
        *m.reservation_metrics);
    return *m.reservation_metrics;
}

actors::history_metrics& engine::start_keeper() {
    auto& m = *impl_;
    m.history_metrics = std::make_unique<actors::history_metrics>(m.registry);
    m.keeper = std::make_unique<actors::partition_keeper>(
        m.runtime->system(), m.ioc.get_executor(), *m.pools.background, m.cfg, *m.history_metrics);
    return *m.history_metrics;
}

std::int64_t engine::scalar(const std::string& sql) const {
    auto v = exec_scalar(url(), sql);
    return v && !v->empty() ? std::stoll(*v) : 0;
}

std::string engine::text(const std::string& sql) const {
    return exec_scalar(url(), sql).value_or("");
}

void engine::exec(const std::string& sql) const { exec_scalar(url(), sql); }

void engine::add_market(std::int64_t market_id, const std::vector<selection_odds>& selections,
                        const market_shape& shape) const {
    const auto m = std::to_string(market_id);
    std::string sql =
        "INSERT INTO events (event_id, name) VALUES (1, 'event') ON CONFLICT DO NOTHING;"
        "INSERT INTO markets (market_id, event_id, name, stake_min, stake_max, "
        "liability_limit, exposure_shards) VALUES (" +
        m + ", 1, 'market " + m + "', " + std::to_string(shape.stake_min_minor) + ", " +
        std::to_string(shape.stake_max_minor) + ", " + std::to_string(shape.liability_limit_minor) +
        ", " + std::to_string(shape.exposure_shards) + ");" +
        "INSERT INTO market_exposure (market_id, shard, liability_limit) SELECT " + m + ", g, " +
        std::to_string(shape.liability_limit_minor / shape.exposure_shards) +
        " FROM generate_series(0, " + std::to_string(shape.exposure_shards - 1) + ") g;";
    for (const auto& s : selections) {
        sql += "INSERT INTO selections (selection_id, market_id, name, odds) VALUES (" +
               std::to_string(s.selection_id) + ", " + m + ", 's', " +
               std::to_string(s.odds_units) + ");";
    }
    exec(sql);
}

void engine::fund(std::int64_t first, std::int64_t n, std::int64_t amount_minor,
                  const std::string& currency) const {
    const auto a =
        "generate_series(" + std::to_string(first) + ", " + std::to_string(first + n - 1) + ") a";
    exec("BEGIN; INSERT INTO accounts (account_id, currency, available) SELECT a, '" + currency +
         "', " + std::to_string(amount_minor) + " FROM " + a +
         "; INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, "
         "credit_account_id, amount) SELECT 'deposit:' || a || ':seed', '" +
         currency + "', 'cash', 'available', a, " + std::to_string(amount_minor) + " FROM " + a +
         "; COMMIT;");
}

void engine::deposit(std::int64_t account_id, std::int64_t amount_minor,
                     const std::string& currency) const {
    static std::atomic<int> deposits{0};
    const auto a = std::to_string(account_id);
    const auto amount = std::to_string(amount_minor);
    exec(
        "BEGIN;"
        "INSERT INTO accounts (account_id, currency) VALUES (" +
        a + ", '" + currency + "') ON CONFLICT DO NOTHING;" +
        "INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, "
        "credit_account_id, amount) VALUES ('deposit:" +
        a + ":" + std::to_string(deposits++) + "', '" + currency + "', 'cash', 'available', " + a +
        ", " + amount + ");" + "UPDATE accounts SET available = available + " + amount +
        " WHERE account_id = " + a + ";COMMIT;");
}

std::string engine::place(std::int64_t account_id, const std::string& key,
                          std::int64_t selection_id, std::int64_t stake_minor,
                          int lock_timeout_ms) const {
    return text("SELECT outcome FROM fulltime_place(" + std::to_string(account_id) + ", '" + key +
                "', 'fp', " + std::to_string(selection_id) + ", " + std::to_string(stake_minor) +
                ", 2, 0, 'any', " + std::to_string(lock_timeout_ms) + ", 0)");
}

std::int64_t engine::applied(std::int64_t market_id) const {
    return scalar("SELECT applied_seq FROM settlement_progress WHERE market_id = " +
                  std::to_string(market_id));
}

bool engine::wait_applied(std::int64_t market_id, std::int64_t seq,
                          std::chrono::milliseconds timeout) const {
    return eventually([&] { return applied(market_id) >= seq; }, timeout, 20ms);
}

std::string engine::bet_state(const std::string& key) const {
    return exec_scalar(url(),
                       "SELECT coalesce((SELECT e.outcome || ' ' || e.payout FROM "
                       "bet_settlements e WHERE e.bet_id = b.bet_id AND NOT e.reversal AND "
                       "NOT EXISTS (SELECT 1 FROM bet_settlements r WHERE r.bet_id = "
                       "e.bet_id AND r.version = e.version AND r.reversal)), 'open') FROM "
                       "bets b WHERE b.idempotency_key = '" +
                           key + "'")
        .value_or("missing");
}

void engine::check_money_invariants() const {
    for (const auto& problem : money_violations(url())) {
        FAIL_CHECK(problem);
    }
}

std::string sign_token(token::kind kind, std::int64_t account_id, const std::string& producer,
                       std::int64_t ttl_s, const std::string& key) {
    token::claims c;
    c.kind = kind;
    c.expires_at_s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count() +
                     ttl_s;
    if (kind == token::kind::account) {
        c.account_id = account_id;
    } else if (kind == token::kind::producer) {
        c.producer = producer;
    } else {
        c.operator_name = "test-operator";
    }
    return token::sign(c, key);
}

std::string account_token(std::int64_t account_id) {
    return sign_token(token::kind::account, account_id);
}

header_list bearer(const std::string& bearer_token) {
    return {{"Authorization", "Bearer " + bearer_token}};
}

header_list bearer(token::kind kind, const std::string& producer) {
    return bearer(sign_token(kind, 1, producer));
}

ws_client open_ws(std::uint16_t port, const std::string& target, const header_list& headers) {
    ws_client c(port);
    const auto r = c.upgrade(target, headers);
    REQUIRE_MESSAGE(r.status == 101, target << " answered " << r.status << ": " << r.body);
    return c;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
        if (condition()) {
            return true;
        }
        std::this_thread::sleep_for(poll);
    }
    return condition();
}

}  // namespace fulltime::test
