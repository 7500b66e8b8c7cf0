// The settlement path inside one process: the real settlement actors on a CAF runtime and real
// pools on a scratch database with the engine's migrations. Events are stored with the same SQL
// function the feed calls (fulltime_record_result) and the service is notified as the feed
// does; bets are placed with the placement's own function. Every scenario ends with the money
// invariants of docs/design.md (tests/support/invariants.hpp).

#include "fulltime/actors/settlement.hpp"
#include "fulltime/config/config.hpp"
#include "fulltime/core/metrics.hpp"
#include "support/engine_fixture.hpp"
#include "support/invariants.hpp"
#include "support/test_config.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// The settlement actors on the engine's pools (tests/support/engine_fixture.hpp), with the
// database settings of tests that settle thousands of bets in one go.
class settlement_engine : public fulltime::test::engine {
public:
    explicit settlement_engine(const std::function<void(fulltime::config&)>& configure = {})
        : fulltime::test::engine({.settlement = true}, fulltime::test::use_batch_database,
                                 configure) {}

    /// Stores an event as the feed does and notifies the service; returns the outcome.
    std::string record(std::int64_t market, int seq, const std::string& key,
                       const std::string& kind, const std::string& payload) {
        auto outcome = text("SELECT outcome FROM fulltime_record_result(" + std::to_string(market) +
                            ", " + std::to_string(seq) + ", '" + key + "', '" + kind + "', '" +
                            payload + "'::jsonb, 'test')");
        settlement().notify(market);
        return outcome;
    }

    /// Places `bets` bets of 1.00 at odds 2.00 with the placement's own function: bet g (from
    /// 0) by account g % accounts + 1, keyed `prefix` || g, on the selection that
    /// `selection_sql` (an SQL expression of g) names.
    void place_many(int bets, int accounts, const std::string& prefix,
                    const std::string& selection_sql) {
        exec("SELECT count(*) FROM (SELECT (fulltime_place((g % " + std::to_string(accounts) +
             ") + 1, '" + prefix + "' || g, 'fp', " + selection_sql +
             ", 100, 2, 0, 'any', 1000, 0)).outcome FROM generate_series(0, " +
             std::to_string(bets - 1) + ") g) x");
    }

    std::int64_t available(std::int64_t account) const {
        return scalar("SELECT available FROM accounts WHERE account_id = " +
                      std::to_string(account));
    }
    std::int64_t reserved(std::int64_t account) const {
        return scalar("SELECT reserved FROM accounts WHERE account_id = " +
                      std::to_string(account));
    }
};

/// Returns a result payload in which `selection` wins outright.
std::string wins(int selection) {
    return R"({"outcomes":[{"selection_id":)" + std::to_string(selection) +
           R"(,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
}

}  // namespace

TEST_CASE("each outcome kind pays its hand-computed payout") {
    settlement_engine e;
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
    CHECK(e.bet_state("half-won") == "half_won 1750");
    // 10.00 at 3.10, half void, lost: 5.00 back.
    CHECK(e.bet_state("half-lost") == "half_lost 500");
    // 10.00 at 1.90, dead heat 0.5: 10.00 * 0.5 * 1.90 = 9.50.
    CHECK(e.bet_state("dead-heat") == "dead_heat 950");
    // 1.00 at 2.55, dead heat 0.3333: 100 * 0.3333 * 2.55 = 84.99 cents, floored to 84.
    CHECK(e.bet_state("rounding") == "dead_heat 84");
    CHECK(e.bet_state("void") == "void 1000");
    CHECK(e.bet_state("lost") == "lost 0");
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
    CHECK(e.bet_state("won") == "won 2500");
    CHECK(e.bet_state("lost-2") == "lost 0");
    // A result suspends the market: a later bet is refused.
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 2") == "suspended");
    CHECK(e.text("SELECT (fulltime_place(1, 'late', 'fp', 21, 1000, 2, 0, 'any', 1000, 0))"
                 ".response->>'code'") == "market_suspended");
    e.check_money_invariants();
}

TEST_CASE("duplicates are ignored and events apply in seq order after a gap") {
    settlement_engine e;
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.fund(1, 10, 10000);
    for (int a = 1; a <= 10; ++a) {
        REQUIRE(e.place(a, "k" + std::to_string(a), a % 2 ? 11 : 12, 1000) == "placed");
    }
    const std::string win11 = wins(11);
    // seq 2 arrives first: it waits for seq 1.
    CHECK(e.record(1, 2, "rb-2", "rollback_result", "{}") == "stored");
    CHECK(e.record(1, 4, "rc-4", "rollback_cancel", "{}") == "stored");
    std::this_thread::sleep_for(500ms);
    CHECK(e.applied(1) == 0);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == 0);
    CHECK(e.settlement_metrics().backlog_events.value() >= 2);
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
        CHECK(e.bet_state("k" + std::to_string(a)) == "open");
        CHECK(e.available(a) == 9000);
        CHECK(e.reserved(a) == 1000);
    }
    std::this_thread::sleep_for(400ms);  // a scan after the last event
    CHECK(e.settlement_metrics().backlog_events.value() == 0);
    e.check_money_invariants();
}

TEST_CASE("a correction a rollback and a windowed cancel on a settled market keep the books") {
    settlement_engine e;
    e.add_market(1, {{11, 30000}, {12, 15000}});
    e.fund(1, 2, 10000);
    REQUIRE(e.place(1, "a-early", 11, 1000) == "placed");
    REQUIRE(e.place(2, "b-early", 12, 1000) == "placed");
    std::this_thread::sleep_for(50ms);
    const std::string window_start = e.text(
        "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')");
    REQUIRE(e.place(1, "a-late", 11, 2000) == "placed");
    const std::string home = wins(11);
    const std::string away = wins(12);
    REQUIRE(e.record(1, 1, "r1", "result", home) == "stored");
    REQUIRE(e.wait_applied(1, 1));
    // Home won: account 1 staked 30.00 and gets 90.00; account 2 lost 10.00.
    CHECK(e.available(1) == 10000 - 3000 + 9000);
    CHECK(e.available(2) == 9000);
    e.check_money_invariants();

    // Correction: away won. Account 1's winnings are reversed, account 2 gets 15.00.
    REQUIRE(e.record(1, 2, "r2", "result", away) == "stored");
    REQUIRE(e.wait_applied(1, 2));
    CHECK(e.bet_state("a-early") == "lost 0");
    CHECK(e.bet_state("b-early") == "won 1500");
    CHECK(e.available(1) == 7000);
    CHECK(e.available(2) == 9000 + 1500);
    CHECK(e.scalar("SELECT max(version) FROM bet_settlements") == 2);
    e.check_money_invariants();

    // Cancel the bets placed from window_start on: only a-late is voided (its stake back).
    REQUIRE(e.record(1, 3, "c3", "cancel", R"({"start_time":")" + window_start + R"("})") ==
            "stored");
    REQUIRE(e.wait_applied(1, 3));
    CHECK(e.bet_state("a-late") == "void 2000");
    CHECK(e.bet_state("a-early") == "lost 0");
    CHECK(e.available(1) == 9000);
    e.check_money_invariants();

    // Roll the cancel back: a-late is settled again with the result in force (away won).
    REQUIRE(e.record(1, 4, "rc4", "rollback_cancel",
                     R"({"start_time":")" + window_start + R"("})") == "stored");
    REQUIRE(e.wait_applied(1, 4));
    CHECK(e.bet_state("a-late") == "lost 0");
    CHECK(e.available(1) == 7000);
    e.check_money_invariants();

    // Roll the result back: every bet is open again, the stakes reserved.
    REQUIRE(e.record(1, 5, "rb5", "rollback_result", "{}") == "stored");
    REQUIRE(e.wait_applied(1, 5));
    CHECK(e.bet_state("a-early") == "open");
    CHECK(e.bet_state("a-late") == "open");
    CHECK(e.bet_state("b-early") == "open");
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
    e.check_money_invariants();
}

namespace {

// Checks the outbox of a settled market of `bets` bets: one row per step, listing its bets.
void check_settlement_batches(settlement_engine& e, int bets) {
    // Every bet announced once, to its account, with the settlement row's version, outcome and
    // payout.
    CHECK(e.scalar("SELECT count(*) FROM outbox WHERE topic IN ('bet_settled', 'bet_unsettled')") ==
          0);
    CHECK(e.scalar("SELECT count(*) FROM outbox WHERE topic = 'settlement_batch'") < bets / 10);
    // The entries are parallel arrays: entry i is element i of each, and every array of a row
    // has as many elements as its bet ids.
    const std::string entries =
        "FROM outbox o CROSS JOIN LATERAL jsonb_to_record(o.payload) AS c(account_id bigint[], "
        "bet_id bigint[], version integer[], kind text[], outcome text[], payout bigint[]) "
        "CROSS JOIN LATERAL unnest(c.account_id, c.bet_id, c.version, c.kind, c.outcome, "
        "c.payout) AS s(account_id, bet_id, version, kind, outcome, payout) "
        "WHERE o.topic = 'settlement_batch'";
    CHECK(e.scalar("SELECT count(DISTINCT s.bet_id) " + entries +
                   " AND EXISTS (SELECT 1 FROM bets b JOIN bet_settlements t ON t.bet_id = "
                   "b.bet_id WHERE b.bet_id = s.bet_id AND b.account_id = s.account_id AND "
                   "t.version = s.version AND s.kind = 'settle' AND s.outcome = t.outcome AND "
                   "s.payout = t.payout)") == bets);
    CHECK(e.scalar("SELECT count(*) " + entries) == bets);
    CHECK(e.scalar("SELECT count(*) FROM outbox o WHERE o.topic = 'settlement_batch' AND "
                   "(SELECT count(DISTINCT jsonb_array_length(o.payload->k)) FROM unnest("
                   "ARRAY['account_id', 'bet_id', 'version', 'kind', 'outcome', 'payout']) k) "
                   "<> 1") == 0);
    // In bet_id order within each row.
    CHECK(e.scalar("SELECT count(*) FROM outbox o WHERE o.topic = 'settlement_batch' AND "
                   "ARRAY(SELECT jsonb_array_elements_text(o.payload->'bet_id')::bigint) <> "
                   "ARRAY(SELECT x::bigint FROM jsonb_array_elements_text(o.payload->'bet_id') "
                   "x ORDER BY x::bigint)") == 0);
}

}  // namespace

TEST_CASE("a market of 20000 bets settles while placements on other markets go on") {
    settlement_engine e([](fulltime::config& cfg) {
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
    e.place_many(bets, accounts, "big-", "CASE WHEN g % 3 = 0 THEN 11 ELSE 12 END");
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
    REQUIRE(e.record(1, 1, "big-r1", "result", wins(11)) == "stored");
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
    // One outbox row per step, listing its bets.
    check_settlement_batches(e, bets);
    CHECK(e.settlement_metrics().bets.value() == static_cast<std::uint64_t>(bets));
    e.check_money_invariants();
}

TEST_CASE("a market steps back to back in its slot, and hands the slot to a market that waits") {
    // One slot: a market whose event is under way keeps it from batch to batch (no hand-back
    // between steps), until another market asks for one; then it gives it up within
    // limits::settlement_slot_hold_ms, so the small market is applied long before the big one.
    settlement_engine e([](fulltime::config& cfg) {
        cfg.settlement.batch_bets_max = 100;
        cfg.settlement.batches_in_flight = 1;
    });
    constexpr int big = 20000;
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.add_market(2, {{21, 20000}, {22, 20000}});
    e.fund(1, 500, 1000000);
    e.place_many(big, 500, "big-", "11");
    e.place_many(10, 10, "small-", "21");
    REQUIRE(e.record(1, 1, "slot-big", "result", wins(11)) == "stored");
    // The big market is under way (its first batches are in) before the small one asks.
    const auto until = steady::now() + 60s;
    while (e.scalar("SELECT count(*) FROM bet_settlements") < 300 && steady::now() < until) {
        std::this_thread::sleep_for(5ms);
    }
    REQUIRE(e.record(2, 1, "slot-small", "result", wins(21)) == "stored");
    REQUIRE(e.wait_applied(2, 1, 60s));
    const auto big_settled_then = e.scalar(
        "SELECT count(*) FROM bet_settlements s JOIN bets b USING (bet_id) "
        "WHERE b.market_id = 1");
    MESSAGE("the small market was applied when the big one had " << big_settled_then << " of "
                                                                 << big << " bets settled");
    CHECK(big_settled_then < big);
    REQUIRE(e.wait_applied(1, 1, 180s));
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == big + 10);
    // Every batch is counted, whether it ran alone in its slot or back to back with others.
    CHECK(e.settlement_metrics().steps_batch.value() >= static_cast<std::uint64_t>(big / 100));
    CHECK(e.settlement_metrics().bets.value() == static_cast<std::uint64_t>(big + 10));
    CHECK(e.settlement_metrics().steps_finished.value() == 2);
    e.check_money_invariants();
}

// Returns the sum of the settlement steps' times, in seconds, as /metrics renders it.
double step_seconds_sum(const settlement_engine& e) {
    const std::string key = "\nfulltime_settlement_step_latency_seconds_sum ";
    const auto text = e.metrics_text();
    const auto at = text.find(key);
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + key.size()));
}

TEST_CASE("a market at a duty of 25 % rests three times each batch's time before its next one") {
    // The market steps on in its slot and rests there between batches (and after its last one,
    // from the actor): whatever the machine's speed, the event takes at least the steps' time
    // plus three times the batches'. Without the rests it takes about the steps' time.
    settlement_engine e([](fulltime::config& cfg) {
        cfg.settlement.batch_bets_max = 100;
        cfg.settlement.duty_percent = 25;
    });
    constexpr int bets = 2000;
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.fund(1, 200, 1000000);
    e.place_many(bets, 200, "duty-", "11");
    const auto start = steady::now();
    REQUIRE(e.record(1, 1, "duty-r1", "result", wins(11)) == "stored");
    REQUIRE(e.wait_applied(1, 1, 180s));
    const auto wall = std::chrono::duration<double>(steady::now() - start).count();
    const auto steps = step_seconds_sum(e);
    MESSAGE("applied in " << wall << " s; the steps took " << steps << " s");
    CHECK(e.settlement_metrics().steps_batch.value() == bets / 100);
    // The batches are most of the steps' time (the others start and finish the event), so
    // with their rests the event takes well over twice the steps' time.
    CHECK(wall >= 2 * steps);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == bets);
    e.check_money_invariants();
}

// Batches of 20 bets in 3 lanes, a connection each.
void three_lanes_of_20(fulltime::config& cfg) {
    cfg.settlement.batch_bets_max = 20;
    cfg.settlement.lanes = 3;
    cfg.database.settlement.size_max = 3;
}

TEST_CASE("an event of a large market settles in lanes, each bet once, its counts summed") {
    // Batches of 20 in 3 lanes: a market of more than 60 bets is split by account (account_id
    // % 3), each lane's batches on a connection of their own, side by side.
    settlement_engine e(three_lanes_of_20);
    constexpr int bets = 600;
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.fund(1, 40, 100000);
    e.place_many(bets, 40, "lane-", "CASE WHEN g % 2 = 0 THEN 11 ELSE 12 END");
    // A settlement_batch row per batch; in lanes, each row holds the accounts of one lane.
    const std::string mixed_rows =
        "SELECT count(*) FROM outbox o WHERE o.topic = 'settlement_batch' AND (SELECT "
        "count(DISTINCT a::bigint % 3) FROM jsonb_array_elements_text(o.payload->'account_id') "
        "a) > 1";
    const std::string batch_rows = "SELECT count(*) FROM outbox WHERE topic = 'settlement_batch'";

    REQUIRE(e.record(1, 1, "lr1", "result", wins(11)) == "stored");
    REQUIRE(e.wait_applied(1, 1));
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == bets);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements WHERE outcome = 'won' AND payout = 200") ==
          bets / 2);
    CHECK(e.scalar(batch_rows) >= bets / 20);
    CHECK(e.scalar(mixed_rows) == 0);
    // The lanes' rows go with the event; the progress row is back to one lane.
    CHECK(e.scalar("SELECT count(*) FROM settlement_lanes") == 0);
    CHECK(e.scalar("SELECT lanes FROM settlement_progress WHERE market_id = 1") == 1);
    CHECK(e.settlement_metrics().bets.value() == static_cast<std::uint64_t>(bets));
    CHECK(e.settlement_metrics().steps_finished.value() == 1);
    e.check_money_invariants();

    // A correction: every winner reversed, the other half paid, in lanes again.
    REQUIRE(e.record(1, 2, "lr2", "result", wins(12)) == "stored");
    REQUIRE(e.wait_applied(1, 2));
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == 3 * bets);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements WHERE version = 2 AND outcome = 'won' "
                   "AND payout = 300") == bets / 2);
    CHECK(e.scalar(mixed_rows) == 0);
    e.check_money_invariants();

    // Every bet cancelled, then a result for them: each lane skips its bets, and the event's
    // counts are the lanes' summed (one refusal for the whole event).
    REQUIRE(e.record(1, 3, "lc3", "cancel", "{}") == "stored");
    REQUIRE(e.wait_applied(1, 3));
    REQUIRE(e.record(1, 4, "lr4", "result", wins(11)) == "stored");
    REQUIRE(e.wait_applied(1, 4));
    CHECK(e.text("SELECT skipped::text || ' ' || refusal FROM result_events WHERE seq = 4") ==
          R"({"bet_cancelled": 600} bet_cancelled)");
    CHECK(e.scalar("SELECT count(*) FROM bets b WHERE b.market_id = 1 AND NOT EXISTS (SELECT 1 "
                   "FROM bet_settlements s WHERE s.bet_id = b.bet_id AND s.kind = 'cancel')") == 0);
    CHECK(e.settlement_metrics().steps_finished.value() == 4);
    e.check_money_invariants();
}

TEST_CASE("a small market settles in one lane whatever the lanes") {
    settlement_engine e(three_lanes_of_20);
    e.add_market(1, {{11, 20000}});
    e.fund(1, 40, 100000);
    // 60 bets: no more than a batch per lane.
    e.place_many(60, 40, "one-", "11");
    REQUIRE(e.record(1, 1, "o1", "result", wins(11)) == "stored");
    REQUIRE(e.wait_applied(1, 1));
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements WHERE payout = 200") == 60);
    // Batches of consecutive bets, each over accounts of every lane's residue (in 3 lanes each
    // row would hold one).
    CHECK(e.scalar("SELECT count(*) FROM outbox WHERE topic = 'settlement_batch'") == 3);
    CHECK(e.scalar("SELECT count(*) FROM outbox o WHERE o.topic = 'settlement_batch' AND (SELECT "
                   "count(DISTINCT a::bigint % 3) FROM jsonb_array_elements_text("
                   "o.payload->'account_id') a) = 3") == 3);
    e.check_money_invariants();
}

TEST_CASE("an event started in lanes finishes in them, its lanes called in any order, again") {
    // The SQL alone (no settlement actors): what any client of fulltime_settle_step and
    // fulltime_settle_lane may do, in an order the engine never uses.
    fulltime::test::engine e({}, fulltime::test::use_batch_database);
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.fund(1, 30, 100000);
    e.exec(
        "SELECT count(*) FROM (SELECT (fulltime_place((g % 30) + 1, 'sql-' || g, 'fp', "
        "CASE WHEN g % 2 = 0 THEN 11 ELSE 12 END, 100, 2, 0, 'any', 1000, 0)).outcome "
        "FROM generate_series(0, 99) g) x");
    REQUIRE(e.text("SELECT outcome FROM fulltime_record_result(1, 1, 'sql-r1', 'result', '" +
                   wins(11) + "'::jsonb, 'test')") == "stored");
    const auto step = [&e](int lanes) {
        return e.text("SELECT status || ' ' || lanes FROM fulltime_settle_step(1, 10, 200, " +
                      std::to_string(lanes) + ")");
    };
    const auto lane = [&e](int n) {
        return e.text("SELECT status || ' ' || bets FROM fulltime_settle_lane(1, " +
                      std::to_string(n) + ", 10, 200)");
    };
    // 100 bets, more than 3 lanes of 10: the event starts in 3 lanes.
    REQUIRE(step(3) == "started 3");
    CHECK(e.scalar("SELECT count(*) FROM settlement_lanes WHERE market_id = 1 AND seq = 1") == 3);
    // Before the market's step has passed the fence, a lane settles nothing.
    CHECK(lane(0) == "idle 0");
    std::string status = step(3);
    for (int i = 0; i < 200 && status == "fenced 3"; ++i) {
        std::this_thread::sleep_for(5ms);
        status = step(3);
    }
    REQUIRE(status == "lanes 3");
    CHECK(e.scalar("SELECT count(*) FROM settlement_progress WHERE market_id = 1 AND fence_xid "
                   "IS NULL") == 1);
    // One batch of lane 2: ten bets, each of an account with account_id % 3 = 2.
    CHECK(lane(2) == "batch 10");
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements s JOIN bets b USING (bet_id) WHERE "
                   "b.account_id % 3 <> 2") == 0);
    // The count is the event's: asked with another one, the step answers with the event's.
    CHECK(step(1) == "lanes 3");
    CHECK(lane(3) == "idle 0");
    // Lanes 1, 0 and 2 to the end, in that order; a lane that is done stays done.
    for (const int n : {1, 0, 2}) {
        std::string r;
        for (int i = 0; i < 20 && (r = lane(n)) != "finished 0"; ++i) {
        }
        CHECK(r == "finished 0");
        CHECK(lane(n) == "finished 0");
        CHECK(e.scalar("SELECT count(*) FROM settlement_lanes WHERE lane = " + std::to_string(n) +
                       " AND done") == 1);
    }
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == 100);
    CHECK(e.scalar("SELECT count(*) FROM result_events WHERE applied_at IS NOT NULL") == 0);
    CHECK(step(3) == "finished 3");
    CHECK(e.scalar("SELECT applied_seq FROM settlement_progress WHERE market_id = 1") == 1);
    CHECK(e.scalar("SELECT count(*) FROM settlement_lanes") == 0);
    CHECK(step(3) == "idle 1");
    CHECK(lane(0) == "idle 0");
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements WHERE payout = 200") == 50);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements WHERE payout = 0") == 50);
    e.check_money_invariants();
}

TEST_CASE("taking back winnings already withdrawn records a debt that a later credit repays") {
    settlement_engine e;
    e.add_market(1, {{11, 30000}, {12, 15000}});
    e.fund(1, 1, 1000);
    REQUIRE(e.place(1, "k", 11, 1000) == "placed");
    const std::string home = wins(11);
    const std::string away = wins(12);
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
    CHECK(e.bet_state("k") == "lost 0");
    CHECK(e.available(1) == 0);
    CHECK(e.scalar("SELECT owed FROM accounts WHERE account_id = 1") == 3000);
    e.check_money_invariants();
    // Corrected back: home won after all. The new payout repays the debt first.
    REQUIRE(e.record(1, 3, "r3", "result", home) == "stored");
    REQUIRE(e.wait_applied(1, 3));
    CHECK(e.bet_state("k") == "won 3000");
    CHECK(e.available(1) == 0);
    CHECK(e.scalar("SELECT owed FROM accounts WHERE account_id = 1") == 0);
    CHECK(e.scalar("SELECT count(*) FROM ledger_transfers WHERE entry_key LIKE 'advance:%' OR "
                   "entry_key LIKE 'repay:%'") == 2);
    e.check_money_invariants();
}

TEST_CASE("an event waits for the transactions that were running when it started") {
    settlement_engine e;
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
    REQUIRE(e.record(1, 1, "r1", "result", wins(11)) == "stored");
    std::this_thread::sleep_for(500ms);
    CHECK(e.applied(1) == 0);
    CHECK(e.settlement_metrics().steps_fenced.value() > 0);
    writer.join();
    REQUIRE(e.wait_applied(1, 1));
    CHECK(e.bet_state("k") == "won 2000");
    e.check_money_invariants();
}

TEST_CASE("two instances settling one market apply each event once") {
    settlement_engine e([](fulltime::config& cfg) { cfg.settlement.batch_bets_max = 50; });
    auto& second = e.add_settlement_instance();
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.fund(1, 50, 100000);
    e.place_many(1000, 50, "k", "CASE WHEN g % 2 = 0 THEN 11 ELSE 12 END");
    const std::string home = wins(11);
    const std::string away = wins(12);
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
    e.check_money_invariants();
}

TEST_CASE("the money invariant checker finds broken books") {
    // The checker every pg test ends with must be able to fail: break each invariant in turn.
    settlement_engine e;
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
        "INSERT INTO bet_settlements (bet_id, version, kind, outcome, payout, result_event_id, "
        "placed_at) SELECT bet_id, 1, 'settle', 'won', 2000, 0, placed_at FROM bets");
    CHECK(found("bet_ledger_matches_state"));
}
