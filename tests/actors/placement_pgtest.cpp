// The placement path end to end inside one process: the real gateway with the bets handlers,
// real placement actors on a CAF runtime, real pools on a scratch database with the engine's
// migrations, driven over WebSocket by the blocking test client. Every scenario ends with the
// money invariants of docs/design.md.

#include "fulltime/actors/placement.hpp"
#include "fulltime/config/config.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/db/pool.hpp"
#include "support/engine_fixture.hpp"
#include "support/http_client.hpp"

#include <boost/asio/co_spawn.hpp>

#include <doctest/doctest.h>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using fulltime::test::ws_client;
using nlohmann::json;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// This file's pools and gateway limits, over the defaults of tests/support/test_config.hpp.
void placement_config(fulltime::config& cfg) {
    cfg.gateway.frame_bytes_max = 4096;
    cfg.gateway.inflight_per_connection_max = 16;
    cfg.gateway.idle_timeout_ms = 20000;
    cfg.database.placement = fulltime::pool_settings{4, 64, 2000};
    cfg.database.settlement = fulltime::pool_settings{1, 16, 2000};
    cfg.database.read = fulltime::pool_settings{2, 256, 2000};
    cfg.database.background = fulltime::pool_settings{2, 16, 2000};
    // Short: the lock tests below hold an account row longer than this.
    cfg.placement.lock_timeout_ms = 50;
    cfg.placement.lock_retries_max = 3;
}

// The placement path as serve_command wires it: the gateway with the /v1/bets handlers over the
// placement actors (tests/support/engine_fixture.hpp).
class placement_engine : public fulltime::test::engine {
public:
    explicit placement_engine(const std::function<void(fulltime::config&)>& configure = {})
        : fulltime::test::engine({.gateway = true, .placement = true}, placement_config,
                                 configure) {}

    /// Creates a market with one selection at decimal `odds`, its exposure shards (limit /
    /// shards each).
    void add_market(std::int64_t market_id, std::int64_t selection_id, const std::string& odds,
                    std::int64_t liability_limit_minor = 100'000'000'000, int shards = 4,
                    std::int64_t stake_min_minor = 10,
                    std::int64_t stake_max_minor = 100'000'000) const {
        fulltime::test::engine::add_market(
            market_id, {{selection_id, fulltime::money::parse_odds(odds).value()}},
            {stake_min_minor, stake_max_minor, liability_limit_minor, shards});
    }

    /// Checks docs/design.md's money invariants (check_money_invariants) and the placement's own.
    void check_invariants() const {
        check_money_invariants();
        CHECK_MESSAGE(scalar("SELECT count(*) FROM market_exposure WHERE liability > "
                             "liability_limit OR liability < 0") == 0,
                      "an exposure shard above its limit");
        CHECK_MESSAGE(
            scalar("SELECT count(*) FROM markets m WHERE (SELECT coalesce(sum(liability), 0) "
                   "FROM market_exposure e WHERE e.market_id = m.market_id) <> (SELECT "
                   "coalesce(sum(ceil(b.stake::numeric * (b.odds - 10000) / 10000)), 0) FROM "
                   "bets b WHERE b.market_id = m.market_id)") == 0,
            "exposure differs from the bets' liabilities");
        CHECK_MESSAGE(scalar("SELECT count(*) FROM idempotency_keys WHERE response IS NULL") == 0,
                      "a key without its stored response");
    }
};

ws_client open_bets(std::uint16_t port, std::int64_t account_id) {
    return fulltime::test::open_ws(
        port, "/v1/bets", fulltime::test::bearer(fulltime::test::account_token(account_id)));
}

json read_json(ws_client& c, std::chrono::milliseconds timeout = 10s) {
    const auto r = c.read(timeout);
    REQUIRE_MESSAGE(r.text.has_value(), "no message: closed=" << r.closed << " code="
                                                              << r.close_code << " " << r.error);
    return json::parse(*r.text);
}

json request(ws_client& c, const json& message) {
    c.send_text(message.dump());
    return read_json(c);
}

json place(std::string id, std::string key, std::int64_t selection, std::string stake,
           std::string odds, std::string accept = "") {
    json m{{"type", "place"},
           {"id", std::move(id)},
           {"idempotency_key", std::move(key)},
           {"selection_id", selection},
           {"stake", std::move(stake)},
           {"odds", std::move(odds)}};
    if (!accept.empty()) {
        m["accept"] = std::move(accept);
    }
    return m;
}

json without(json reply, const char* field) {
    reply.erase(field);
    return reply;
}

// Waits until another session holds a write lock on the accounts table (the test's holder).
bool eventually_locked(const placement_engine& e) {
    return fulltime::test::eventually([&] {
        return e.scalar(
                   "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                   "WHERE c.relname = 'accounts' AND l.mode = 'RowExclusiveLock' AND "
                   "l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname "
                   "= current_database()) AND l.pid <> pg_backend_pid()") > 0;
    });
}

}  // namespace

TEST_CASE("200 concurrent placements on one account place exactly what its balance covers") {
    placement_engine e;
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 5700);  // 57 stakes of 1.00
    constexpr int connections = 20;
    constexpr int per_connection = 10;
    std::mutex mutex;
    std::map<std::string, int> codes;
    std::atomic<bool> negative_seen{false};
    std::vector<std::thread> threads;
    std::atomic<bool> done{false};
    // Watches the balance while the placements run: it must never be negative.
    std::thread watcher([&] {
        while (!done) {
            if (e.scalar("SELECT count(*) FROM accounts WHERE available < 0 OR reserved < 0") > 0) {
                negative_seen = true;
            }
            std::this_thread::sleep_for(5ms);
        }
    });
    for (int t = 0; t < connections; ++t) {
        threads.emplace_back([&, t] {
            try {
                auto c = open_bets(e.port(), 1);
                for (int i = 0; i < per_connection; ++i) {
                    const auto key = "k" + std::to_string(t) + "-" + std::to_string(i);
                    c.send_text(place(key, key, 1001, "1.00", "2.00").dump());
                }
                for (int i = 0; i < per_connection; ++i) {
                    auto r = c.read(20s);
                    std::lock_guard lock(mutex);
                    if (!r.text) {
                        ++codes["no reply"];
                        continue;
                    }
                    auto j = json::parse(*r.text);
                    ++codes[j["type"] == "placed" ? std::string("placed")
                                                  : j.value("code", std::string("?"))];
                }
                c.close();
            } catch (const std::exception& ex) {
                std::lock_guard lock(mutex);
                ++codes[std::string("exception: ") + ex.what()];
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    done = true;
    watcher.join();
    CHECK(codes["placed"] == 57);
    CHECK(codes["insufficient_funds"] == 143);
    CHECK(codes.size() == 2);
    for (const auto& [code, n] : codes) {
        MESSAGE(code << ": " << n);
    }
    CHECK_FALSE(negative_seen.load());
    CHECK(e.scalar("SELECT available FROM accounts WHERE account_id = 1") == 0);
    CHECK(e.scalar("SELECT reserved FROM accounts WHERE account_id = 1") == 5700);
    CHECK(e.scalar("SELECT count(*) FROM bets") == 57);
    CHECK(e.scalar("SELECT count(*) FROM idempotency_keys") == 200);
    CHECK(e.scalar("SELECT count(*) FROM outbox WHERE topic = 'bet_placed'") == 57);
    CHECK(e.placement_metrics().placed.value() == 57);
    CHECK(e.placement_metrics().rejected.value() == 143);
    e.check_invariants();
}

TEST_CASE("every retry returns the stored first result with replayed true") {
    placement_engine e;
    e.add_market(10, 1001, "2.50");
    e.deposit(1, 1500);
    auto c = open_bets(e.port(), 1);

    const auto first = request(c, place("c1", "key-1", 1001, "10.00", "2.50"));
    REQUIRE(first["type"] == "placed");
    CHECK(first["id"] == "c1");
    CHECK(first["replayed"] == false);
    CHECK(first["bet"]["account_id"] == 1);
    CHECK(first["bet"]["market_id"] == 10);
    CHECK(first["bet"]["selection_id"] == 1001);
    CHECK(first["bet"]["stake"] == "10.00");
    CHECK(first["bet"]["odds"] == "2.50");
    CHECK(first["balance"] == json{{"available", "5.00"}, {"reserved", "10.00"}});
    for (int i = 0; i < 3; ++i) {
        auto again = request(c, place("c1", "key-1", 1001, "10.0", "2.5"));
        CHECK(again["replayed"] == true);
        CHECK(without(again, "replayed") == without(first, "replayed"));
    }

    // A refusal is stored too, and stays refused after a deposit.
    const auto refused = request(c, place("c2", "key-2", 1001, "10.00", "2.50"));
    CHECK(refused == json{{"type", "rejected"},
                          {"id", "c2"},
                          {"code", "insufficient_funds"},
                          {"message", "the available balance is below the stake"},
                          {"replayed", false}});
    e.deposit(1, 10000);
    const auto refused_again = request(c, place("c2", "key-2", 1001, "10.00", "2.50"));
    CHECK(refused_again["code"] == "insufficient_funds");
    CHECK(refused_again["replayed"] == true);

    // The same key with other parameters is refused and changes nothing.
    const auto reused = request(c, place("c3", "key-1", 1001, "11.00", "2.50"));
    CHECK(reused["type"] == "rejected");
    CHECK(reused["code"] == "idempotency_key_reused");
    CHECK_FALSE(reused.contains("replayed"));
    CHECK(request(c, place("c4", "key-1", 1001, "10.00", "2.50", "any"))["code"] ==
          "idempotency_key_reused");

    // Keys are scoped to the account: another account's key-1 is a new placement.
    e.deposit(2, 1000);
    auto other = open_bets(e.port(), 2);
    const auto theirs = request(other, place("o1", "key-1", 1001, "10.00", "2.50"));
    CHECK(theirs["type"] == "placed");
    CHECK(theirs["replayed"] == false);

    CHECK(e.scalar("SELECT count(*) FROM bets") == 2);
    CHECK(e.scalar("SELECT available FROM accounts WHERE account_id = 1") == 10500);
    CHECK(e.placement_metrics().replayed.value() == 4);
    CHECK(e.placement_metrics().key_reused.value() == 2);
    e.check_invariants();
}

TEST_CASE("two simultaneous requests with one key make one bet and identical replies") {
    placement_engine e;
    e.add_market(10, 1001, "3.00");
    e.deposit(1, 100000);
    for (int round = 0; round < 10; ++round) {
        auto a = open_bets(e.port(), 1);
        auto b = open_bets(e.port(), 1);
        const auto key = "same-" + std::to_string(round);
        const auto message = place("x", key, 1001, "5.00", "3.00");
        a.send_text(message.dump());
        b.send_text(message.dump());
        const auto ra = read_json(a);
        const auto rb = read_json(b);
        REQUIRE(ra["type"] == "placed");
        REQUIRE(rb["type"] == "placed");
        CHECK(without(ra, "replayed") == without(rb, "replayed"));
        CHECK(ra["replayed"] != rb["replayed"]);
        CHECK(e.scalar("SELECT count(*) FROM bets WHERE idempotency_key = '" + key + "'") == 1);
    }
    CHECK(e.scalar("SELECT count(*) FROM bets") == 10);
    e.check_invariants();
}

TEST_CASE("a held balance row lock makes the placement retry and then succeed") {
    // Retries enough for a slow machine: the lock is let go once the placement has timed out on
    // it, and what follows must not run out of retries first.
    placement_engine e([](fulltime::config& cfg) { cfg.placement.lock_retries_max = 200; });
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 10000);
    auto c = open_bets(e.port(), 1);
    // Every actor opens its connection first, so that what the placement waits for below is
    // the lock only.
    for (int i = 0; i < 4; ++i) {
        REQUIRE(request(c, place("w", "warm-" + std::to_string(i), 1001, "1.00", "2.00"))["type"] ==
                "placed");
    }
    // Holds account 1's row until the placement's last step has waited its 50 ms and timed out
    // on it at least once, then lets go; the placement retries with the same key and succeeds.
    // An event, not a duration: on a loaded machine a lock held for a fixed time could be gone
    // before the placement reached it.
    std::unique_ptr<PGconn, decltype(&PQfinish)> holder_conn(PQconnectdb(e.url().c_str()),
                                                             &PQfinish);
    REQUIRE(PQstatus(holder_conn.get()) == CONNECTION_OK);
    PQclear(PQexec(holder_conn.get(),
                   "BEGIN; UPDATE accounts SET available = available WHERE account_id = 1"));
    REQUIRE(eventually_locked(e));
    std::thread holder([&] {
        fulltime::test::eventually([&] { return e.placement_metrics().lock_timeouts.value() >= 1; },
                                   60s);
        PQclear(PQexec(holder_conn.get(), "COMMIT"));
    });
    const auto r = request(c, place("p1", "locked-1", 1001, "1.00", "2.00"));
    holder.join();
    CHECK(r["type"] == "placed");
    CHECK(r["replayed"] == false);
    CHECK(e.placement_metrics().lock_timeouts.value() >= 1);
    CHECK(e.placement_metrics().retries.value() >= 1);
    CHECK(e.placement_metrics().busy.value() == 0);
    CHECK(e.scalar("SELECT count(*) FROM bets WHERE idempotency_key = 'locked-1'") == 1);
    CHECK(e.scalar("SELECT count(*) FROM bets") == 5);
    e.check_invariants();
}

TEST_CASE("a balance row lock held too long makes the placement answer busy within its bound") {
    placement_engine e;
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 10000);
    auto c = open_bets(e.port(), 1);
    std::thread holder([&] {
        e.exec(
            "BEGIN; UPDATE accounts SET available = available WHERE account_id = 1;"
            "SELECT pg_sleep(1.5); COMMIT;");
    });
    REQUIRE(eventually_locked(e));
    const auto start = steady::now();
    const auto r = request(c, place("p1", "locked-2", 1001, "1.00", "2.00"));
    const auto elapsed = steady::now() - start;
    CHECK(r["type"] == "rejected");
    CHECK(r["code"] == "busy");
    CHECK_FALSE(r.contains("replayed"));
    // Four attempts of 50 ms each, plus round trips: well under the 1.5 s the lock is held.
    const auto bound = std::chrono::milliseconds(
        (e.cfg().placement.lock_retries_max + 1) * e.cfg().placement.lock_timeout_ms + 400);
    CHECK(elapsed < bound);
    CHECK(e.placement_metrics().lock_timeouts.value() == e.cfg().placement.lock_retries_max + 1);
    CHECK(e.placement_metrics().busy_locked.value() == 1);
    // Nothing of the busy placement stayed: no key, no bet.
    CHECK(e.scalar("SELECT count(*) FROM idempotency_keys") == 0);
    CHECK(e.scalar("SELECT count(*) FROM bets") == 0);
    holder.join();
    // The client's retry with the same key places the bet once.
    const auto retry = request(c, place("p2", "locked-2", 1001, "1.00", "2.00"));
    CHECK(retry["type"] == "placed");
    CHECK(retry["replayed"] == false);
    CHECK(request(c, place("p3", "locked-2", 1001, "1.00", "2.00"))["replayed"] == true);
    CHECK(e.scalar("SELECT count(*) FROM bets") == 1);
    e.check_invariants();
}

asio::awaitable<bool> stop_placement(fulltime::actors::placement_service* placement) {
    placement->stop();
    co_return true;
}

TEST_CASE("stopping the placement actors answers every placement, queued or running") {
    placement_engine e([](fulltime::config& cfg) {
        cfg.placement.lock_timeout_ms = 3000;
        cfg.placement.lock_retries_max = 0;
    });
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 10000);
    auto c = open_bets(e.port(), 1);
    std::thread holder([&] {
        e.exec(
            "BEGIN; UPDATE accounts SET available = available WHERE account_id = 1;"
            "SELECT pg_sleep(1); COMMIT;");
    });
    REQUIRE(eventually_locked(e));
    // The first group waits on the lock; the others queue behind it in the account's actor.
    constexpr int sent = 10;
    for (int i = 0; i < sent; ++i) {
        c.send_text(
            place("s" + std::to_string(i), "stop-" + std::to_string(i), 1001, "1.00", "2.00")
                .dump());
    }
    std::this_thread::sleep_for(200ms);
    REQUIRE(e.on_loop(stop_placement(&e.placement())));
    std::map<std::string, int> answers;
    for (int i = 0; i < sent; ++i) {
        auto j = read_json(c, 5s);
        ++answers[j["type"] == "placed" ? std::string("placed")
                                        : j.value("code", std::string("?"))];
    }
    holder.join();
    for (const auto& [code, n] : answers) {
        MESSAGE(code << ": " << n);
    }
    // Each got an answer: busy (shutting down) for the queued ones, and the running group its
    // own outcome once the lock was released.
    CHECK(answers["placed"] + answers["busy"] == sent);
    CHECK(answers["busy"] >= 1);
    CHECK(e.scalar("SELECT count(*) FROM bets") == answers["placed"]);
    // A placement after the stop is answered busy at once, not left waiting.
    CHECK(request(c, place("after", "stop-after", 1001, "1.00", "2.00"))["code"] == "busy");
    e.check_invariants();
}

TEST_CASE("each placement actor opens its connection at start and keeps trying until it can") {
    SUBCASE("the database answers: every actor holds a connection before any bet") {
        placement_engine e;
        REQUIRE(fulltime::test::eventually([&] { return e.placement().opened(); }));
        const auto placement = e.pools().stats().front();
        REQUIRE(placement.name == "placement");
        CHECK(placement.in_use == e.placement().actor_count());
        CHECK(placement.connect_failures_total == 0);
    }
    SUBCASE("nothing listens: the actors try again, and the service never says opened") {
        fulltime::test::engine e(
            {.placement = true,
             .pools_url = "host=127.0.0.1 port=1 dbname=nothing",
             .migrate = false},
            placement_config, [](fulltime::config& cfg) { cfg.database.connect_timeout_ms = 200; });
        // Every actor failed, paused and failed again: twice as many failed connects.
        REQUIRE(fulltime::test::eventually(
            [&] {
                return e.pools().stats().front().connect_failures_total >=
                       2 * e.placement().actor_count();
            },
            10s));
        CHECK_FALSE(e.placement().opened());
        // The fixture stops the service on the way out: the actors' pauses end at once.
    }
}

TEST_CASE("a market suspended between two placements refuses the second") {
    placement_engine e;
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 10000);
    auto c = open_bets(e.port(), 1);
    CHECK(request(c, place("a", "s1", 1001, "1.00", "2.00"))["type"] == "placed");
    e.exec("UPDATE markets SET status = 'suspended' WHERE market_id = 10");
    const auto r = request(c, place("b", "s2", 1001, "1.00", "2.00"));
    CHECK(r == json{{"type", "rejected"},
                    {"id", "b"},
                    {"code", "market_suspended"},
                    {"message", "market 10 is suspended"},
                    {"replayed", false}});
    e.exec("UPDATE markets SET status = 'open' WHERE market_id = 10");
    // The refusal is the key's first result: resuming the market does not change it.
    CHECK(request(c, place("b", "s2", 1001, "1.00", "2.00"))["code"] == "market_suspended");
    CHECK(request(c, place("c", "s3", 1001, "1.00", "2.00"))["type"] == "placed");
    e.exec("UPDATE markets SET status = 'closed' WHERE market_id = 10");
    CHECK(request(c, place("d", "s4", 1001, "1.00", "2.00"))["message"] == "market 10 is closed");
    CHECK(request(c, place("e", "s5", 9999, "1.00", "2.00"))["code"] == "unknown_selection");
    CHECK(e.scalar("SELECT count(*) FROM bets") == 2);
    CHECK(e.scalar("SELECT available FROM accounts WHERE account_id = 1") == 9800);
    e.check_invariants();
}

TEST_CASE("odds changes are judged by each accept policy") {
    placement_engine e;
    e.add_market(10, 1001, "2.50");
    e.deposit(1, 100000);
    auto c = open_bets(e.port(), 1);
    // The odds drift down to 2.40: only `any` takes the bet, at 2.40.
    e.exec("UPDATE selections SET odds = 24000 WHERE selection_id = 1001");
    auto r = request(c, place("1", "o1", 1001, "10.00", "2.50"));
    CHECK(r["code"] == "odds_changed");
    CHECK(r["message"] == "the odds are now 2.40");
    r = request(c, place("2", "o2", 1001, "10.00", "2.50", "exact"));
    CHECK(r["code"] == "odds_changed");
    r = request(c, place("3", "o3", 1001, "10.00", "2.50", "better"));
    CHECK(r["code"] == "odds_changed");
    r = request(c, place("4", "o4", 1001, "10.00", "2.50", "any"));
    REQUIRE(r["type"] == "placed");
    CHECK(r["bet"]["odds"] == "2.40");
    // The odds drift up to 2.60: `better` and `any` take it at 2.60, `exact` refuses.
    e.exec("UPDATE selections SET odds = 26000 WHERE selection_id = 1001");
    r = request(c, place("5", "o5", 1001, "10.00", "2.50", "exact"));
    CHECK(r["message"] == "the odds are now 2.60");
    r = request(c, place("6", "o6", 1001, "10.00", "2.50", "better"));
    REQUIRE(r["type"] == "placed");
    CHECK(r["bet"]["odds"] == "2.60");
    r = request(c, place("7", "o7", 1001, "10.00", "2.50", "any"));
    CHECK(r["bet"]["odds"] == "2.60");
    r = request(c, place("8", "o8", 1001, "10.00", "2.60"));
    CHECK(r["type"] == "placed");
    CHECK(e.scalar("SELECT count(*) FROM bets") == 4);
    e.check_invariants();
}

TEST_CASE("exposure shards keep the market under its liability limit under concurrency") {
    placement_engine e;
    // Limit 100.00 over 4 shards of 25.00; each bet of 10.00 at 2.00 is 10.00 of liability,
    // so a shard takes two bets and the market at most eight.
    e.add_market(10, 1001, "2.00", 10000, 4);
    e.deposit(1, 1000000);
    constexpr int connections = 8;
    constexpr int per_connection = 5;
    std::mutex mutex;
    std::map<std::string, int> codes;
    std::vector<std::thread> threads;
    for (int t = 0; t < connections; ++t) {
        threads.emplace_back([&, t] {
            auto c = open_bets(e.port(), 1);
            for (int i = 0; i < per_connection; ++i) {
                const auto key = "x" + std::to_string(t) + "-" + std::to_string(i);
                c.send_text(place(key, key, 1001, "10.00", "2.00").dump());
            }
            // A `busy` (the pool had no connection in time on a loaded machine) is retried
            // with the same key, as the protocol tells a client to.
            for (int answered = 0; answered < per_connection;) {
                auto j = read_json(c, 20s);
                if (j.value("code", std::string()) == "busy") {
                    const auto key = j["id"].get<std::string>();
                    c.send_text(place(key, key, 1001, "10.00", "2.00").dump());
                    continue;
                }
                ++answered;
                std::lock_guard lock(mutex);
                ++codes[j["type"] == "placed" ? std::string("placed")
                                              : j.value("code", std::string("?"))];
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    for (const auto& [code, n] : codes) {
        MESSAGE(code << ": " << n);
    }
    CHECK(codes["placed"] + codes["liability_limit"] == connections * per_connection);
    // One account, so one placement actor and one preferred shard: once it is full, each bet
    // spills to the emptiest other shard, so every shard takes two bets and none a third.
    CHECK(codes["placed"] == 8);
    CHECK(e.scalar(
              "SELECT count(*) FROM market_exposure WHERE market_id = 10 AND liability = 2000") ==
          4);
    CHECK(e.scalar("SELECT sum(liability) FROM market_exposure WHERE market_id = 10") ==
          codes["placed"] * 1000);
    CHECK(e.scalar("SELECT sum(liability) FROM market_exposure WHERE market_id = 10") <= 10000);
    // A bet larger than the whole market's limit is refused before any write.
    auto c = open_bets(e.port(), 1);
    CHECK(request(c, place("big", "big", 1001, "200.00", "2.00"))["code"] == "liability_limit");
    e.check_invariants();
}

TEST_CASE("malformed bet messages get their documented errors over a real websocket") {
    placement_engine e;
    e.add_market(10, 1001, "2.00", 100'000'000'000, 4, 100, 100000);
    e.deposit(1, 100000);
    auto c = open_bets(e.port(), 1);

    c.send_text("{not json");
    auto r = read_json(c);
    CHECK(r == json{{"type", "error"},
                    {"id", nullptr},
                    {"code", "invalid_json"},
                    {"message", "message is not valid JSON"}});

    auto with = [](json m, const char* field, json value) {
        m[field] = std::move(value);
        return m;
    };
    auto without_field = [](json m, const char* field) {
        m.erase(field);
        return m;
    };
    const json ok = place("bad", "bad-key", 1001, "10.00", "2.00");
    const std::vector<std::pair<json, std::string>> cases = {
        {without_field(ok, "stake"), "missing \"stake\""},
        {without_field(ok, "idempotency_key"), "missing \"idempotency_key\""},
        {with(ok, "stake", 10), "\"stake\" must be a string"},
        {with(ok, "stake", "0"), "greater than zero"},
        {with(ok, "stake", "-1.00"), "negative"},
        {with(ok, "stake", "1.001"), "decimal places"},
        {with(ok, "stake", "92233720368547758.07"), "too large"},
        {with(ok, "odds", "1.00"), "at least 1.01"},
        {with(ok, "idempotency_key", ""), "must not be empty"},
        {with(ok, "idempotency_key", std::string(300, 'k')), "longer than 255 bytes"},
        {with(ok, "accept", "sometimes"), "\"accept\" must be"},
        {with(ok, "selection_id", "1001"), "positive integer"},
        {with(ok, "selection_id", -3), "positive integer"},
        {with(ok, "account_id", 2), "a bet-client token acts on its own account only"},
        {with(ok, "colour", "blue"), "unknown field \"colour\""},
        {json{{"type", "balance"}, {"id", "bad"}, {"account_id", 2}}, "own account only"},
        {json{{"type", "bets"}, {"id", "bad"}, {"limit", 0}}, "\"limit\" must be"},
        {json{{"type", "bets"}, {"id", "bad"}, {"limit", 201}}, "\"limit\" must be"},
        {json{{"type", "bets"}, {"id", "bad"}, {"status", "won"}}, "\"status\" must be"},
    };
    for (const auto& [message, expected] : cases) {
        r = request(c, message);
        CHECK_MESSAGE(r["type"] == "error", message.dump());
        CHECK(r["id"] == "bad");
        CHECK(r["code"] == "invalid_request");
        CHECK_MESSAGE(r["message"].get<std::string>().find(expected) != std::string::npos,
                      r["message"] << " lacks " << expected);
    }
    // Refusals of the market's own rules come as `rejected`.
    CHECK(request(c, with(ok, "stake", "0.50"))["code"] == "stake_limit");
    CHECK(request(c, with(with(ok, "stake", "0.50"), "idempotency_key", "s2"))["message"] ==
          "the stake must be between 1.00 and 1000.00");
    CHECK(request(c, with(with(ok, "selection_id", 77), "idempotency_key", "u1"))["code"] ==
          "unknown_selection");
    // Nothing was written by the invalid requests, and the connection still works.
    CHECK(e.scalar("SELECT count(*) FROM idempotency_keys") == 3);
    CHECK(e.placement_metrics().invalid.value() == 15);
    r = request(c, json{{"type", "balance"}, {"id", 9}});
    CHECK(r == json{{"type", "balance"},
                    {"id", 9},
                    {"available", "1000.00"},
                    {"reserved", "0.00"},
                    {"currency", "EUR"}});
    r = request(c, place("good", "good", 1001, "10.00", "2.00"));
    CHECK(r["type"] == "placed");
    e.check_invariants();
}

TEST_CASE("a flood past the in-flight limit gets busy and the connection stays usable") {
    placement_engine e([](fulltime::config& cfg) { cfg.gateway.inflight_per_connection_max = 2; });
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 1000000);
    auto c = open_bets(e.port(), 1);
    constexpr int flood = 60;
    for (int i = 0; i < flood; ++i) {
        c.send_text(place(std::to_string(i), "f" + std::to_string(i), 1001, "1.00", "2.00").dump());
    }
    std::map<std::string, int> codes;
    std::set<std::string> placed_ids;
    for (int i = 0; i < flood; ++i) {
        auto r = read_json(c);
        if (r["type"] == "placed") {
            placed_ids.insert(r["id"].get<std::string>());
            ++codes["placed"];
        } else {
            ++codes[r["code"].get<std::string>()];
            CHECK(r["message"] == "too many requests in flight");
        }
    }
    CHECK(codes["busy"] > 0);
    CHECK(codes["placed"] + codes["busy"] == flood);
    CHECK(e.scalar("SELECT count(*) FROM bets") == codes["placed"]);
    // A busy request never ran: its retry with the same key places it now.
    for (int i = 0; i < flood; ++i) {
        if (placed_ids.count(std::to_string(i)) == 0) {
            auto r =
                request(c, place(std::to_string(i), "f" + std::to_string(i), 1001, "1.00", "2.00"));
            CHECK(r["type"] == "placed");
            CHECK(r["replayed"] == false);
            break;
        }
    }
    CHECK(request(c, json{{"type", "balance"}, {"id", "b"}})["type"] == "balance");
    e.check_invariants();
}

TEST_CASE("balance and bets answer from the primary for the token's account") {
    placement_engine e;
    e.add_market(10, 1001, "2.00");
    e.add_market(11, 1101, "3.00");
    e.deposit(1, 10000);
    e.deposit(2, 10000);
    auto c = open_bets(e.port(), 1);
    auto other = open_bets(e.port(), 2);
    for (int i = 0; i < 5; ++i) {
        REQUIRE(request(c, place("p", "b" + std::to_string(i), i % 2 ? 1101 : 1001, "1.50",
                                 i % 2 ? "3.00" : "2.00"))["type"] == "placed");
    }
    REQUIRE(request(other, place("p", "b0", 1001, "2.00", "2.00"))["type"] == "placed");
    auto r = request(c, json{{"type", "balance"}, {"id", "bal"}, {"account_id", 1}});
    CHECK(r == json{{"type", "balance"},
                    {"id", "bal"},
                    {"available", "92.50"},
                    {"reserved", "7.50"},
                    {"currency", "EUR"}});
    r = request(c, json{{"type", "bets"}, {"id", "l"}});
    REQUIRE(r["bets"].size() == 5);
    CHECK(r["bets"][0]["bet_id"].get<std::int64_t>() > r["bets"][4]["bet_id"].get<std::int64_t>());
    CHECK(r["bets"][0]["status"] == "open");
    CHECK(r["bets"][0]["stake"] == "1.50");
    CHECK(r["bets"][0]["account_id"] == 1);
    r = request(c, json{{"type", "bets"}, {"id", "l"}, {"limit", 2}, {"status", "open"}});
    CHECK(r["bets"].size() == 2);
    // A full page says where the next starts; the last page says there is none.
    REQUIRE(r["next_before"].is_number_integer());
    CHECK(r["next_before"] == r["bets"][1]["bet_id"]);
    r = request(
        c, json{{"type", "bets"}, {"id", "l"}, {"status", "open"}, {"before", r["next_before"]}});
    CHECK(r["bets"].size() == 3);
    CHECK(r["next_before"].is_null());
    r = request(c, json{{"type", "bets"}, {"id", "l"}, {"status", "settled"}});
    CHECK(r ==
          json{{"type", "bets"}, {"id", "l"}, {"bets", json::array()}, {"next_before", nullptr}});
    auto none = open_bets(e.port(), 77);
    r = request(none, json{{"type", "balance"}, {"id", 1}});
    CHECK(r["code"] == "invalid_request");
    r = request(none, place("p", "k", 1001, "1.00", "2.00"));
    CHECK(r["code"] == "insufficient_funds");
    CHECK(r["message"] == "the account does not exist");
    e.check_invariants();
}

TEST_CASE("the purge actor deletes old keys in batches and keeps fresh ones") {
    placement_engine e([](fulltime::config& cfg) {
        cfg.placement.idempotency_retention_s = 3600;
        cfg.placement.purge_batch_max = 2;
    });
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 10000);
    auto c = open_bets(e.port(), 1);
    for (int i = 0; i < 8; ++i) {
        REQUIRE(request(c, place("p", "q" + std::to_string(i), 1001, "1.00", "2.00"))["type"] ==
                "placed");
    }
    e.exec(
        "UPDATE idempotency_keys SET created_at = now() - interval '2 hours' "
        "WHERE idempotency_key IN ('q0', 'q1', 'q2', 'q3', 'q4')");
    const auto deleted = e.on_loop(e.placement().purge_now());
    REQUIRE(deleted.has_value());
    CHECK(*deleted == 5);
    CHECK(e.placement_metrics().purged_keys.value() == 5);
    CHECK(e.placement_metrics().purge_batches.value() == 3);  // 2 + 2 + 1
    CHECK(e.scalar("SELECT count(*) FROM idempotency_keys") == 3);
    CHECK(e.scalar("SELECT count(*) FROM idempotency_keys WHERE idempotency_key = 'q7'") == 1);
    // Bets are history and stay; only the keys expire.
    CHECK(e.scalar("SELECT count(*) FROM bets") == 8);
    CHECK(e.on_loop(e.placement().purge_now()) == std::optional<std::int64_t>(0));
    CHECK(e.metrics_text().find("fulltime_idempotency_keys_purged_total 5") != std::string::npos);
    e.check_invariants();
}

TEST_CASE("the purge actor runs on its own interval") {
    placement_engine e([](fulltime::config& cfg) {
        cfg.placement.idempotency_retention_s = 60;
        cfg.placement.purge_interval_ms = 100;
    });
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 10000);
    auto c = open_bets(e.port(), 1);
    REQUIRE(request(c, place("p", "old", 1001, "1.00", "2.00"))["type"] == "placed");
    REQUIRE(request(c, place("p", "new", 1001, "1.00", "2.00"))["type"] == "placed");
    e.exec(
        "UPDATE idempotency_keys SET created_at = now() - interval '1 day' "
        "WHERE idempotency_key = 'old'");
    CHECK(fulltime::test::eventually(
        [&] { return e.scalar("SELECT count(*) FROM idempotency_keys") == 1; }));
    CHECK(e.scalar("SELECT count(*) FROM idempotency_keys WHERE idempotency_key = 'new'") == 1);
}

TEST_CASE("placement metrics appear in the Prometheus text") {
    placement_engine e;
    e.add_market(10, 1001, "2.00");
    e.deposit(1, 1000);
    auto c = open_bets(e.port(), 1);
    REQUIRE(request(c, place("p", "m1", 1001, "1.00", "2.00"))["type"] == "placed");
    const auto text = e.metrics_text();
    for (const char* needle :
         {"fulltime_placements_total{outcome=\"placed\"} 1",
          "fulltime_placement_lock_timeouts_total 0", "fulltime_placement_busy_total{reason=",
          "fulltime_placement_latency_seconds_bucket{le=\"+Inf\"} 1",
          "fulltime_placement_stage_seconds_count{stage=\"parse\"} 1",
          "fulltime_placement_stage_seconds_count{stage=\"queue\"} 1",
          "fulltime_placement_stage_seconds_count{stage=\"database\"} 1",
          "fulltime_placement_stage_seconds_bucket{stage=\"database\",le=\"+Inf\"} 1"}) {
        CHECK_MESSAGE(text.find(needle) != std::string::npos, needle);
    }
    // The write and total stages are recorded once the reply left the socket, which the
    // client may see before the engine's writer resumes.
    CHECK(fulltime::test::eventually([&] {
        return e.metrics_text().find("fulltime_placement_stage_seconds_count{stage=\"total\"} 1") !=
               std::string::npos;
    }));
}
