// Money integrity, part B (db/functions/fulltime_void_overdue.sql, fulltime_note_overdue.sql,
// fulltime_settle_plan.sql): reservation deadlines, the overdue-reservation sweeper, the operator's
// void of overdue open bets, and the fixed codes of terminal states. In-process: the gateway (feed,
// market routes) and the real settlement actors on real pools over a migrated scratch database;
// producers' events go through POST /v1/feed, the operator's void through POST
// /v1/markets/{id}/void-overdue or the SQL function the CLI command calls. Every scenario compares
// every balance before and after the refused step and ends with the money invariants of
// docs/design.md.

#include "fulltime/actors/reservation_sweeper.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/config/config.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/core/token.hpp"
#include "fulltime/db/pool.hpp"
#include "support/engine_fixture.hpp"
#include "support/http_client.hpp"
#include "support/test_config.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

namespace token = fulltime::token;
using fulltime::test::bearer;
using nlohmann::json;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// This file's settings over the defaults of tests/support/test_config.hpp.
void terminal_states_config(fulltime::config& cfg) {
    cfg.database.statement_timeout_ms = 10000;
    cfg.database.query_timeout_ms = 10000;
    fulltime::test::set_pools(cfg, fulltime::pool_settings{3, 256, 5000});
    cfg.placement.lock_timeout_ms = 200;
    cfg.settlement.batch_bets_max = 3;  // several batches per event: counts carry across them
    cfg.settlement.poll_interval_ms = 100;
    cfg.reservations.grace_s = 600;
    cfg.reservations.default_deadline_s = 86400;
    cfg.reservations.sweep_interval_ms = 100;
    cfg.reservations.sweep_batch_bets_max = 2;  // several chunks per market
    // stake_min_minor, stake_max_minor, liability_limit_minor, exposure_shards
    cfg.markets = fulltime::market_defaults{1, 100000000, 1000000000000, 2};
}

// The gateway (feed, market routes) and the settlement actors, as serve_command wires them
// (tests/support/engine_fixture.hpp).
class terminal_engine : public fulltime::test::engine {
public:
    terminal_engine()
        : fulltime::test::engine(
              {.gateway = true, .feed = true, .market_routes = true, .settlement = true},
              terminal_states_config) {}

    /// Runs one sweep to its end on the engine's loop.
    fulltime::actors::sweep_report sweep() {
        return on_loop(
            fulltime::actors::sweep_reservations(*pools().background, cfg().reservations, memory_));
    }

    /// Waits until the metrics text contains `line`.
    bool wait_metric(const std::string& line) const {
        if (fulltime::test::eventually(
                [&] { return metrics_text().find(line) != std::string::npos; }, 10s, 20ms)) {
            return true;
        }
        MESSAGE(metrics_text());
        return false;
    }

    /// Creates an open market with selections (odds 2.00), through POST /v1/feed.
    void add_market(std::int64_t market, std::vector<std::int64_t> selections,
                    const std::string& settle_deadline_at = {}) {
        json sels = json::array();
        for (auto id : selections) {
            sels.push_back({{"selection_id", id}, {"name", "s"}, {"odds", "2.00"}});
        }
        json m{{"type", "market"}, {"market_id", market}, {"event_id", 1},
               {"name", "m"},      {"status", "open"},    {"selections", sels}};
        if (!settle_deadline_at.empty()) {
            m["settle_deadline_at"] = settle_deadline_at;
        }
        REQUIRE(feed(m).status == 200);
    }

    /// Places one bet with the placement's own function and requires it placed.
    void place(std::int64_t account, const std::string& key, std::int64_t selection,
               std::int64_t stake) {
        REQUIRE(fulltime::test::engine::place(account, key, selection, stake) == "placed");
    }

    fulltime::test::http_reply feed(const json& message) const {
        return fulltime::test::http_call(port(), "POST", "/v1/feed", message.dump(),
                                         bearer(token::kind::producer));
    }

    /// Sends a result event on POST /v1/feed; returns the ack (or the error body).
    json event(std::int64_t market, int seq, const std::string& key, const std::string& type,
               json extra = json::object()) const {
        json m{{"type", type}, {"market_id", market}, {"seq", seq}, {"event_key", key}};
        for (auto& [k, v] : extra.items()) {
            m[k] = v;
        }
        const auto r = feed(m);
        return json::parse(r.body);
    }

    fulltime::test::http_reply void_overdue(std::int64_t market, const json& body = nullptr) {
        return fulltime::test::http_call(
            port(), "POST", "/v1/markets/" + std::to_string(market) + "/void-overdue",
            body.is_null() ? std::string() : body.dump(), bearer(token::kind::admin));
    }

    /// Every balance row and the ledger's size, as one comparable text.
    std::string books() const {
        return text(
            "SELECT string_agg(account_id || ':' || available || '/' || reserved || '/' || owed, "
            "',' ORDER BY account_id) || ' transfers=' || (SELECT count(*) FROM ledger_transfers) "
            "FROM accounts");
    }

    /// The event's skipped counts and refusal: "skipped|refusal|applied".
    std::string outcome(std::int64_t market, int seq) const {
        return text(
            "SELECT coalesce(skipped::text, 'null') || '|' || coalesce(refusal, '-') || "
            "'|' || (applied_at IS NOT NULL) FROM result_events WHERE market_id = " +
            std::to_string(market) + " AND seq = " + std::to_string(seq));
    }

private:
    std::shared_ptr<fulltime::actors::sweep_memory> memory_ =
        std::make_shared<fulltime::actors::sweep_memory>();
};

const json win_101 = {{"outcomes", json::array({{{"selection_id", 101}, {"result", "win"}}})}};

// Seven bets over accounts 1..4 on the market of first_selection and first_selection + 1
// (market 1: 101, 102): more than two batches of 3.
void seven_bets(terminal_engine& e, std::int64_t first_selection = 101,
                const std::string& prefix = "b") {
    for (int i = 1; i <= 7; ++i) {
        e.place(1 + i % 4, prefix + std::to_string(i), first_selection + i % 2, 100 * i);
    }
}

}  // namespace

TEST_CASE(
    "the reservation deadline: settle_deadline_at plus grace, else created_at plus the "
    "default") {
    terminal_engine e;
    e.add_market(1, {101, 102}, "2030-01-01T12:00:00Z");
    e.add_market(2, {201});
    // Grace 600 s from the config.
    CHECK(e.text("SELECT fulltime_reservation_deadline(1, 600, 86400) = "
                 "'2030-01-01T12:10:00Z'::timestamptz") == "t");
    CHECK(e.text("SELECT fulltime_reservation_deadline(1, 0, 86400) = "
                 "'2030-01-01T12:00:00Z'::timestamptz") == "t");
    // No settle_deadline_at: created_at + the default.
    CHECK(e.text("SELECT fulltime_reservation_deadline(2, 600, 86400) = created_at + "
                 "interval '1 day' FROM markets WHERE market_id = 2") == "t");
    CHECK(e.text("SELECT fulltime_reservation_deadline(999, 600, 86400) IS NULL") == "t");
}

TEST_CASE("terminal states over the feed: each records its code and moves no money") {
    terminal_engine e;
    e.add_market(1, {101, 102});
    e.fund(1, 4, 100000);
    seven_bets(e);

    SUBCASE("a result after a cancel without rollback, and a second cancel") {
        REQUIRE(e.event(1, 1, "c1", "cancel")["type"] == "ack");
        REQUIRE(e.wait_applied(1, 1));
        CHECK(e.outcome(1, 1) == "{}|-|true");
        for (int i = 1; i <= 7; ++i) {
            CHECK(e.bet_state("b" + std::to_string(i)) == "void " + std::to_string(100 * i));
        }
        const std::string before = e.books();
        REQUIRE(e.event(1, 2, "r2", "result", win_101)["type"] == "ack");
        REQUIRE(e.wait_applied(1, 2));
        CHECK(e.outcome(1, 2) == R"({"bet_cancelled": 7}|bet_cancelled|true)");
        CHECK(e.books() == before);
        REQUIRE(e.event(1, 3, "c3", "cancel")["type"] == "ack");
        REQUIRE(e.wait_applied(1, 3));
        CHECK(e.outcome(1, 3) == R"({"already_cancelled": 7}|already_cancelled|true)");
        CHECK(e.books() == before);
        // A rollback_result: the result in force skipped every bet, so nothing to reverse.
        REQUIRE(e.event(1, 4, "rr4", "rollback_result")["type"] == "ack");
        REQUIRE(e.wait_applied(1, 4));
        CHECK(e.outcome(1, 4) == R"({"bet_cancelled": 7}|nothing_to_rollback|true)");
        CHECK(e.books() == before);
        // The metric counts each skipped bet under its code (counted just after the commit
        // that wait_applied saw, so waited for).
        CHECK(e.wait_metric(R"(fulltime_settlement_refusals_total{code="bet_cancelled"} 14)"));
        CHECK(e.wait_metric(R"(fulltime_settlement_refusals_total{code="already_cancelled"} 7)"));
        CHECK(e.wait_metric(
            R"(fulltime_settlement_events_refused_total{code="nothing_to_rollback"} 1)"));
        // A producer reads the outcome of its events on GET /v1/feed/markets/{id}/events.
        const auto listed = fulltime::test::http_call(e.port(), "GET", "/v1/feed/markets/1/events",
                                                      {}, bearer(token::kind::producer));
        REQUIRE(listed.status == 200);
        const auto events = json::parse(listed.body)["events"];
        REQUIRE(events.size() == 4);
        CHECK(events[0]["seq"] == 4);
        CHECK(events[0]["refusal"] == "nothing_to_rollback");
        CHECK(events[2]["refusal"] == "bet_cancelled");
        CHECK(events[2]["skipped"]["bet_cancelled"] == 7);
        CHECK(events[3]["refusal"].is_null());
        // The admin token does not open the producer's route.
        CHECK(fulltime::test::http_call(e.port(), "GET", "/v1/feed/markets/1/events", {},
                                        bearer(token::kind::admin))
                  .status == 401);
    }

    SUBCASE("rollbacks with nothing in force") {
        const std::string before = e.books();
        REQUIRE(e.event(1, 1, "rr1", "rollback_result")["type"] == "ack");
        REQUIRE(e.event(1, 2, "rc2", "rollback_cancel")["type"] == "ack");
        REQUIRE(e.wait_applied(1, 2));
        CHECK(e.outcome(1, 1) == R"({"nothing_to_rollback": 7}|nothing_to_rollback|true)");
        CHECK(e.outcome(1, 2) == R"({"nothing_to_rollback": 7}|nothing_to_rollback|true)");
        CHECK(e.books() == before);
        // A real result after them still settles: the refusals left no hole in the seq.
        REQUIRE(e.event(1, 3, "r3", "result", win_101)["type"] == "ack");
        REQUIRE(e.wait_applied(1, 3));
        CHECK(e.outcome(1, 3) == "{}|-|true");
        CHECK(e.bet_state("b2") == "won 400");  // even bets are on 101, which won
        CHECK(e.bet_state("b1") == "lost 0");
    }

    SUBCASE("a windowed cancel skips only the bets it is about") {
        // A cancel of a window with no bet: nothing skipped, nothing refused.
        REQUIRE(e.event(1, 1, "c1", "cancel", {{"end_time", "2000-01-01T00:00:00Z"}})["type"] ==
                "ack");
        REQUIRE(e.wait_applied(1, 1));
        CHECK(e.outcome(1, 1) == "{}|-|true");
    }
    e.check_money_invariants();
}

TEST_CASE("void-overdue voids only open bets, refunds their stakes, once") {
    terminal_engine e;
    e.add_market(1, {101, 102}, "2030-01-01T12:00:00Z");
    e.fund(1, 4, 100000);
    seven_bets(e);
    // Settle the first seven, then reopen the market and take three more: those stay open.
    REQUIRE(e.event(1, 1, "r1", "result", win_101)["type"] == "ack");
    REQUIRE(e.wait_applied(1, 1));
    REQUIRE(e.feed({{"type", "resume"}, {"market_id", 1}}).status == 200);
    e.place(1, "late1", 101, 1000);
    e.place(2, "late2", 102, 2000);
    e.place(2, "late3", 101, 3000);
    const std::string settled_b1 = e.bet_state("b1");

    // Refusals move nothing.
    std::string before = e.books();
    auto r = e.void_overdue(1);
    CHECK(r.status == 409);
    CHECK(json::parse(r.body)["code"] == "not_overdue");
    r = e.void_overdue(999);
    CHECK(r.status == 404);
    CHECK(json::parse(r.body)["code"] == "unknown_market");
    r = e.void_overdue(1, {{"force", "yes"}});
    CHECK(r.status == 400);
    CHECK(e.books() == before);
    CHECK(e.scalar("SELECT count(*) FROM result_events") == 1);

    // Past the deadline (settle_deadline_at + grace is in the past): stored under the next seq.
    e.exec(
        "UPDATE markets SET settle_deadline_at = now() - interval '1 hour' "
        "WHERE market_id = 1");
    const auto accounts_before = e.books();
    const auto avail1 = e.scalar("SELECT available FROM accounts WHERE account_id = 1");
    const auto avail2 = e.scalar("SELECT available FROM accounts WHERE account_id = 2");
    r = e.void_overdue(1);
    REQUIRE(r.status == 200);
    auto body = json::parse(r.body);
    CHECK(body["seq"] == 2);
    CHECK(body["duplicate"] == false);
    CHECK(body["event_key"] == "operator:void-overdue:1");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 1") == "suspended");
    REQUIRE(e.wait_applied(1, 2));
    CHECK(e.bet_state("late1") == "void 1000");
    CHECK(e.bet_state("late2") == "void 2000");
    CHECK(e.bet_state("late3") == "void 3000");
    CHECK(e.bet_state("b1") == settled_b1);
    CHECK(e.outcome(1, 2) == R"({"already_settled": 7}|-|true)");
    // Exactly their stakes came back; nothing else moved.
    CHECK(e.scalar("SELECT available FROM accounts WHERE account_id = 1") == avail1 + 1000);
    CHECK(e.scalar("SELECT available FROM accounts WHERE account_id = 2") == avail2 + 5000);
    CHECK(e.scalar("SELECT sum(reserved) FROM accounts") == 0);
    CHECK(e.books() != accounts_before);

    // The same command again is a duplicate and voids nothing twice; a new key finds nothing.
    before = e.books();
    r = e.void_overdue(1);
    REQUIRE(r.status == 200);
    body = json::parse(r.body);
    CHECK(body["duplicate"] == true);
    CHECK(body["seq"] == 2);
    r = e.void_overdue(1, {{"key", "second-try"}});
    CHECK(r.status == 409);
    CHECK(json::parse(r.body)["code"] == "nothing_to_void");
    CHECK(e.books() == before);

    // A producer's event sent with the seq the void took is a conflict; the next seq is free.
    const auto clash = e.event(1, 2, "late-result", "result", win_101);
    CHECK(clash["code"] == "conflict");
    // A result after the void: the voided bets are skipped as cancelled, the settled ones are
    // corrected as usual.
    REQUIRE(e.event(1, 3, "r3", "result", win_101)["type"] == "ack");
    REQUIRE(e.wait_applied(1, 3));
    CHECK(e.outcome(1, 3) == R"({"bet_cancelled": 3}|-|true)");
    CHECK(e.bet_state("late1") == "void 1000");
    e.check_money_invariants();
}

TEST_CASE("void-overdue after a cancel, and a void that finds its bets gone when it applies") {
    terminal_engine e;
    e.add_market(1, {101, 102}, "2000-01-01T00:00:00Z");
    e.fund(1, 4, 100000);
    seven_bets(e);
    REQUIRE(e.event(1, 1, "c1", "cancel")["type"] == "ack");
    REQUIRE(e.wait_applied(1, 1));
    std::string before = e.books();
    // Every bet is cancelled: refused at once, nothing stored.
    auto r = e.void_overdue(1);
    CHECK(r.status == 409);
    CHECK(json::parse(r.body)["code"] == "nothing_to_void");
    CHECK(e.books() == before);
    // The CLI's SQL function, the same answer.
    CHECK(e.text("SELECT outcome FROM fulltime_void_overdue(1, 'k', 'cli', false, 600, 86400)") ==
          "nothing_to_void");

    // Market 2: a cancel stored but not yet applied when the void is stored (both in one
    // transaction): the void applies after the cancel and finds every bet already void.
    e.add_market(2, {201, 202}, "2000-01-01T00:00:00Z");
    seven_bets(e, 201, "m2-");
    e.exec(
        "BEGIN; SELECT fulltime_record_result(2, 1, 'm2-c1', 'cancel', '{}', 'test'); "
        "SELECT fulltime_void_overdue(2, 'm2-void', 'cli', false, 600, 86400); COMMIT;");
    REQUIRE(e.wait_applied(2, 2));
    CHECK(e.outcome(2, 2) == R"({"already_void": 7}|nothing_to_void|true)");
    for (int i = 1; i <= 7; ++i) {
        CHECK(e.bet_state("m2-" + std::to_string(i)) == "void " + std::to_string(100 * i));
    }
    // Each stake came back once: 7 reservations, 7 refunds on the market.
    CHECK(e.scalar("SELECT count(*) FROM ledger_transfers t JOIN bets b USING (bet_id) WHERE "
                   "b.market_id = 2 AND t.entry_key LIKE '%:cr'") == 7);
    e.check_money_invariants();
}

TEST_CASE("the sweeper opens one incident per overdue market, updates it, and resolves it") {
    terminal_engine e;
    e.add_market(1, {101, 102}, "2000-01-01T00:00:00Z");  // overdue, open bets
    e.add_market(2, {201, 202}, "2000-01-01T00:00:00Z");  // overdue, open bets
    e.add_market(3, {301, 302}, "2099-01-01T00:00:00Z");  // not due
    e.add_market(4, {401, 402}, "2000-01-01T00:00:00Z");  // overdue, all settled
    e.fund(1, 4, 100000);
    seven_bets(e, 101, "a");
    seven_bets(e, 201, "b");
    seven_bets(e, 301, "c");
    seven_bets(e, 401, "d");
    REQUIRE(e.event(4, 1, "m4-r1", "result",
                    {{"outcomes", json::array({{{"selection_id", 401}, {"result", "win"}}})}})
                .value("type", "") == "ack");
    REQUIRE(e.wait_applied(4, 1));
    const std::string before = e.books();

    auto report = e.sweep();
    REQUIRE_MESSAGE(report.ok, report.error);
    CHECK(report.overdue_markets == 2);
    CHECK(report.overdue_bets == 14);
    CHECK(report.opened == 2);
    CHECK(e.scalar("SELECT count(*) FROM incidents") == 2);
    CHECK(e.text("SELECT string_agg(subject || ' ' || market_id || ' ' || currency || ' ' || "
                 "actual || ' ' || (details->>'open_bets') || ' ' || runs, ',' ORDER BY subject) "
                 "FROM incidents WHERE kind = 'overdue_reservation' AND resolved_at IS NULL") ==
          "market:1 1 EUR 2800 7 1,market:2 2 EUR 2800 7 1");
    CHECK(e.text("SELECT expected = extract(epoch FROM timestamptz '2000-01-01T00:10:00Z') "
                 "FROM incidents WHERE subject = 'market:1'") == "t");

    // A second sweep updates the same incidents.
    report = e.sweep();
    REQUIRE(report.ok);
    CHECK(report.opened == 0);
    CHECK(report.updated == 2);
    CHECK(e.scalar("SELECT count(*) FROM incidents") == 2);
    CHECK(e.scalar("SELECT min(runs) FROM incidents") == 2);
    // The sweeper moved no money.
    CHECK(e.books() == before);

    // The operator voids market 1; the next sweep resolves its incident only.
    REQUIRE(e.void_overdue(1).status == 200);
    REQUIRE(e.wait_applied(1, 1));
    report = e.sweep();
    REQUIRE(report.ok);
    CHECK(report.resolved == 1);
    CHECK(report.overdue_markets == 1);
    CHECK(e.text("SELECT resolution FROM incidents WHERE subject = 'market:1'") ==
          "no open bet left on the market");
    CHECK(e.scalar("SELECT count(*) FROM incidents WHERE resolved_at IS NULL") == 1);
    // Market 2's deadline moves into the future: resolved too.
    e.exec("UPDATE markets SET settle_deadline_at = now() + interval '1 day' WHERE market_id = 2");
    report = e.sweep();
    REQUIRE(report.ok);
    CHECK(report.resolved == 1);
    CHECK(e.scalar("SELECT count(*) FROM incidents WHERE resolved_at IS NULL") == 0);
    // Overdue again later: a new incident (the resolved one stays as history).
    e.exec("UPDATE markets SET settle_deadline_at = '2000-01-01' WHERE market_id = 2");
    report = e.sweep();
    CHECK(report.opened == 1);
    CHECK(e.scalar("SELECT count(*) FROM incidents WHERE subject = 'market:2'") == 2);

    // The actor does the same on its own, and publishes the gauges.
    auto& gauges = e.start_sweeper();
    const auto until = steady::now() + 10s;
    while (steady::now() < until && gauges.sweeps.value() < 2) {
        std::this_thread::sleep_for(20ms);
    }
    CHECK(gauges.sweeps.value() >= 2);
    CHECK(gauges.overdue_markets.value() == 1);
    CHECK(gauges.overdue_bets.value() == 7);
    CHECK(e.scalar("SELECT count(*) FROM incidents WHERE resolved_at IS NULL") == 1);
    e.check_money_invariants();
}
