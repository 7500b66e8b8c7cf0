// The reconciliation inside one process: the real reconciliation actor (and, where money must
// move during a run, the real settlement actors) on a CAF runtime and real pools, on a scratch
// database with the engine's migrations. Balance rows and transfers are corrupted by hand: each
// problem must become exactly one incident, the engine must never touch the money, and a
// problem fixed by hand must be closed by the next run.

#include "fulltime/actors/reconciliation.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/config/config.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/db/audit_statements.hpp"
#include "fulltime/db/connection.hpp"
#include "fulltime/db/pool.hpp"
#include "support/engine_fixture.hpp"
#include "support/invariants.hpp"
#include "support/pg_support.hpp"
#include "support/test_config.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>

#include <doctest/doctest.h>

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using fulltime::actors::reconcile_summary;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

asio::awaitable<fulltime::db::outcome<reconcile_summary>> run_now(
    fulltime::actors::reconciliation_service* reconciliation) {
    auto r = co_await reconciliation->run_now();
    co_return r;
}

// The reconciliation actor and, where money must move during a run, the settlement actors, on
// the engine's pools (tests/support/engine_fixture.hpp) with the database settings of tests
// that reconcile thousands of rows. Runs are on demand only (test_config's reconcile.interval_ms
// is 0) unless a test asks otherwise.
class reconcile_engine : public fulltime::test::engine {
public:
    explicit reconcile_engine(const std::function<void(fulltime::config&)>& configure = {})
        : fulltime::test::engine({.settlement = true, .reconciliation = true},
                                 fulltime::test::use_batch_database, configure) {}

    /// Starts a run through the actor (as POST /v1/reconcile does); get() awaits its answer.
    std::future<fulltime::db::outcome<reconcile_summary>> ask_run() {
        return spawn(run_now(&reconciliation()));
    }

    /// Runs a reconciliation through the actor and requires it to succeed.
    reconcile_summary run() {
        auto fut = ask_run();
        REQUIRE(fut.wait_for(120s) == std::future_status::ready);
        auto r = fut.get();
        REQUIRE_MESSAGE(r.has_value(), (r ? "" : fulltime::db::describe(r.error())));
        return *r;
    }

    /// Runs a reconciliation the way `fulltime reconcile` does: reconcile_once on a pool,
    /// without the actor.
    reconcile_summary run_once() {
        auto r =
            on_loop(fulltime::actors::reconcile_once(
                        *pools().background, fulltime::actors::reconcile_run_settings::from(cfg())),
                    60s);
        REQUIRE_MESSAGE(r.has_value(), (r ? "" : fulltime::db::describe(r.error())));
        return *r;
    }

    std::int64_t incidents(const std::string& where = "true") const {
        return scalar("SELECT count(*) FROM incidents WHERE " + where);
    }
};

// One libpq connection of its own, for a thread that writes while a run reads (tests only).
class writer {
public:
    explicit writer(const std::string& url) : conn_(PQconnectdb(url.c_str()), &PQfinish) {
        if (PQstatus(conn_.get()) != CONNECTION_OK) {
            throw std::runtime_error(std::string("connect: ") + PQerrorMessage(conn_.get()));
        }
    }

    /// Runs one statement (several separated by ';' in one implicit transaction); returns the
    /// first value of the first row or "" (errors too: a writer's refusals are expected).
    std::string run(const std::string& sql) {
        std::unique_ptr<PGresult, decltype(&PQclear)> res(PQexec(conn_.get(), sql.c_str()),
                                                          &PQclear);
        const auto status = PQresultStatus(res.get());
        if (status == PGRES_TUPLES_OK && PQntuples(res.get()) > 0) {
            return PQgetvalue(res.get(), 0, 0);
        }
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
            last_error_ = PQresultErrorMessage(res.get());
        }
        return "";
    }

    const std::string& last_error() const { return last_error_; }

private:
    std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
    std::string last_error_;
};

std::string home_wins(std::int64_t home, std::int64_t away) {
    return R"({"outcomes":[{"selection_id":)" + std::to_string(home) +
           R"(,"win":true,"void_factor":0,"dead_heat_factor":10000},{"selection_id":)" +
           std::to_string(away) + R"(,"win":false,"void_factor":0,"dead_heat_factor":10000}]})";
}

}  // namespace

TEST_CASE("a corrupted balance row is one incident, never corrected, closed once fixed by hand") {
    reconcile_engine e;
    e.add_market(1, {{11, 20000}});
    e.fund(1, 10, 10000);
    for (int i = 1; i <= 10; ++i) {
        REQUIRE(e.place(i, "k" + std::to_string(i), 11, 1000) == "placed");
    }

    const auto clean = e.run();
    CHECK(clean.accounts_checked == 10);
    CHECK(clean.drifts == 0);
    CHECK(clean.incidents_opened == 0);
    CHECK(clean.incidents_open_total() == 0);
    CHECK(e.incidents() == 0);

    // The corruption: one balance row changed by hand, its ledger untouched.
    e.exec("UPDATE accounts SET available = available + 1 WHERE account_id = 3");
    const auto first = e.run();
    CHECK(first.drifts == 1);
    CHECK(first.incidents_opened == 1);
    CHECK(first.reconciliation_incidents_open() == 1);
    REQUIRE(e.incidents() == 1);
    CHECK(e.text("SELECT kind || ' ' || subject || ' ' || account_id || ' ' || side || ' ' || "
                 "currency || ' ' || expected || ' ' || actual || ' ' || runs FROM incidents "
                 "WHERE resolved_at IS NULL") ==
          "balance_drift account:3:available 3 available "
          "EUR 9000 9001 1");
    // Reported, never corrected: the row keeps the corrupted value.
    CHECK(e.scalar("SELECT available FROM accounts WHERE account_id = 3") == 9001);
    CHECK(e.metrics_text().find(R"(fulltime_incidents_open{kind="balance_drift"} 1)") !=
          std::string::npos);

    // A second run finds the same problem: the same incident, seen again, not a second one.
    const auto second = e.run();
    CHECK(second.incidents_opened == 0);
    CHECK(second.incidents_seen_again == 1);
    CHECK(e.incidents() == 1);
    CHECK(e.scalar("SELECT runs FROM incidents") == 2);
    CHECK(e.scalar("SELECT count(*) FROM incidents WHERE last_seen > first_seen") == 1);
    CHECK(e.scalar("SELECT available FROM accounts WHERE account_id = 3") == 9001);
    // The audit sees the drift and the open incident.
    const auto problems = fulltime::test::money_violations(e.url());
    REQUIRE(problems.size() == 2);
    CHECK(problems[0].starts_with("balances_match_ledger"));
    CHECK(problems[1].starts_with("no_open_reconciliation_incident"));

    // Fixed by hand: the next run closes the incident, and says why.
    e.exec("UPDATE accounts SET available = available - 1 WHERE account_id = 3");
    const auto fixed = e.run();
    CHECK(fixed.incidents_resolved == 1);
    CHECK(fixed.incidents_open_total() == 0);
    CHECK(e.incidents("resolved_at IS NOT NULL AND resolution LIKE 'not found by the "
                      "reconciliation run started at %'") == 1);
    CHECK(e.incidents() == 1);
    CHECK(e.metrics_text().find(R"(fulltime_incidents_open{kind="balance_drift"} 0)") !=
          std::string::npos);
    CHECK(e.reconciliation_metrics().runs_ok.value() == 4);

    // The same drift again later is a new incident: the closed one stays closed.
    e.exec("UPDATE accounts SET reserved = reserved + 5 WHERE account_id = 3");
    const auto again = e.run();
    CHECK(again.incidents_opened == 1);
    CHECK(e.incidents() == 2);
    CHECK(e.incidents("resolved_at IS NULL AND subject = 'account:3:reserved'") == 1);
}

TEST_CASE("chunks cover every account and every transfer, the last one open-ended") {
    reconcile_engine e([](fulltime::config& cfg) {
        cfg.reconcile.chunk_accounts = 1000;
        cfg.reconcile.chunk_transfers = 1000;
    });
    e.fund(1, 2500, 5000);
    const auto clean = e.run();
    CHECK(clean.chunks == 3);
    CHECK(clean.accounts_checked == 2500);
    CHECK(clean.transfer_chunks == 3);
    CHECK(clean.transfers_checked == 2500);
    CHECK(clean.drifts == 0);
    REQUIRE(clean.currencies.size() == 1);
    CHECK(clean.currencies[0].code == "EUR");
    CHECK(clean.currencies[0].accounts == 2500);
    CHECK(clean.currencies[0].imbalance_minor == 0);
    CHECK(e.reconciliation_metrics().accounts_checked.value() == 2500);

    // The first account, both sides of a chunk boundary, the last account, and a transfer to
    // an account that does not exist (beyond the last one: only an open-ended last chunk sees
    // it).
    e.exec(
        "UPDATE accounts SET available = available + 1 WHERE account_id IN (1, 1000, 1001, "
        "2500)");
    e.exec(
        "INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, "
        "credit_account_id, amount) VALUES ('orphan', 'EUR', 'cash', 'available', 9999, 7)");
    const auto found = e.run();
    CHECK(found.drifts == 5);
    CHECK(found.incidents_opened == 5);
    CHECK(e.incidents("subject IN ('account:1:available', 'account:1000:available', "
                      "'account:1001:available', 'account:2500:available')") == 4);
    CHECK(e.text("SELECT expected || ' ' || coalesce(actual::text, 'null') || ' ' || details::text "
                 "FROM incidents WHERE subject = 'account:9999:available'") ==
          R"(7 null {"account_missing": true})");
    CHECK(e.scalar("SELECT sum(available) FROM accounts") == 2500 * 5000 + 4);

    // Exactly 2000 accounts: the third chunk is empty and still reaches past the last account.
    reconcile_engine f([](fulltime::config& cfg) { cfg.reconcile.chunk_accounts = 1000; });
    f.fund(1, 2000, 5000);
    f.exec(
        "INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, "
        "credit_account_id, amount) VALUES ('orphan', 'EUR', 'cash', 'available', 2001, 7)");
    const auto exact = f.run_once();
    CHECK(exact.chunks == 3);
    CHECK(exact.accounts_checked == 2000);
    CHECK(exact.drifts == 1);
}

TEST_CASE("a transfer in another currency is a mismatch and unbalances both currencies") {
    reconcile_engine e;
    e.fund(1, 3, 10000, "EUR");
    e.fund(4, 2, 10000, "USD");
    REQUIRE(e.run().reconciliation_incidents_open() == 0);

    // 5.00 USD credited to a EUR account, its balance row updated to match: no drift, but the
    // euro books gained what the dollar books lost.
    e.exec(
        "BEGIN; INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, "
        "credit_account_id, amount) VALUES ('deposit:2:usd', 'USD', 'cash', 'available', 2, "
        "500); UPDATE accounts SET available = available + 500 WHERE account_id = 2; COMMIT;");
    const auto id = e.scalar(
        "SELECT transfer_id FROM ledger_transfers WHERE entry_key = "
        "'deposit:2:usd'");
    const auto found = e.run();
    CHECK(found.drifts == 0);
    CHECK(found.mismatches == 1);
    CHECK(found.incidents_opened == 3);
    REQUIRE(found.currencies.size() == 2);
    CHECK(found.currencies[0].code == "EUR");
    CHECK(found.currencies[0].accounts == 3);
    CHECK(found.currencies[0].imbalance_minor == 500);
    CHECK(found.currencies[1].code == "USD");
    CHECK(found.currencies[1].imbalance_minor == -500);
    CHECK(e.text("SELECT account_id || ' ' || currency || ' ' || actual || ' ' || "
                 "(details->>'account_currency') FROM incidents WHERE kind = "
                 "'currency_mismatch' AND subject = 'transfer:" +
                 std::to_string(id) + "'") == "2 USD 500 EUR");
    CHECK(e.text("SELECT string_agg(subject || '=' || actual, ',' ORDER BY subject) FROM "
                 "incidents WHERE kind = 'currency_imbalance'") ==
          "currency:EUR=500,currency:USD=-500");
    const auto problems = fulltime::test::money_violations(e.url());
    const auto has = [&](const char* name) {
        for (const auto& p : problems) {
            if (p.starts_with(name)) {
                return true;
            }
        }
        return false;
    };
    CHECK(has("ledger_sums_to_zero"));
    CHECK(has("transfer_currency_matches_account"));
    CHECK_FALSE(has("balances_match_ledger"));

    // Seen again, then fixed by hand: all three close.
    CHECK(e.run().incidents_seen_again == 3);
    e.exec("UPDATE ledger_transfers SET currency = 'EUR' WHERE entry_key = 'deposit:2:usd'");
    const auto fixed = e.run();
    CHECK(fixed.incidents_resolved == 3);
    CHECK(fixed.reconciliation_incidents_open() == 0);
    e.check_money_invariants();
}

namespace {

// Until `done`: placements, deposits and withdrawals of random accounts among the first
// `accounts`, each its own transaction, counted in `writes`.
void write_money(reconcile_engine& e, int accounts, const std::atomic<bool>& done,
                 std::atomic<std::int64_t>& writes) {
    writer w(e.url());
    std::mt19937 rng(7);
    for (std::int64_t i = 0; !done.load(); ++i) {
        const auto a = std::to_string(1 + static_cast<int>(rng() % accounts));
        const auto n = std::to_string(i);
        switch (i % 4) {
            case 0:
            case 1:
                w.run("SELECT outcome FROM fulltime_place(" + a + ", 'b" + n + "', 'fp', " +
                      (i % 8 < 4 ? "11" : "12") + ", " + std::to_string(100 + rng() % 900) +
                      ", 2, 0, 'any', 1000, 0)");
                break;
            case 2:
                // A deposit as the wallet makes it: transfer and balance in one transaction.
                w.run(
                    "BEGIN; INSERT INTO ledger_transfers (entry_key, currency, debit_side, "
                    "credit_side, credit_account_id, amount) VALUES ('deposit:" +
                    a + ":w" + n + "', 'EUR', 'cash', 'available', " + a +
                    ", 250); UPDATE accounts SET available = available + 250 WHERE "
                    "account_id = " +
                    a + "; COMMIT");
                break;
            default:
                // A withdrawal, refused (nothing written) when available is short.
                w.run(
                    "WITH u AS (UPDATE accounts SET available = available - 100 WHERE "
                    "account_id = " +
                    a +
                    " AND available >= 100 RETURNING account_id) INSERT INTO "
                    "ledger_transfers (entry_key, currency, debit_side, "
                    "debit_account_id, credit_side, amount) SELECT 'withdrawal:" +
                    a + ":w" + n + "', 'EUR', 'available', u.account_id, 'cash', 100 FROM u");
                break;
        }
        writes.fetch_add(1);
    }
}

// Results and corrections (reversals, payouts taken back, debts) of market 1, applied by the
// real settlement actors, until `done` or 40 of them.
void post_results(reconcile_engine& e, const std::atomic<bool>& done) {
    writer w(e.url());
    for (int seq = 1; !done.load() && seq <= 40; ++seq) {
        std::this_thread::sleep_for(30ms);
        const bool home = seq % 2 == 1;
        w.run("SELECT outcome FROM fulltime_record_result(1, " + std::to_string(seq) + ", 'r" +
              std::to_string(seq) + "', 'result', '" +
              (home ? home_wins(11, 12) : home_wins(12, 11)) + "'::jsonb, 'test')");
        e.settlement().notify(1);
        for (int i = 0; i < 500 && !done.load(); ++i) {
            if (w.run("SELECT applied_seq FROM settlement_progress WHERE market_id = 1") ==
                std::to_string(seq)) {
                break;
            }
            std::this_thread::sleep_for(5ms);
        }
        w.run("UPDATE markets SET status = 'open' WHERE market_id = 1");
    }
}

}  // namespace

TEST_CASE("no false drift while placements, deposits and settlements commit during a run") {
    // Small chunks with pauses, so that every run spans many transactions of the writers.
    reconcile_engine e([](fulltime::config& cfg) {
        cfg.reconcile.chunk_accounts = 7;
        cfg.reconcile.chunk_transfers = 200;
        cfg.reconcile.chunk_pause_ms = 2;
        cfg.settlement.batch_bets_max = 20;
    });
    constexpr int accounts = 120;
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.fund(1, accounts, 100000);

    std::atomic<bool> done{false};
    std::atomic<std::int64_t> writes{0};
    std::thread bettor([&] { write_money(e, accounts, done, writes); });
    // Results and corrections applied by the real settlement actors while the runs read.
    std::thread producer([&] { post_results(e, done); });

    // The control: the same comparison made in two statements (balance rows, then the ledger)
    // does see the writers' transactions half-way, so this load would expose a comparison that
    // is not one statement.
    writer naive(e.url());
    std::int64_t naive_differences = 0;
    std::int64_t runs = 0;
    std::int64_t writes_during_runs = 0;
    const auto until = steady::now() + 6s;
    while (steady::now() < until) {
        for (int i = 0; i < 5; ++i) {
            const auto rows = naive.run("SELECT sum(available + reserved) FROM accounts");
            const auto ledger = naive.run(
                "SELECT sum(CASE WHEN credit_side IN ('available', 'reserved') THEN amount "
                "ELSE 0 END) - sum(CASE WHEN debit_side IN ('available', 'reserved') THEN "
                "amount ELSE 0 END) FROM ledger_transfers");
            naive_differences += rows != ledger ? 1 : 0;
        }
        const auto before = writes.load();
        const auto r = e.run();
        writes_during_runs += writes.load() - before;
        ++runs;
        CHECK(r.drifts == 0);
        CHECK(r.mismatches == 0);
        CHECK(r.incidents_opened == 0);
        CHECK(r.accounts_checked == accounts);
        CHECK(r.chunks > 10);
    }
    done = true;
    bettor.join();
    producer.join();
    MESSAGE(runs << " runs, " << writes_during_runs << " writes committed during them, "
                 << e.scalar("SELECT count(*) FROM bet_settlements") << " settlement rows, "
                 << naive_differences << " differences seen by a two-statement comparison");
    CHECK(runs >= 2);
    CHECK(naive_differences > 0);
    CHECK(writes_during_runs > 100);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") > 0);
    CHECK(e.incidents() == 0);
    const auto last = e.run();
    CHECK(last.drifts == 0);
    e.check_money_invariants();
}

TEST_CASE("a request during a run is answered by the next run, which sees what changed") {
    reconcile_engine e([](fulltime::config& cfg) {
        cfg.reconcile.chunk_accounts = 1;
        cfg.reconcile.chunk_pause_ms = 20;
    });
    e.fund(1, 40, 1000);
    auto first = e.ask_run();
    // Account 1 is the first chunk: the corruption lands once the run has checked it (and 39
    // chunks with their pauses are still to go).
    REQUIRE(fulltime::test::eventually(
        [&] { return e.reconciliation_metrics().run_accounts_checked.value() >= 1; }, 60s));
    e.exec("UPDATE accounts SET available = 7 WHERE account_id = 1");
    auto second = e.ask_run();
    auto third = e.ask_run();
    REQUIRE(first.wait_for(60s) == std::future_status::ready);
    REQUIRE(second.wait_for(60s) == std::future_status::ready);
    REQUIRE(third.wait_for(60s) == std::future_status::ready);
    auto a = first.get();
    auto b = second.get();
    auto c = third.get();
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    REQUIRE(c.has_value());
    CHECK(a->drifts == 0);
    CHECK(b->drifts == 1);
    // The two requests that came during the first run share the second run.
    CHECK(b->started_at == c->started_at);
    CHECK(a->started_at != b->started_at);
    CHECK(e.reconciliation_metrics().runs_ok.value() == 2);
    CHECK(e.incidents() == 1);
}

TEST_CASE("stopping answers a waiting request and ends the run at its next step") {
    reconcile_engine e([](fulltime::config& cfg) {
        cfg.reconcile.chunk_accounts = 1;
        cfg.reconcile.chunk_pause_ms = 50;
    });
    e.fund(1, 100, 1000);
    auto pending = e.ask_run();
    // Stopped once the run is under way (99 chunks with their pauses still to go).
    REQUIRE(fulltime::test::eventually(
        [&] { return e.reconciliation_metrics().run_accounts_checked.value() >= 1; }, 60s));
    e.on_loop([](fulltime::actors::reconciliation_service* r) -> asio::awaitable<bool> {
        r->stop();
        co_return true;
    }(&e.reconciliation()));
    REQUIRE(pending.wait_for(10s) == std::future_status::ready);
    auto r = pending.get();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == fulltime::db::errc::pool_closed);
}

TEST_CASE("a scheduled run needs no request") {
    reconcile_engine e([](fulltime::config& cfg) { cfg.reconcile.interval_ms = 100; });
    e.fund(1, 5, 1000);
    e.exec("UPDATE accounts SET available = available + 1 WHERE account_id = 5");
    // The run records its incident before it ends and counts itself: wait for both.
    const auto until = steady::now() + 20s;
    while (steady::now() < until &&
           (e.incidents() == 0 || e.reconciliation_metrics().runs_ok.value() < 1)) {
        std::this_thread::sleep_for(50ms);
    }
    CHECK(e.incidents() == 1);
    CHECK(e.reconciliation_metrics().runs_ok.value() >= 1);
    CHECK(e.reconciliation_metrics().last_success_unix_ms.load() > 0);
    CHECK(e.metrics_text().find("fulltime_reconcile_last_success_timestamp_seconds") !=
          std::string::npos);
}

TEST_CASE("each audit statement passes on good books and fails on its own corruption") {
    reconcile_engine e;
    e.add_market(1, {{11, 20000}});
    e.fund(1, 3, 10000);
    REQUIRE(e.place(1, "k1", 11, 1000) == "placed");
    const auto findings = [&]() {
        return e.on_loop(
            [](std::string url) -> asio::awaitable<std::map<std::string, std::int64_t>> {
                std::map<std::string, std::int64_t> out;
                auto conn = co_await fulltime::db::connection::open(
                    co_await asio::this_coro::executor, url, 5s, 30s);
                if (!conn) {
                    co_return out;
                }
                for (const auto& inv : fulltime::db::audit_invariants()) {
                    auto f = co_await fulltime::db::check_invariant(**conn, inv, 30000);
                    out[std::string(inv.name)] = f ? f->violations : -1;
                }
                co_return out;
            }(e.url()));
    };
    const auto good = findings();
    REQUIRE(good.size() == fulltime::db::audit_invariants().size());
    for (const auto& [name, n] : good) {
        CHECK_MESSAGE(n == 0, name);
    }
    // Each corruption breaks the invariant it names (and may break others it implies).
    e.exec("UPDATE accounts SET owed = owed + 3 WHERE account_id = 2");
    CHECK(findings().at("balances_match_ledger") == 1);
    e.exec("UPDATE accounts SET owed = owed - 3 WHERE account_id = 2");
    e.exec(
        "INSERT INTO bets (account_id, market_id, selection_id, currency, stake, odds, "
        "idempotency_key) VALUES (1, 1, 11, 'EUR', 100, 20000, 'k1')");
    const auto dup = findings();
    CHECK(dup.at("one_bet_per_idempotency_key") == 1);
    CHECK(dup.at("bet_has_one_reservation") == 1);
    CHECK(dup.at("balances_match_ledger") == 0);
    e.exec("DELETE FROM bets WHERE bet_id = (SELECT max(bet_id) FROM bets)");
    e.exec(
        "INSERT INTO bet_settlements (bet_id, version, kind, outcome, payout, "
        "result_event_id, placed_at) SELECT bet_id, 1, 'cancel', 'void', stake, 0, placed_at "
        "FROM bets");
    e.exec(
        "INSERT INTO bet_settlements (bet_id, version, kind, result_event_id, placed_at) SELECT "
        "bet_id, 1, 'reverse', 0, placed_at FROM bets");
    CHECK(findings().at("bet_settlements_consistent") == 1);
    // Read-only, even in the server: nothing an audit statement runs can write.
    CHECK(e.text("SELECT count(*) FROM incidents") == "0");
}
