// The settlement path inside one process: the real settlement actors on a CAF runtime and real
// pools on a scratch database with the engine's migrations. Events are stored with the same SQL
// function the feed calls (fulltime_record_result) and the service is notified as the feed
// does; bets are placed with the placement's own function. Every scenario ends with the money
// invariants of DESIGN.md (tests/support/invariants.hpp).

#include "fulltime/actors/runtime.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/config/config.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/resources.hpp"
#include "fulltime/db/pool.hpp"
#include "support/invariants.hpp"
#include "support/pg_support.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using fulltime::test::apply_migrations;
using fulltime::test::exec_scalar;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

asio::awaitable<bool> stop_service(fulltime::actors::settlement_service* settlement) {
    settlement->stop();
    co_return true;
}

asio::awaitable<bool> stop_on_loop(fulltime::actors::settlement_service* settlement,
                                   fulltime::db::pools* pools) {
    settlement->stop();
    pools->close();
    co_return true;
}

// Owns a scratch database with the engine's schema, the pools, the actor runtime and the
// settlement service, with the io_context on its own thread.
class engine {
public:
    explicit engine(const std::function<void(fulltime::config&)>& configure = {}) {
        cfg_.database.url = db_.url();
        cfg_.database.connect_timeout_ms = 2000;
        cfg_.database.statement_timeout_ms = 60000;
        cfg_.database.query_timeout_ms = 60000;
        cfg_.database.placement = fulltime::pool_settings{2, 64, 2000};
        cfg_.database.settlement = fulltime::pool_settings{2, 64, 5000};
        cfg_.database.read = fulltime::pool_settings{1, 64, 2000};
        cfg_.database.background = fulltime::pool_settings{2, 64, 5000};
        cfg_.actors.scheduler_threads = 2;
        cfg_.actors.request_timeout_ms = 5000;
        cfg_.settlement.batch_bets_max = 100;
        cfg_.settlement.batches_in_flight = 2;
        cfg_.settlement.lock_timeout_ms = 200;
        cfg_.settlement.retry_delay_ms = 10;
        cfg_.settlement.poll_interval_ms = 200;
        cfg_.settlement.duty_percent = 100;
        cfg_.settlement.push_interval_ms = 50;
        if (configure) {
            configure(cfg_);
        }
        pools_ =
            fulltime::db::pools::make(ioc_.get_executor(), cfg_.database, db_.url(), db_.url());
        thread_ = std::thread([this] { ioc_.run(); });
        REQUIRE(on_loop(apply_migrations(pools_.background.get())));
        runtime_ = std::make_unique<fulltime::actors::runtime>(cfg_.actors);
        metrics_ = std::make_unique<fulltime::actors::settlement_metrics>(registry_);
        settlement_ = std::make_unique<fulltime::actors::settlement_service>(
            runtime_->system(), ioc_.get_executor(), *pools_.settlement, *pools_.background, cfg_,
            *metrics_);
    }

    ~engine() {
        try {
            stop();
        } catch (const std::exception& e) {
            MESSAGE("stopping the engine: " << e.what());
        }
    }

    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    template <class T>
    T on_loop(asio::awaitable<T> task, std::chrono::milliseconds timeout = 20s) {
        auto fut = asio::co_spawn(ioc_, std::move(task), asio::use_future);
        if (fut.wait_for(timeout) != std::future_status::ready) {
            throw std::runtime_error("task on the engine's loop timed out");
        }
        return fut.get();
    }

    void stop() {
        if (!thread_.joinable()) {
            return;
        }
        for (auto& other : others_) {
            asio::co_spawn(ioc_, stop_service(other.get()), asio::use_future).wait_for(5s);
        }
        if (settlement_) {
            asio::co_spawn(ioc_, stop_on_loop(settlement_.get(), &pools_), asio::use_future)
                .wait_for(5s);
        }
        work_.reset();
        ioc_.stop();
        thread_.join();
        if (runtime_) {
            runtime_->shutdown();
        }
    }

    const std::string& url() const { return db_.url(); }
    fulltime::actors::settlement_service& settlement() { return *settlement_; }
    fulltime::actors::settlement_metrics& metrics() { return *metrics_; }

    /// Starts another settlement service on the same database, as a second engine instance
    /// would; it stops with the engine.
    fulltime::actors::settlement_service& add_instance() {
        other_metrics_.push_back(std::make_unique<fulltime::actors::settlement_metrics>(
            other_registries_.emplace_back()));
        others_.push_back(std::make_unique<fulltime::actors::settlement_service>(
            runtime_->system(), ioc_.get_executor(), *pools_.settlement, *pools_.background, cfg_,
            *other_metrics_.back()));
        return *others_.back();
    }
    std::string metrics_text() { return registry_.render(); }

    std::int64_t scalar(const std::string& sql) const {
        auto v = exec_scalar(db_.url(), sql);
        return v ? std::stoll(*v) : 0;
    }
    std::string text(const std::string& sql) const {
        return exec_scalar(db_.url(), sql).value_or("");
    }
    void exec(const std::string& sql) const { exec_scalar(db_.url(), sql); }

    /// Creates an open market with selections {id, odds in 1/10000}.
    void add_market(std::int64_t market_id, const std::vector<std::pair<std::int64_t, int>>& sels) {
        const auto m = std::to_string(market_id);
        std::string sql =
            "INSERT INTO events (event_id, name) VALUES (1, 'event') ON CONFLICT DO NOTHING;"
            "INSERT INTO markets (market_id, event_id, name, stake_min, stake_max, "
            "liability_limit, exposure_shards) VALUES (" +
            m + ", 1, 'market " + m + "', 1, 100000000000, 1000000000000000, 4);" +
            "INSERT INTO market_exposure (market_id, shard, liability_limit) SELECT " + m +
            ", g, 250000000000000 FROM generate_series(0, 3) g;";
        for (const auto& [id, odds] : sels) {
            sql += "INSERT INTO selections (selection_id, market_id, name, odds) VALUES (" +
                   std::to_string(id) + ", " + m + ", 's', " + std::to_string(odds) + ");";
        }
        exec(sql);
    }

    /// Creates accounts [first, first + n) with `amount` each, as a keyed deposit.
    void fund(std::int64_t first, std::int64_t n, std::int64_t amount) {
        const auto a = "generate_series(" + std::to_string(first) + ", " +
                       std::to_string(first + n - 1) + ") a";
        exec("BEGIN; INSERT INTO accounts (account_id, currency, available) SELECT a, 'EUR', " +
             std::to_string(amount) + " FROM " + a +
             "; INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, "
             "credit_account_id, amount) SELECT 'deposit:' || a || ':seed', 'EUR', 'cash', "
             "'available', a, " +
             std::to_string(amount) + " FROM " + a + "; COMMIT;");
    }

    /// Places one bet with the placement's own function; returns its outcome.
    std::string place(std::int64_t account, const std::string& key, std::int64_t selection,
                      std::int64_t stake, int lock_timeout_ms = 1000) {
        return text("SELECT outcome FROM fulltime_place(" + std::to_string(account) + ", '" + key +
                    "', 'fp', " + std::to_string(selection) + ", " + std::to_string(stake) +
                    ", 0, 'any', " + std::to_string(lock_timeout_ms) + ", 0)");
    }

    /// Stores an event as the feed does and notifies the service; returns the outcome.
    std::string record(std::int64_t market, int seq, const std::string& key,
                       const std::string& kind, const std::string& payload) {
        auto outcome = text("SELECT outcome FROM fulltime_record_result(" + std::to_string(market) +
                            ", " + std::to_string(seq) + ", '" + key + "', '" + kind + "', '" +
                            payload + "'::jsonb, 'test')");
        settlement_->notify(market);
        return outcome;
    }

    std::int64_t applied(std::int64_t market) const {
        return scalar("SELECT applied_seq FROM settlement_progress WHERE market_id = " +
                      std::to_string(market));
    }

    /// Waits until `market` applied event `seq`.
    bool wait_applied(std::int64_t market, int seq, std::chrono::milliseconds timeout = 30s) {
        const auto until = steady::now() + timeout;
        while (steady::now() < until) {
            if (applied(market) >= seq) {
                return true;
            }
            std::this_thread::sleep_for(20ms);
        }
        return applied(market) >= seq;
    }

    std::int64_t available(std::int64_t account) const {
        return scalar("SELECT available FROM accounts WHERE account_id = " +
                      std::to_string(account));
    }
    std::int64_t reserved(std::int64_t account) const {
        return scalar("SELECT reserved FROM accounts WHERE account_id = " +
                      std::to_string(account));
    }

    /// The effect in force of the bet with `key`: "outcome payout", or "open".
    std::string state(const std::string& key) const {
        return exec_scalar(db_.url(),
                           "SELECT coalesce((SELECT e.outcome || ' ' || e.payout FROM "
                           "bet_settlements e WHERE e.bet_id = b.bet_id AND NOT e.reversal AND "
                           "NOT EXISTS (SELECT 1 FROM bet_settlements r WHERE r.bet_id = "
                           "e.bet_id AND r.version = e.version AND r.reversal)), 'open') FROM "
                           "bets b WHERE b.idempotency_key = '" +
                               key + "'")
            .value_or("missing");
    }

    void check_invariants() const {
        for (const auto& problem : fulltime::test::money_violations(db_.url())) {
            FAIL_CHECK(problem);
        }
    }

private:
    fulltime::test::scratch_database db_;
    fulltime::metrics::registry registry_;
    fulltime::config cfg_;
    asio::io_context ioc_;
    asio::executor_work_guard<asio::io_context::executor_type> work_{ioc_.get_executor()};
    fulltime::db::pools pools_;
    std::unique_ptr<fulltime::actors::runtime> runtime_;
    std::unique_ptr<fulltime::actors::settlement_metrics> metrics_;
    std::unique_ptr<fulltime::actors::settlement_service> settlement_;
    std::deque<fulltime::metrics::registry> other_registries_;
    std::vector<std::unique_ptr<fulltime::actors::settlement_metrics>> other_metrics_;
    std::vector<std::unique_ptr<fulltime::actors::settlement_service>> others_;
    std::thread thread_;
};

}  // namespace

TEST_CASE("each outcome kind pays its hand-computed payout") {
    engine e;
    // Odds in 1/10000: 2.50, 3.10, 1.90, 2.55, 4.00, 1.50.
    e.add_market(1, {{11, 25000}, {12, 31000}, {13, 19000}, {14, 25500}, {15, 40000}, {16, 15000}});
    e.fund(1, 1, 100000);                                    // 1000.00
    REQUIRE(e.place(1, "half-won", 11, 1000) == "placed");   // win, void 0.5
    REQUIRE(e.place(1, "half-lost", 12, 1000) == "placed");  // lose, void 0.5
    REQUIRE(e.place(1, "dead-heat", 13, 1000) == "placed");  // win, dead heat 0.5
    REQUIRE(e.place(1, "rounding", 14, 100) == "placed");    // win, dead heat 0.3333
    REQUIRE(e.place(1, "void", 15, 1000) == "placed");       // void 1
    REQUIRE(e.place(1, "lost", 16, 1000) == "placed");       // not named: loses
    CHECK(e.available(1) == 100000 - 5100);
    CHECK(e.reserved(1) == 5100);
    REQUIRE(
        e.record(
            1, 1, "r1", "result",
            R"({"outcomes":[)"
            R"({"selection_id":11,"win":true,"void_factor":5000,"dead_heat_factor":10000},)"
            R"({"selection_id":12,"win":false,"void_factor":5000,"dead_heat_factor":10000},)"
            R"({"selection_id":13,"win":true,"void_factor":0,"dead_heat_factor":5000},)"
            R"({"selection_id":14,"win":true,"void_factor":0,"dead_heat_factor":3333},)"
            R"({"selection_id":15,"win":true,"void_factor":10000,"dead_heat_factor":10000}]})") ==
        "stored");
    REQUIRE(e.wait_applied(1, 1));
    // 10.00 at 2.50, half void: 5.00 back + 5.00 * 2.50 = 17.50.
    CHECK(e.state("half-won") == "half_won 1750");
    // 10.00 at 3.10, half void, lost: 5.00 back.
    CHECK(e.state("half-lost") == "half_lost 500");
    // 10.00 at 1.90, dead heat 0.5: 10.00 * 0.5 * 1.90 = 9.50.
    CHECK(e.state("dead-heat") == "dead_heat 950");
    // 1.00 at 2.55, dead heat 0.3333: 100 * 0.3333 * 2.55 = 84.99 cents, floored to 84.
    CHECK(e.state("rounding") == "dead_heat 84");
    CHECK(e.state("void") == "void 1000");
    CHECK(e.state("lost") == "lost 0");
    CHECK(e.available(1) == 100000 - 5100 + 1750 + 500 + 950 + 84 + 1000);
    CHECK(e.reserved(1) == 0);
    // A plain win.
    e.add_market(2, {{21, 25000}, {22, 15000}});
    REQUIRE(e.place(1, "won", 21, 1000) == "placed");
    REQUIRE(e.place(1, "lost-2", 22, 1000) == "placed");
    REQUIRE(
        e.record(
            2, 1, "m2-r1", "result",
            R"({"outcomes":[{"selection_id":21,"win":true,"void_factor":0,"dead_heat_factor":10000},)"
            R"({"selection_id":22,"win":false,"void_factor":0,"dead_heat_factor":10000}]})") ==
        "stored");
    REQUIRE(e.wait_applied(2, 1));
    CHECK(e.state("won") == "won 2500");
    CHECK(e.state("lost-2") == "lost 0");
    // A result suspends the market: a later bet is refused.
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 2") == "suspended");
    CHECK(e.text("SELECT (fulltime_place(1, 'late', 'fp', 21, 1000, 0, 'any', 1000, 0))"
                 ".response->>'code'") == "market_suspended");
    e.check_invariants();
}

TEST_CASE("duplicates are ignored and events apply in seq order after a gap") {
    engine e;
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.fund(1, 10, 10000);
    for (int a = 1; a <= 10; ++a) {
        REQUIRE(e.place(a, "k" + std::to_string(a), a % 2 ? 11 : 12, 1000) == "placed");
    }
    const std::string win11 =
        R"({"outcomes":[{"selection_id":11,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
    // seq 2 arrives first: it waits for seq 1.
    CHECK(e.record(1, 2, "rb-2", "rollback_result", "{}") == "stored");
    CHECK(e.record(1, 4, "rc-4", "rollback_cancel", "{}") == "stored");
    std::this_thread::sleep_for(500ms);
    CHECK(e.applied(1) == 0);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == 0);
    CHECK(e.metrics().backlog_events.value() >= 2);
    // Duplicates of each kind, and a conflict.
    CHECK(e.record(1, 2, "rb-2", "rollback_result", "{}") == "duplicate");
    CHECK(e.record(1, 1, "r-1", "result", win11) == "stored");
    CHECK(e.record(1, 1, "r-1", "result", win11) == "duplicate");
    CHECK(e.record(1, 1, "r-1b", "result", win11) == "conflict");
    REQUIRE(e.wait_applied(1, 2));
    // seq 3 is missing: 4 waits.
    std::this_thread::sleep_for(300ms);
    CHECK(e.applied(1) == 2);
    CHECK(e.record(1, 3, "c-3", "cancel", "{}") == "stored");
    CHECK(e.record(1, 3, "c-3", "cancel", "{}") == "duplicate");
    CHECK(e.record(1, 4, "rc-4", "rollback_cancel", "{}") == "duplicate");
    REQUIRE(e.wait_applied(1, 4));
    // result, rollback, cancel, rollback of the cancel: each bet is open again, with four rows
    // of history, and nothing was applied twice.
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == 40);
    CHECK(e.scalar("SELECT count(*) FROM (SELECT bet_id FROM bet_settlements GROUP BY bet_id "
                   "HAVING count(*) = 4) x") == 10);
    for (int a = 1; a <= 10; ++a) {
        CHECK(e.state("k" + std::to_string(a)) == "open");
        CHECK(e.available(a) == 9000);
        CHECK(e.reserved(a) == 1000);
    }
    std::this_thread::sleep_for(400ms);  // a scan after the last event
    CHECK(e.metrics().backlog_events.value() == 0);
    e.check_invariants();
}

TEST_CASE("a correction a rollback and a windowed cancel on a settled market keep the books") {
    engine e;
    e.add_market(1, {{11, 30000}, {12, 15000}});
    e.fund(1, 2, 10000);
    REQUIRE(e.place(1, "a-early", 11, 1000) == "placed");
    REQUIRE(e.place(2, "b-early", 12, 1000) == "placed");
    std::this_thread::sleep_for(50ms);
    const std::string window_start = e.text(
        "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')");
    REQUIRE(e.place(1, "a-late", 11, 2000) == "placed");
    const std::string home =
        R"({"outcomes":[{"selection_id":11,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
    const std::string away =
        R"({"outcomes":[{"selection_id":12,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
    REQUIRE(e.record(1, 1, "r1", "result", home) == "stored");
    REQUIRE(e.wait_applied(1, 1));
    // Home won: account 1 staked 30.00 and gets 90.00; account 2 lost 10.00.
    CHECK(e.available(1) == 10000 - 3000 + 9000);
    CHECK(e.available(2) == 9000);
    e.check_invariants();

    // Correction: away won. Account 1's winnings are reversed, account 2 gets 15.00.
    REQUIRE(e.record(1, 2, "r2", "result", away) == "stored");
    REQUIRE(e.wait_applied(1, 2));
    CHECK(e.state("a-early") == "lost 0");
    CHECK(e.state("b-early") == "won 1500");
    CHECK(e.available(1) == 7000);
    CHECK(e.available(2) == 9000 + 1500);
    CHECK(e.scalar("SELECT max(version) FROM bet_settlements") == 2);
    e.check_invariants();

    // Cancel the bets placed from window_start on: only a-late is voided (its stake back).
    REQUIRE(e.record(1, 3, "c3", "cancel", R"({"start_time":")" + window_start + R"("})") ==
            "stored");
    REQUIRE(e.wait_applied(1, 3));
    CHECK(e.state("a-late") == "void 2000");
    CHECK(e.state("a-early") == "lost 0");
    CHECK(e.available(1) == 9000);
    e.check_invariants();

    // Roll the cancel back: a-late is settled again with the result in force (away won).
    REQUIRE(e.record(1, 4, "rc4", "rollback_cancel",
                     R"({"start_time":")" + window_start + R"("})") == "stored");
    REQUIRE(e.wait_applied(1, 4));
    CHECK(e.state("a-late") == "lost 0");
    CHECK(e.available(1) == 7000);
    e.check_invariants();

    // Roll the result back: every bet is open again, the stakes reserved.
    REQUIRE(e.record(1, 5, "rb5", "rollback_result", "{}") == "stored");
    REQUIRE(e.wait_applied(1, 5));
    CHECK(e.state("a-early") == "open");
    CHECK(e.state("a-late") == "open");
    CHECK(e.state("b-early") == "open");
    CHECK(e.available(1) == 7000);
    CHECK(e.reserved(1) == 3000);
    CHECK(e.available(2) == 9000);
    CHECK(e.reserved(2) == 1000);
    // Each bet's history stays readable: a-late went settle, reverse, settle, reverse, cancel,
    // uncancel, settle, reverse.
    CHECK(e.text("SELECT string_agg(kind || version, ',' ORDER BY version, reversal) FROM "
                 "bet_settlements s JOIN bets b USING (bet_id) WHERE b.idempotency_key = "
                 "'a-late'") ==
          "settle1,reverse1,settle2,reverse2,cancel3,uncancel3,settle4,reverse4");
    e.check_invariants();
}

TEST_CASE("a market of 20000 bets settles while placements on other markets go on") {
    engine e([](fulltime::config& cfg) {
        cfg.settlement.batch_bets_max = 500;
        cfg.settlement.batches_in_flight = 2;
    });
    constexpr int accounts = 2000;
    constexpr int bets = 20000;
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.add_market(2, {{21, 20000}});
    e.add_market(3, {{31, 20000}});
    e.fund(1, accounts, 1000000);
    // 20,000 bets of 1.00 on market 1, placed with the placement's function, ten per account.
    e.exec("SELECT count(*) FROM (SELECT (fulltime_place((g % " + std::to_string(accounts) +
           ") + 1, 'big-' || g, 'fp', CASE WHEN g % 3 = 0 THEN 11 ELSE 12 END, 100, 0, 'any', "
           "1000, 0)).outcome FROM generate_series(0, " +
           std::to_string(bets - 1) + ") g) x");
    REQUIRE(e.scalar("SELECT count(*) FROM bets WHERE market_id = 1") == bets);

    // Placements for the same accounts on markets 2 and 3 while market 1 settles, each as the
    // engine places: lock_timeout 50 ms, at most 3 retries, then busy.
    std::atomic<bool> done{false};
    std::atomic<int> placed{0};
    std::atomic<int> lock_timeouts{0};
    std::atomic<int> busy{0};
    std::vector<std::thread> placers;
    for (int t = 0; t < 2; ++t) {
        placers.emplace_back([&, t] {
            for (int i = 0; !done; ++i) {
                const int account = 1 + (i * 7 + t * 1000) % accounts;
                const auto key = "live-" + std::to_string(t) + "-" + std::to_string(i);
                bool ok = false;
                for (int attempt = 0; attempt < 4 && !ok; ++attempt) {
                    try {
                        ok = e.place(account, key, t == 0 ? 21 : 31, 100, 50) == "placed";
                    } catch (const std::exception& ex) {
                        if (std::string(ex.what()).find("lock timeout") == std::string::npos) {
                            throw;
                        }
                        ++lock_timeouts;
                    }
                }
                (ok ? placed : busy)++;
            }
        });
    }
    std::this_thread::sleep_for(300ms);
    const auto start = steady::now();
    REQUIRE(
        e.record(
            1, 1, "big-r1", "result",
            R"({"outcomes":[{"selection_id":11,"win":true,"void_factor":0,"dead_heat_factor":10000}]})") ==
        "stored");
    const bool settled = e.wait_applied(1, 1, 180s);
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
    done = true;
    for (auto& t : placers) {
        t.join();
    }
    REQUIRE(settled);
    MESSAGE("settled " << bets << " bets in " << elapsed.count()
                       << " ms; placements meanwhile: " << placed.load() << " placed, "
                       << lock_timeouts.load() << " lock timeouts, " << busy.load() << " busy");
    CHECK(placed > 0);
    // No placement waited on settlement beyond its bound: none ran out of retries.
    CHECK(busy == 0);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == bets);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements WHERE outcome = 'won' AND payout = 200") ==
          bets / 3 + 1);
    CHECK(e.scalar("SELECT count(*) FROM outbox WHERE topic = 'bet_settled'") == bets);
    CHECK(e.metrics().bets.value() == static_cast<std::uint64_t>(bets));
    e.check_invariants();
}

TEST_CASE("taking back winnings already withdrawn records a debt that a later credit repays") {
    engine e;
    e.add_market(1, {{11, 30000}, {12, 15000}});
    e.fund(1, 1, 1000);
    REQUIRE(e.place(1, "k", 11, 1000) == "placed");
    const std::string home =
        R"({"outcomes":[{"selection_id":11,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
    const std::string away =
        R"({"outcomes":[{"selection_id":12,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
    REQUIRE(e.record(1, 1, "r1", "result", home) == "stored");
    REQUIRE(e.wait_applied(1, 1));
    CHECK(e.available(1) == 3000);
    // The bettor withdraws the winnings (as the operator API does: a keyed transfer to cash).
    e.exec(
        "BEGIN; INSERT INTO ledger_transfers (entry_key, currency, debit_side, "
        "debit_account_id, credit_side, amount) VALUES ('withdrawal:1:w1', 'EUR', "
        "'available', 1, 'cash', 3000); UPDATE accounts SET available = available - 3000 "
        "WHERE account_id = 1; COMMIT;");
    // Correction: away won. The 30.00 payout comes back from an empty account: advanced as debt.
    REQUIRE(e.record(1, 2, "r2", "result", away) == "stored");
    REQUIRE(e.wait_applied(1, 2));
    CHECK(e.state("k") == "lost 0");
    CHECK(e.available(1) == 0);
    CHECK(e.scalar("SELECT owed FROM accounts WHERE account_id = 1") == 3000);
    e.check_invariants();
    // Corrected back: home won after all. The new payout repays the debt first.
    REQUIRE(e.record(1, 3, "r3", "result", home) == "stored");
    REQUIRE(e.wait_applied(1, 3));
    CHECK(e.state("k") == "won 3000");
    CHECK(e.available(1) == 0);
    CHECK(e.scalar("SELECT owed FROM accounts WHERE account_id = 1") == 0);
    CHECK(e.scalar("SELECT count(*) FROM ledger_transfers WHERE entry_key LIKE 'advance:%' OR "
                   "entry_key LIKE 'repay:%'") == 2);
    e.check_invariants();
}

TEST_CASE("an event waits for the transactions that were running when it started") {
    engine e;
    e.add_market(1, {{11, 20000}});
    e.fund(1, 1, 10000);
    REQUIRE(e.place(1, "k", 11, 1000) == "placed");
    // A writer of this database, running when the event starts (as a placement that read the
    // market open would be): the event waits for it.
    std::thread writer([&] {
        e.exec(
            "BEGIN; UPDATE events SET name = name WHERE event_id = 1; SELECT pg_sleep(1.2); "
            "COMMIT;");
    });
    std::this_thread::sleep_for(200ms);
    REQUIRE(
        e.record(
            1, 1, "r1", "result",
            R"({"outcomes":[{"selection_id":11,"win":true,"void_factor":0,"dead_heat_factor":10000}]})") ==
        "stored");
    std::this_thread::sleep_for(500ms);
    CHECK(e.applied(1) == 0);
    CHECK(e.metrics().steps_fenced.value() > 0);
    writer.join();
    REQUIRE(e.wait_applied(1, 1));
    CHECK(e.state("k") == "won 2000");
    e.check_invariants();
}

TEST_CASE("two instances settling one market apply each event once") {
    engine e([](fulltime::config& cfg) { cfg.settlement.batch_bets_max = 50; });
    auto& second = e.add_instance();
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.fund(1, 50, 100000);
    e.exec(
        "SELECT count(*) FROM (SELECT (fulltime_place((g % 50) + 1, 'k' || g, 'fp', CASE WHEN "
        "g % 2 = 0 THEN 11 ELSE 12 END, 100, 0, 'any', 1000, 0)).outcome FROM "
        "generate_series(0, 999) g) x");
    const std::string home =
        R"({"outcomes":[{"selection_id":11,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
    const std::string away =
        R"({"outcomes":[{"selection_id":12,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
    // Both instances are woken for every event, as two engines behind one feed would be.
    REQUIRE(e.record(1, 1, "r1", "result", home) == "stored");
    second.notify(1);
    REQUIRE(e.record(1, 2, "r2", "result", away) == "stored");
    second.notify(1);
    REQUIRE(e.wait_applied(1, 2));
    // 1,000 bets, each settled, reversed and settled again: three rows each, no more.
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == 3000);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements WHERE version = 2 AND outcome = 'won' "
                   "AND payout = 300") == 500);
    e.check_invariants();
}

TEST_CASE("the money invariant checker finds broken books") {
    // The checker every pg test ends with must be able to fail: break each invariant in turn.
    engine e;
    e.add_market(1, {{11, 20000}});
    e.fund(1, 2, 10000);
    REQUIRE(e.place(1, "k", 11, 1000) == "placed");
    REQUIRE(fulltime::test::money_violations(e.url()).empty());
    const auto found = [&](const char* what) {
        for (const auto& p : fulltime::test::money_violations(e.url())) {
            if (p.find(what) != std::string::npos) {
                return true;
            }
        }
        return false;
    };
    e.exec("UPDATE accounts SET available = available + 1 WHERE account_id = 2");
    CHECK(found("balances_match_ledger"));
    e.exec("UPDATE accounts SET available = available - 1 WHERE account_id = 2");
    e.exec(
        "INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, "
        "credit_account_id, amount) VALUES ('x', 'EUR', 'cash', 'available', 99, 5)");
    CHECK(found("ledger_accounts_exist"));
    e.exec("DELETE FROM ledger_transfers WHERE entry_key = 'x'");
    e.exec(
        "INSERT INTO bet_settlements (bet_id, version, kind, outcome, payout, result_event_id) "
        "SELECT bet_id, 1, 'settle', 'won', 2000, 0 FROM bets");
    CHECK(found("bet_ledger_matches_state"));
}
