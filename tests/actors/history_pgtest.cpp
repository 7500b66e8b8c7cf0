// History that leaves (docs/schema.md, "Time partitions"): bets, settlement rows, transfers and
// outbox rows in time partitions of one second, so that a test sees periods end, close and
// leave. The settlement and reconciliation actors run on the engine's pools; the keeper's rounds
// are called directly (keep_history, as `fulltime partitions --keep` does), except in the test
// of the keeper actor. Every wait is on an event: the database clock passing a period's end, a
// market applying its event, a metric moving.
#include "fulltime/actors/partition_keeper.hpp"
#include "fulltime/actors/reconciliation.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/config/config.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/history_statements.hpp"
#include "fulltime/db/pool.hpp"
#include "support/engine_fixture.hpp"
#include "support/test_config.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;

constexpr const char* result_11_wins =
    R"({"outcomes":[{"selection_id":11,"win":true},{"selection_id":12,"win":false}]})";
constexpr const char* result_12_wins =
    R"({"outcomes":[{"selection_id":11,"win":false},{"selection_id":12,"win":true}]})";

// One-second periods, closed as soon as they end, kept an hour (the retention test keeps them a
// second: a period that could leave would take its bets with it in the middle of a test).
void short_periods(fulltime::config& cfg) {
    fulltime::test::use_batch_database(cfg);
    cfg.history.period = "1 second";
    cfg.history.ahead_periods = 3;
    cfg.history.retention = "1 hour";
    cfg.history.close_grace_s = 0;
    cfg.history.keeper_interval_ms = 0;
}

class history_engine : public fulltime::test::engine {
public:
    explicit history_engine(const std::function<void(fulltime::config&)>& configure_case = {})
        : fulltime::test::engine({.settlement = true, .reconciliation = true}, short_periods,
                                 configure_case) {}

    std::string record(std::int64_t market, int seq, const std::string& key,
                       const std::string& payload) {
        auto outcome = text("SELECT outcome FROM fulltime_record_result(" + std::to_string(market) +
                            ", " + std::to_string(seq) + ", '" + key + "', 'result', '" + payload +
                            "'::jsonb, 'test')");
        settlement().notify(market);
        return outcome;
    }

    /// One keeper round, as `fulltime partitions --keep` runs it; requires it to succeed. A
    /// page of the read model's projector first, as a running engine would have read it: its
    /// cursor holds the outbox rows of a period (unconsumed_outbox) until it has.
    fulltime::actors::keeper_report keep() {
        exec("SELECT fulltime_project('projector', 10000)");
        auto r = on_loop(fulltime::actors::keep_history(*pools().background, cfg().history));
        REQUIRE_MESSAGE(r.ok, r.error);
        return r;
    }

    /// Returns once `market`'s result `seq` is applied, running keeper rounds meanwhile: with
    /// one-second periods and no keeper actor, a slow machine's settlement would otherwise come
    /// to a second that no partition was made for, and retry until one is.
    bool wait_applied(std::int64_t market, std::int64_t seq) {
        keep_until("SELECT count(*) FROM settlement_progress WHERE market_id = " +
                   std::to_string(market) + " AND applied_seq >= " + std::to_string(seq));
        return true;
    }

    /// Returns once the server's clock is in the first 300 ms of a second: two placements
    /// made right after then fall in one period of one second, as a test that needs them
    /// together requires (each takes a few milliseconds, more under the sanitizers).
    void wait_early_in_second() const {
        while (std::stoll(text("SELECT (extract(microseconds FROM clock_timestamp())::bigint "
                               "% 1000000)::text")) >= 300000) {
        }
    }

    /// The start of the period that holds `bet_key`'s bet, as the server prints it.
    std::string period_of(const std::string& bet_key) const {
        return text(
            "SELECT h.period_start::text FROM history_periods h JOIN bets b "
            "ON b.placed_at >= h.period_start AND b.placed_at < h.period_end "
            "WHERE b.idempotency_key = '" +
            bet_key + "'");
    }

    /// Runs keeper rounds until `condition` (SQL, an integer) is not 0: the periods ahead are
    /// made meanwhile, so placements keep finding partitions. Fails after 30 s.
    void keep_until(const std::string& condition) {
        const auto until = std::chrono::steady_clock::now() + 30s;
        while (scalar(condition) == 0) {
            REQUIRE_MESSAGE(std::chrono::steady_clock::now() < until, condition);
            keep();
            std::this_thread::sleep_for(50ms);
        }
    }

    /// Keeper rounds until the period that starts at `start` is over and closed.
    void wait_closed(const std::string& start) {
        keep_until(
            "SELECT (closed_at IS NOT NULL)::int FROM history_periods "
            "WHERE period_start = '" +
            start + "'");
    }

    /// Accounts whose balance row differs from the latest closed period's stored balances plus
    /// the ledger legs after that period's end: 0 when the closing is exact.
    std::int64_t closing_mismatches() const {
        return scalar(
            "WITH c AS (SELECT period_start, period_end FROM history_periods "
            "           WHERE closed_at IS NOT NULL ORDER BY period_start DESC LIMIT 1), "
            "legs AS (SELECT credit_account_id AS account_id, credit_side AS side, amount "
            "         FROM ledger_transfers, c WHERE credit_account_id IS NOT NULL "
            "           AND created_at >= c.period_end "
            "         UNION ALL "
            "         SELECT debit_account_id, debit_side, -amount "
            "         FROM ledger_transfers, c WHERE debit_account_id IS NOT NULL "
            "           AND created_at >= c.period_end), "
            "after AS (SELECT account_id, "
            "  coalesce(sum(amount) FILTER (WHERE side = 'available'), 0) AS available, "
            "  coalesce(sum(amount) FILTER (WHERE side = 'reserved'), 0) AS reserved, "
            "  -coalesce(sum(amount) FILTER (WHERE side = 'owed'), 0) AS owed "
            "  FROM legs GROUP BY account_id) "
            "SELECT count(*) FROM accounts a "
            "LEFT JOIN period_balances b ON b.account_id = a.account_id "
            "  AND b.period_start = (SELECT period_start FROM c) "
            "LEFT JOIN after x ON x.account_id = a.account_id "
            "WHERE a.available <> coalesce(b.available, 0) + coalesce(x.available, 0) "
            "   OR a.reserved <> coalesce(b.reserved, 0) + coalesce(x.reserved, 0) "
            "   OR a.owed <> coalesce(b.owed, 0) + coalesce(x.owed, 0)");
    }

    /// Runs a reconciliation through the actor; returns the open reconciliation incidents.
    std::int64_t reconcile() {
        auto fut = spawn(reconciliation().run_now());
        REQUIRE(fut.wait_for(60s) == std::future_status::ready);
        auto r = fut.get();
        REQUIRE_MESSAGE(r.has_value(), (r ? "" : fulltime::db::describe(r.error())));
        return scalar(
            "SELECT count(*) FROM incidents WHERE resolved_at IS NULL AND kind IN "
            "('balance_drift', 'currency_mismatch', 'currency_imbalance')");
    }

    std::int64_t available(std::int64_t account) const {
        return scalar("SELECT available FROM accounts WHERE account_id = " +
                      std::to_string(account));
    }
};

}  // namespace

TEST_CASE("a bet placed in one period settles in the next, and the closed balances hold") {
    history_engine e;
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.fund(1, 2, 100000);
    REQUIRE(e.place(1, "a", 11, 1000) == "placed");
    REQUIRE(e.place(2, "b", 12, 3000) == "placed");
    const auto placed = e.period_of("a");
    REQUIRE(!placed.empty());
    // The bet and its reservation lie in the bet's period.
    const auto suffix = e.text("SELECT fulltime_history_suffix('" + placed + "')");
    CHECK(e.text("SELECT b.tableoid::regclass::text FROM bets b WHERE b.idempotency_key = 'a'") ==
          "bets_" + suffix);
    CHECK(e.text("SELECT t.tableoid::regclass::text FROM ledger_transfers t JOIN bets b "
                 "ON t.entry_key = 'bet:' || b.bet_id || ':reserve' "
                 "WHERE b.idempotency_key = 'a'") == "ledger_transfers_" + suffix);

    e.wait_closed(placed);
    REQUIRE(e.record(1, 1, "r1", result_11_wins) == "stored");
    REQUIRE(e.wait_applied(1, 1));

    // The settlement rows went to the bets' partition, the settlement legs to a later period.
    CHECK(e.text("SELECT s.tableoid::regclass::text FROM bet_settlements s JOIN bets b "
                 "USING (bet_id) WHERE b.idempotency_key = 'a'") == "bet_settlements_" + suffix);
    CHECK(e.scalar("SELECT count(*) FROM ledger_transfers t JOIN bets b USING (bet_id) "
                   "WHERE b.idempotency_key IN ('a', 'b') AND t.entry_key NOT LIKE '%:reserve' "
                   "AND t.created_at < (SELECT period_end FROM history_periods "
                   "                    WHERE period_start = '" +
                   placed + "')") == 0);
    CHECK(e.available(1) == 100000 - 1000 + 2000);
    CHECK(e.available(2) == 100000 - 3000);

    // Close the period of the settlement too: the stored balances now hold every leg.
    e.wait_closed(
        e.text("SELECT max(period_start)::text FROM history_periods "
               "WHERE period_start <= now()"));
    CHECK(e.scalar("SELECT count(*) FROM history_periods WHERE closed_at IS NOT NULL") >= 2);
    CHECK(e.closing_mismatches() == 0);
    CHECK(e.scalar("SELECT count(*) FROM period_balances WHERE period_start = "
                   "(SELECT max(period_start) FROM history_periods WHERE closed_at IS NOT NULL) "
                   "AND account_id IN (1, 2)") == 2);
    // Each currency's house and cash with the accounts' sides sum to zero at the close.
    CHECK(e.scalar("WITH c AS (SELECT max(period_start) AS p FROM history_periods "
                   "WHERE closed_at IS NOT NULL) "
                   "SELECT (SELECT coalesce(sum(available + reserved - owed), 0) "
                   "        FROM period_balances, c WHERE period_start = c.p) "
                   "     + (SELECT coalesce(sum(balance), 0) FROM period_side_sums, c "
                   "        WHERE period_start = c.p)") == 0);
    CHECK(e.reconcile() == 0);
    e.check_money_invariants();
}

TEST_CASE("a correction after its period closed moves money in the open period only") {
    history_engine e;
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.fund(1, 2, 100000);
    REQUIRE(e.place(1, "a", 11, 1000) == "placed");
    REQUIRE(e.place(2, "b", 12, 3000) == "placed");
    REQUIRE(e.record(1, 1, "r1", result_11_wins) == "stored");
    REQUIRE(e.wait_applied(1, 1));
    const auto settled_in = e.text(
        "SELECT h.period_start::text FROM history_periods h, ledger_transfers t "
        "WHERE t.entry_key LIKE '%:v1:ss' AND t.created_at >= h.period_start "
        "AND t.created_at < h.period_end LIMIT 1");
    e.wait_closed(settled_in);
    const auto closed_sums = e.text(
        "SELECT string_agg(account_id || ':' || available || '/' || reserved || '/' || owed, "
        "',' ORDER BY account_id) FROM period_balances WHERE period_start = '" +
        settled_in + "'");
    REQUIRE(!closed_sums.empty());

    REQUIRE(e.record(1, 2, "r2", result_12_wins) == "stored");
    REQUIRE(e.wait_applied(1, 2));
    CHECK(e.available(1) == 100000 - 1000);
    CHECK(e.available(2) == 100000 - 3000 + 6000);
    // The correction's reversal and new settlement are rows of the bets' own partition, and its
    // legs are after the closed period: the stored balances are untouched.
    CHECK(e.scalar("SELECT count(*) FROM ledger_transfers WHERE entry_key LIKE '%:v1:r%' "
                   "AND created_at < (SELECT period_end FROM history_periods "
                   "WHERE period_start = '" +
                   settled_in + "')") == 0);
    CHECK(e.text("SELECT string_agg(account_id || ':' || available || '/' || reserved || '/' || "
                 "owed, ',' ORDER BY account_id) FROM period_balances WHERE period_start = '" +
                 settled_in + "'") == closed_sums);
    e.wait_closed(
        e.text("SELECT max(period_start)::text FROM history_periods "
               "WHERE period_start <= now()"));
    CHECK(e.closing_mismatches() == 0);
    CHECK(e.reconcile() == 0);
    e.check_money_invariants();
}

TEST_CASE("retention keeps a period that holds an open bet, and drops it once settled") {
    history_engine e([](fulltime::config& cfg) { cfg.history.retention = "1 second"; });
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.add_market(2, {{21, 20000}, {22, 20000}});
    e.fund(1, 2, 100000);
    e.wait_early_in_second();
    REQUIRE(e.place(1, "settled", 11, 1000) == "placed");
    REQUIRE(e.place(2, "open", 21, 2000) == "placed");
    const auto period = e.period_of("open");
    REQUIRE(period == e.period_of("settled"));
    const auto suffix = e.text("SELECT fulltime_history_suffix('" + period + "')");
    REQUIRE(e.record(1, 1, "m1", result_11_wins) == "stored");
    REQUIRE(e.wait_applied(1, 1));
    e.wait_closed(period);
    // Past retention (one second after its end), held by the open bet of market 2 alone.
    e.keep_until(
        "SELECT (array_to_string(holds, ',') = 'open_bets')::int "
        "FROM fulltime_history_holds('1 second') WHERE period_start = '" +
        period + "'");
    e.keep();
    CHECK(e.scalar("SELECT count(*) FROM fulltime_history_holds('1 second') "
                   "WHERE period_start = '" +
                   period + "' AND open_bets = 1") == 1);
    CHECK(e.text("SELECT to_regclass('bets_" + suffix + "')::text") == "bets_" + suffix);
    CHECK(e.scalar("SELECT count(*) FROM bets") == 2);
    // The periods before it left: periods leave oldest first, so nothing after it left either.
    CHECK(e.scalar("SELECT count(*) FROM history_periods WHERE dropped_at IS NOT NULL "
                   "AND period_start >= '" +
                   period + "'") == 0);

    REQUIRE(e.record(2, 1, "m2", R"({"outcomes":[{"selection_id":21,"win":true}]})") == "stored");
    REQUIRE(e.wait_applied(2, 1));
    const auto balances = e.text(
        "SELECT string_agg(account_id || ':' || available || '/' || reserved || '/' || owed, "
        "',' ORDER BY account_id) FROM accounts");
    e.keep_until(
        "SELECT count(*) FROM history_periods WHERE dropped_at IS NOT NULL "
        "AND period_start = '" +
        period + "'");
    for (const std::string table : {"bets", "bet_settlements", "ledger_transfers", "outbox"}) {
        CAPTURE(table);
        CHECK(e.text("SELECT to_regclass('" + table + "_" + suffix + "') IS NULL") == "t");
    }
    CHECK(e.scalar("SELECT count(*) FROM bets") == 0);
    CHECK(e.scalar("SELECT max_bet_id FROM history_periods WHERE period_start = '" + period +
                   "'") >= 2);
    // The money did not move; the books still check out without the dropped history.
    CHECK(e.text("SELECT string_agg(account_id || ':' || available || '/' || reserved || '/' || "
                 "owed, ',' ORDER BY account_id) FROM accounts") == balances);
    CHECK(e.closing_mismatches() == 0);
    CHECK(e.reconcile() == 0);
    e.check_money_invariants();

    // A correction that comes after its bets left finds none: it is applied and moves nothing
    // (the retention is the longest time after which a correction may come).
    REQUIRE(e.record(1, 2, "m1-late", result_12_wins) == "stored");
    REQUIRE(e.wait_applied(1, 2));
    CHECK(e.text("SELECT string_agg(account_id || ':' || available || '/' || reserved || '/' || "
                 "owed, ',' ORDER BY account_id) FROM accounts") == balances);

    // Life goes on: a new bet, a settlement, another reconciliation.
    e.add_market(3, {{31, 20000}, {32, 20000}});
    // A keeper round first: the three one-second periods made ahead by the last one may be
    // used up by now on a loaded machine.
    e.keep();
    REQUIRE(e.place(1, "later", 31, 500) == "placed");
    REQUIRE(e.record(3, 1, "m3", R"({"outcomes":[{"selection_id":31,"win":true}]})") == "stored");
    REQUIRE(e.wait_applied(3, 1));
    CHECK(e.reconcile() == 0);
    e.check_money_invariants();
}

TEST_CASE("a drop interrupted halfway is finished by the next keeper round") {
    // The keeper's own retention is an hour, so its rounds do not drop the period first; the
    // interrupted drop below judges it with a retention of one second.
    history_engine e;
    // The history period (empty, before the migration) is closed and a second past its end:
    // with that retention nothing holds it.
    e.keep_until(
        "SELECT (cardinality(holds) = 0)::int FROM fulltime_history_holds('1 second') "
        "WHERE period_start = '-infinity'");
    // A keeper that began the drop and was killed after detaching one of the four partitions.
    REQUIRE(e.text("SELECT fulltime_history_drop_begin('-infinity', '1 second')") == "t");
    e.exec("ALTER TABLE bets DETACH PARTITION bets_history CONCURRENTLY");
    CHECK(e.scalar("SELECT count(*) FROM fulltime_history_holds('1 second') "
                   "WHERE period_start = '-infinity' AND dropping") == 1);
    CHECK(e.text("SELECT to_regclass('ledger_transfers_history') IS NULL") == "f");

    e.keep();
    for (const std::string table : {"bets", "bet_settlements", "ledger_transfers", "outbox"}) {
        CAPTURE(table);
        CHECK(e.text("SELECT to_regclass('" + table + "_history') IS NULL") == "t");
    }
    CHECK(e.scalar("SELECT count(*) FROM history_periods WHERE period_start = '-infinity' "
                   "AND dropped_at IS NOT NULL AND max_bet_id = 0") == 1);
    e.check_money_invariants();
}

TEST_CASE("the keeper actor keeps partitions ahead of the clock") {
    history_engine e([](fulltime::config& cfg) { cfg.history.keeper_interval_ms = 100; });
    auto& metrics = e.start_keeper();
    e.add_market(1, {{11, 20000}, {12, 20000}});
    e.fund(1, 1, 100000);
    // Five periods of bets at one-second periods: each finds its partition, made by the keeper,
    // which closes each period after it ends.
    const auto first = e.scalar("SELECT count(*) FROM history_periods");
    for (int i = 0; i < 5; ++i) {
        const auto until = std::chrono::steady_clock::now() + 30s;
        const auto closed = metrics.closed.value();
        while (metrics.closed.value() == closed) {
            REQUIRE(std::chrono::steady_clock::now() < until);
            std::this_thread::sleep_for(20ms);
        }
        REQUIRE(e.place(1, "k" + std::to_string(i), 11, 100) == "placed");
        CHECK(metrics.ahead_s.value() >= 1);
    }
    CHECK(e.scalar("SELECT count(*) FROM history_periods") > first);
    CHECK(metrics.rounds.value() > 0);
    CHECK(metrics.failures.value() == 0);
    e.check_money_invariants();
}
