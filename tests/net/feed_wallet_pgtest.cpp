// The catalog feed and the operator API against the real schema: the gateway in-process on an
// ephemeral port with real pools on a migrated scratch database, driven by the blocking test
// client from this thread while the io_context runs on another. Every scenario ends by checking
// docs/design.md's money invariants.

#include "fulltime/config/config.hpp"
#include "fulltime/core/token.hpp"
#include "support/engine_fixture.hpp"

#include <doctest/doctest.h>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <set>
#include <thread>

namespace {

namespace token = fulltime::token;
using fulltime::test::bearer;
using fulltime::test::contains;
using fulltime::test::http_call;
using fulltime::test::ws_client;
using nlohmann::json;
using namespace std::chrono_literals;

// This file's market defaults (the feed creates markets with them; the first test reads them
// back), over the defaults of tests/support/test_config.hpp.
void feed_wallet_config(fulltime::config& cfg) {
    // stake_min_minor, stake_max_minor, liability_limit_minor, exposure_shards
    cfg.markets = fulltime::market_defaults{10, 100000000, 1000003, 4};
}

// The gateway with the feed and the operator routes on the engine's pools
// (tests/support/engine_fixture.hpp).
class wallet_engine : public fulltime::test::engine {
public:
    wallet_engine()
        : fulltime::test::engine({.gateway = true, .feed = true, .operator_routes = true},
                                 feed_wallet_config) {}

    std::string metrics() const { return fulltime::test::http_get(port(), "/metrics").body; }

    /// Checks docs/design.md's money invariants on the whole database (check_money_invariants)
    /// and that every market's shard rows add up to its limit.
    void check_money_invariants() const {
        fulltime::test::engine::check_money_invariants();
        // The shard rows of every market add up to its limit and hold no more than their share.
        CHECK(text("SELECT count(*) FROM markets m WHERE m.liability_limit <> "
                   "(SELECT sum(e.liability_limit) FROM market_exposure e "
                   " WHERE e.market_id = m.market_id) "
                   "OR m.exposure_shards <> (SELECT count(*) FROM market_exposure e "
                   " WHERE e.market_id = m.market_id)") == "0");
    }
};

ws_client open_feed(std::uint16_t port) {
    return fulltime::test::open_ws(port, "/v1/feed", bearer(token::kind::producer));
}

// Sends one message (with the id every request carries, "t" unless it has one) and reads the
// reply.
json round_trip(ws_client& c, json message) {
    if (!message.contains("id")) {
        message["id"] = "t";
    }
    c.send_text(message.dump());
    const auto r = c.read();
    REQUIRE_MESSAGE(r.text.has_value(), "no reply: closed=" << r.closed << " " << r.error);
    return json::parse(*r.text);
}

json round_trip_text(ws_client& c, const std::string& text) {
    c.send_text(text);
    const auto r = c.read();
    REQUIRE_MESSAGE(r.text.has_value(), "no reply: closed=" << r.closed << " " << r.error);
    return json::parse(*r.text);
}

json market_message(std::int64_t market_id = 100) {
    return json{
        {"type", "market"},
        {"id", "m-" + std::to_string(market_id)},
        {"market_id", market_id},
        {"event_id", 10},
        {"name", "Match winner"},
        {"status", "open"},
        {"selections",
         json::array(
             {{{"selection_id", market_id * 10 + 1}, {"name", "Home"}, {"odds", "2.10"}},
              {{"selection_id", market_id * 10 + 2}, {"name", "Away"}, {"odds", "3.40"}}})}};
}

fulltime::test::http_reply post_feed(std::uint16_t port, const std::string& body,
                                     token::kind k = token::kind::producer) {
    return http_call(port, "POST", "/v1/feed", body, bearer(k));
}

fulltime::test::http_reply admin_post(std::uint16_t port, const std::string& target,
                                      const json& body) {
    return http_call(port, "POST", target, body.dump(), bearer(token::kind::admin));
}

fulltime::test::http_reply deposit(std::uint16_t port, std::int64_t account,
                                   const std::string& amount, const std::string& key) {
    return admin_post(port, "/v1/accounts/" + std::to_string(account) + "/deposits",
                      json{{"amount", amount}, {"key", key}});
}

fulltime::test::http_reply withdraw(std::uint16_t port, std::int64_t account,
                                    const std::string& amount, const std::string& key) {
    return admin_post(port, "/v1/accounts/" + std::to_string(account) + "/withdrawals",
                      json{{"amount", amount}, {"key", key}});
}

json get_account(std::uint16_t port, std::int64_t account) {
    const auto r = http_call(port, "GET", "/v1/accounts/" + std::to_string(account), {},
                             bearer(token::kind::admin));
    REQUIRE(r.status == 200);
    return json::parse(r.body);
}

}  // namespace

TEST_CASE("feed over WebSocket creates a market with its event and selections and shard rows") {
    wallet_engine e;
    auto c = open_feed(e.port());
    json m = market_message();
    m["event_name"] = "Lyon - Nantes";
    m["settle_deadline_at"] = "2030-05-01T20:30:00+02:00";
    const json ack = round_trip(c, m);
    CHECK(ack == json{{"type", "ack"}, {"id", "m-100"}, {"market_id", 100}, {"created", true}});

    CHECK(e.text("SELECT name FROM events WHERE event_id = 10") == "Lyon - Nantes");
    CHECK(e.text("SELECT concat_ws('|', event_id, name, status, stake_min, stake_max, "
                 "liability_limit, exposure_shards) FROM markets WHERE market_id = 100") ==
          "10|Match winner|open|10|100000000|1000003|4");
    CHECK(e.text("SELECT settle_deadline_at = '2030-05-01T18:30:00Z' FROM markets "
                 "WHERE market_id = 100") == "t");
    CHECK(e.text("SELECT string_agg(selection_id || ':' || name || ':' || odds, ',' "
                 "ORDER BY selection_id) FROM selections WHERE market_id = 100") ==
          "1001:Home:21000,1002:Away:34000");
    // 1000003 over 4 shards: 250000 each, the remainder 3 on shard 0.
    CHECK(e.text("SELECT string_agg(shard || ':' || liability_limit || ':' || liability, ',' "
                 "ORDER BY shard) FROM market_exposure WHERE market_id = 100") ==
          "0:250003:0,1:250000:0,2:250000:0,3:250000:0");
    CHECK(e.text("SELECT count(*) FROM settlement_progress WHERE market_id = 100") == "1");

    // Explicit limits and shards are used.
    json other = market_message(200);
    other["id"] = 7;
    other["stake_min"] = "1.00";
    other["stake_max"] = "50.00";
    other["liability_limit"] = "100.00";
    other["exposure_shards"] = 3;
    CHECK(round_trip(c, other) ==
          json{{"type", "ack"}, {"id", 7}, {"market_id", 200}, {"created", true}});
    CHECK(e.text("SELECT concat_ws('|', stake_min, stake_max, liability_limit, exposure_shards) "
                 "FROM markets WHERE market_id = 200") == "100|5000|10000|3");
    CHECK(e.text("SELECT string_agg(liability_limit::text, ',' ORDER BY shard) "
                 "FROM market_exposure WHERE market_id = 200") == "3334,3333,3333");
    // The event keeps its name when a later message names none.
    CHECK(e.text("SELECT name FROM events WHERE event_id = 10") == "Lyon - Nantes");
    e.check_money_invariants();
}

TEST_CASE("a market message for an existing market updates what may change and refuses the rest") {
    wallet_engine e;
    auto c = open_feed(e.port());
    REQUIRE(round_trip(c, market_message())["type"] == "ack");

    json update = market_message();
    update["name"] = "Full-time result";
    update["status"] = "suspended";
    update["selections"] =
        json::array({{{"selection_id", 1001}, {"name", "Home"}, {"odds", "2.00"}},
                     {{"selection_id", 1003}, {"name", "Draw"}, {"odds", "3.10"}}});
    update["stake_max"] = "20.00";
    update["liability_limit"] = "80.00";
    CHECK(round_trip(c, update) ==
          json{{"type", "ack"}, {"id", "m-100"}, {"market_id", 100}, {"created", false}});
    CHECK(e.text("SELECT concat_ws('|', name, status, stake_min, stake_max, liability_limit) "
                 "FROM markets WHERE market_id = 100") ==
          "Full-time result|suspended|10|2000|8000");
    // Selections left out are kept; listed ones are updated or added.
    CHECK(e.text("SELECT string_agg(selection_id || ':' || name || ':' || odds, ',' "
                 "ORDER BY selection_id) FROM selections WHERE market_id = 100") ==
          "1001:Home:20000,1002:Away:34000,1003:Draw:31000");
    CHECK(e.text("SELECT string_agg(liability_limit::text, ',' ORDER BY shard) "
                 "FROM market_exposure WHERE market_id = 100") == "2000,2000,2000,2000");

    // The shard count is fixed at creation.
    json shards = market_message();
    shards["exposure_shards"] = 8;
    json r = round_trip(c, shards);
    CHECK(r["type"] == "error");
    CHECK(r["id"] == "m-100");
    CHECK(r["code"] == "conflict");
    CHECK(contains(r["message"], "exposure_shards is fixed"));
    // The event cannot change.
    json moved = market_message();
    moved["event_id"] = 11;
    r = round_trip(c, moved);
    CHECK(r["code"] == "conflict");
    CHECK(contains(r["message"], "event"));
    // A limit below the liability a shard holds is refused, and nothing changes.
    REQUIRE(e.text("UPDATE market_exposure SET liability = 1500 WHERE market_id = 100 AND "
                   "shard = 2 RETURNING liability") == "1500");
    json lower = market_message();
    lower["name"] = "Should not be stored";
    lower["liability_limit"] = "40.00";
    r = round_trip(c, lower);
    CHECK(r["code"] == "conflict");
    CHECK(contains(r["message"], "below the liability"));
    CHECK(
        e.text("SELECT concat_ws('|', name, liability_limit) FROM markets WHERE market_id = 100") ==
        "Full-time result|8000");
    // A limit that leaves every shard above its liability is re-spread.
    lower["liability_limit"] = "60.02";
    lower["name"] = "Full-time result";
    CHECK(round_trip(c, lower)["type"] == "ack");
    CHECK(e.text("SELECT string_agg(liability_limit || '/' || liability, ',' ORDER BY shard) "
                 "FROM market_exposure WHERE market_id = 100") == "1502/0,1500/0,1500/1500,1500/0");
    // Limits merged with stored values must stay consistent.
    json limits = market_message();
    limits["stake_min"] = "30.00";
    r = round_trip(c, limits);
    CHECK(r["code"] == "invalid_request");
    CHECK(contains(r["message"], "stake_min 30.00 would be above stake_max 20.00"));
    // A selection of another market is refused and nothing of the message is stored.
    REQUIRE(round_trip(c, market_message(300))["type"] == "ack");
    json stolen = market_message();
    stolen["name"] = "Stolen";
    stolen["selections"] =
        json::array({{{"selection_id", 3001}, {"name", "Home"}, {"odds", "2.00"}}});
    r = round_trip(c, stolen);
    CHECK(r["code"] == "conflict");
    CHECK(r["message"] == "selection 3001 belongs to market 300");
    CHECK(e.text("SELECT name FROM markets WHERE market_id = 100") == "Full-time result");
    CHECK(e.text("SELECT market_id FROM selections WHERE selection_id = 3001") == "300");
    // Creating a market with another market's selection is refused as a whole.
    json fresh = market_message(400);
    fresh["selections"] =
        json::array({{{"selection_id", 3002}, {"name", "Away"}, {"odds", "2.00"}}});
    r = round_trip(c, fresh);
    CHECK(r["code"] == "conflict");
    CHECK(e.text("SELECT count(*) FROM markets WHERE market_id = 400") == "0");
    CHECK(e.text("SELECT count(*) FROM market_exposure WHERE market_id = 400") == "0");
    e.check_money_invariants();
}

TEST_CASE("odds and suspend and resume change one market and a closed market stays closed") {
    wallet_engine e;
    auto c = open_feed(e.port());
    REQUIRE(round_trip(c, market_message())["type"] == "ack");
    REQUIRE(round_trip(c, market_message(200))["type"] == "ack");

    CHECK(round_trip(c, json{{"type", "odds"},
                             {"id", 5},
                             {"market_id", 100},
                             {"selection_id", 1001},
                             {"odds", "2.20"}}) ==
          json{{"type", "ack"}, {"id", 5}, {"market_id", 100}});
    CHECK(e.text("SELECT odds FROM selections WHERE selection_id = 1001") == "22000");
    json r = round_trip(
        c, json{{"type", "odds"}, {"market_id", 100}, {"selection_id", 2001}, {"odds", "2.20"}});
    CHECK(r["code"] == "unknown_selection");
    CHECK(r["message"] == "selection 2001 is not a selection of market 100");
    CHECK(e.text("SELECT odds FROM selections WHERE selection_id = 2001") == "21000");
    r = round_trip(
        c, json{{"type", "odds"}, {"market_id", 999}, {"selection_id", 1001}, {"odds", "2.20"}});
    CHECK(r["code"] == "unknown_market");
    CHECK(r["message"] == "market 999 does not exist");

    CHECK(round_trip(c, json{{"type", "suspend"}, {"market_id", 100}})["type"] == "ack");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "suspended");
    CHECK(round_trip(c, json{{"type", "suspend"}, {"market_id", 100}})["type"] == "ack");
    CHECK(round_trip(c, json{{"type", "resume"}, {"market_id", 100}})["type"] == "ack");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "open");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 200") == "open");
    CHECK(round_trip(c, json{{"type", "resume"}, {"market_id", 999}})["code"] == "unknown_market");

    json close = market_message();
    close["status"] = "closed";
    CHECK(round_trip(c, close)["type"] == "ack");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "closed");
    // A repeated close is acknowledged; every other change is refused.
    CHECK(round_trip(c, close)["type"] == "ack");
    for (const json& attempt :
         {json{{"type", "resume"}, {"market_id", 100}},
          json{{"type", "suspend"}, {"market_id", 100}},
          json{{"type", "odds"}, {"market_id", 100}, {"selection_id", 1001}, {"odds", "5.00"}},
          market_message()}) {
        r = round_trip(c, attempt);
        CHECK(r["type"] == "error");
        CHECK(r["code"] == "market_closed");
        CHECK(r["message"] == "market 100 is closed and stays closed");
    }
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "closed");
    // The closing message carried odds 2.10; the refused odds change left them there.
    CHECK(e.text("SELECT odds FROM selections WHERE selection_id = 1001") == "21000");
    e.check_money_invariants();
}

TEST_CASE("bad feed input gets a clear error and the connection stays usable") {
    wallet_engine e;
    auto c = open_feed(e.port());
    json r = round_trip_text(c, "{not json");
    CHECK(r["code"] == "invalid_json");
    r = round_trip(c, json{{"type", "result"}, {"id", "r1"}, {"market_id", 1}});
    CHECK(r["code"] == "invalid_request");
    CHECK(r["id"] == "r1");
    json bad = market_message();
    bad["selections"][0]["odds"] = "1.00";
    r = round_trip(c, bad);
    CHECK(r["type"] == "error");
    CHECK(r["id"] == "m-100");
    CHECK(r["code"] == "invalid_request");
    CHECK(contains(r["message"], "selections[0].odds: "));
    bad = market_message();
    bad["stake_maximum"] = "5.00";
    CHECK(round_trip(c, bad)["message"] == "unknown field \"stake_maximum\"");
    bad = market_message();
    bad["market_id"] = -1;
    CHECK(round_trip(c, bad)["message"] == "market_id: must be a positive integer");
    bad = market_message();
    bad["stake_min"] = "2000000.00";  // above the default stake_max of 1000000.00
    r = round_trip(c, bad);
    CHECK(r["code"] == "invalid_request");
    CHECK(contains(r["message"], "stake_min 2000000.00 would be above stake_max 1000000.00"));
    CHECK(round_trip(
              c, json{{"type", "odds"}, {"market_id", 100}, {"selection_id", 1001}})["message"] ==
          "odds: is required");
    CHECK(round_trip(c, json{{"type", "suspend"}})["message"] == "market_id: is required");
    CHECK(e.text("SELECT count(*) FROM markets") == "0");
    // Still usable.
    CHECK(round_trip(c, market_message())["type"] == "ack");
    CHECK(contains(e.metrics(),
                   "fulltime_feed_messages_total{type=\"market\",outcome=\"invalid\"} 4\n"));
    CHECK(
        contains(e.metrics(), "fulltime_feed_messages_total{type=\"market\",outcome=\"ack\"} 1\n"));
    e.check_money_invariants();
}

TEST_CASE("POST /v1/feed takes one message with a producer token") {
    wallet_engine e;
    auto r = post_feed(e.port(), market_message().dump());
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) ==
          json{{"type", "ack"}, {"id", "m-100"}, {"market_id", 100}, {"created", true}});
    r = post_feed(e.port(), json{{"type", "suspend"}, {"id", 9}, {"market_id", 100}}.dump());
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == json{{"type", "ack"}, {"id", 9}, {"market_id", 100}});
    // docs/protocol-feed.md's feed messages carry no id: without one the ack has none either.
    r = post_feed(e.port(), json{{"type", "resume"}, {"market_id", 100}}.dump());
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == json{{"type", "ack"}, {"market_id", 100}});
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "open");
    // An id of the wrong type is still refused, and changes nothing.
    r = post_feed(e.port(), json{{"type", "suspend"}, {"id", 1.5}, {"market_id", 100}}.dump());
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["code"] == "invalid_request");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "open");

    r = post_feed(e.port(), "{oops");
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["code"] == "invalid_json");
    r = post_feed(e.port(),
                  R"({"type":"odds","id":1,"market_id":100,"selection_id":1001,"odds":"0.5"})");
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["code"] == "invalid_request");
    CHECK(contains(json::parse(r.body)["detail"], "odds: "));
    r = post_feed(e.port(), R"({"type":"teleport","id":1,"market_id":100})");
    CHECK(r.status == 400);
    r = post_feed(e.port(),
                  R"({"type":"odds","id":1,"market_id":7,"selection_id":1001,"odds":"2.50"})");
    CHECK(r.status == 404);
    CHECK(json::parse(r.body)["code"] == "unknown_market");
    json stolen = market_message(200);
    stolen["selections"] =
        json::array({{{"selection_id", 1001}, {"name", "Home"}, {"odds", "2.00"}}});
    r = post_feed(e.port(), stolen.dump());
    CHECK(r.status == 409);
    CHECK(json::parse(r.body)["code"] == "conflict");

    // Only a producer token is accepted.
    CHECK(post_feed(e.port(), market_message(500).dump(), token::kind::account).status == 401);
    CHECK(post_feed(e.port(), market_message(500).dump(), token::kind::admin).status == 401);
    CHECK(http_call(e.port(), "POST", "/v1/feed", market_message(500).dump()).status == 401);
    {
        ws_client c(e.port());
        CHECK(c.upgrade("/v1/feed", bearer(token::kind::account)).status == 401);
    }
    CHECK(e.text("SELECT count(*) FROM markets WHERE market_id = 500") == "0");
    e.check_money_invariants();
}

TEST_CASE("accounts are created once and read from the primary") {
    wallet_engine e;
    auto r = admin_post(e.port(), "/v1/accounts", json{{"account_id", 42}, {"currency", "EUR"}});
    CHECK(r.status == 201);
    CHECK(json::parse(r.body) == json{{"account_id", 42},
                                      {"currency", "EUR"},
                                      {"available", "0.00"},
                                      {"reserved", "0.00"},
                                      {"owed", "0.00"}});
    r = admin_post(e.port(), "/v1/accounts", json{{"account_id", 42}, {"currency", "EUR"}});
    CHECK(r.status == 200);
    CHECK(json::parse(r.body)["account_id"] == 42);
    r = admin_post(e.port(), "/v1/accounts", json{{"account_id", 42}, {"currency", "USD"}});
    CHECK(r.status == 409);
    CHECK(json::parse(r.body) ==
          fulltime::test::problem_json(409, "Conflict", "account_exists",
                                       "account 42 exists with currency EUR"));
    r = admin_post(e.port(), "/v1/accounts", json{{"account_id", 43}, {"currency", "eur"}});
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["code"] == "invalid_request");
    r = http_call(e.port(), "POST", "/v1/accounts", "nope", bearer(token::kind::admin));
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["code"] == "invalid_json");

    REQUIRE(deposit(e.port(), 42, "12.34", "d1").status == 201);
    CHECK(get_account(e.port(), 42) == json{{"account_id", 42},
                                            {"currency", "EUR"},
                                            {"available", "12.34"},
                                            {"reserved", "0.00"},
                                            {"owed", "0.00"}});
    r = http_call(e.port(), "GET", "/v1/accounts/77", {}, bearer(token::kind::admin));
    CHECK(r.status == 404);
    CHECK(json::parse(r.body)["code"] == "unknown_account");
    r = http_call(e.port(), "GET", "/v1/accounts/x7", {}, bearer(token::kind::admin));
    CHECK(r.status == 400);
    r = http_call(e.port(), "GET", "/v1/accounts/42/more", {}, bearer(token::kind::admin));
    CHECK(r.status == 404);

    // The admin token is required on every operator route.
    for (auto k : {token::kind::account, token::kind::producer}) {
        CHECK(http_call(e.port(), "GET", "/v1/accounts/42", {}, bearer(k)).status == 401);
        CHECK(http_call(e.port(), "POST", "/v1/accounts",
                        json{{"account_id", 50}, {"currency", "EUR"}}.dump(), bearer(k))
                  .status == 401);
        CHECK(http_call(e.port(), "POST", "/v1/accounts/42/deposits",
                        json{{"amount", "1.00"}, {"key", "x"}}.dump(), bearer(k))
                  .status == 401);
    }
    CHECK(http_call(e.port(), "GET", "/v1/accounts/42").status == 401);
    CHECK(e.text("SELECT count(*) FROM accounts") == "1");
    CHECK(e.text("SELECT available FROM accounts WHERE account_id = 42") == "1234");
    e.check_money_invariants();
}

TEST_CASE("a deposit key moves money exactly once and refuses another amount") {
    wallet_engine e;
    REQUIRE(
        admin_post(e.port(), "/v1/accounts", json{{"account_id", 1}, {"currency", "EUR"}}).status ==
        201);
    auto r = deposit(e.port(), 1, "100.00", "k1");
    REQUIRE(r.status == 201);
    const json first = json::parse(r.body);
    CHECK(first["replayed"] == false);
    CHECK(first["amount"] == "100.00");
    CHECK(first["kind"] == "deposit");
    CHECK(first["currency"] == "EUR");
    CHECK(first["key"] == "k1");
    CHECK(first["account_id"] == 1);

    r = deposit(e.port(), 1, "100.00", "k1");
    CHECK(r.status == 200);
    json again = json::parse(r.body);
    CHECK(again["replayed"] == true);
    again["replayed"] = false;
    CHECK(again == first);

    r = deposit(e.port(), 1, "100.01", "k1");
    CHECK(r.status == 409);
    CHECK(json::parse(r.body)["code"] == "idempotency_key_reused");
    CHECK(contains(json::parse(r.body)["detail"], "100.00"));
    CHECK(get_account(e.port(), 1)["available"] == "100.00");
    CHECK(e.text("SELECT entry_key FROM ledger_transfers") == "deposit:1:k1");
    CHECK(e.text("SELECT concat_ws('|', debit_side, credit_side, credit_account_id, amount) "
                 "FROM ledger_transfers") == "cash|available|1|10000");

    // The same key on a withdrawal or another account is another key.
    REQUIRE(
        admin_post(e.port(), "/v1/accounts", json{{"account_id", 2}, {"currency", "EUR"}}).status ==
        201);
    CHECK(deposit(e.port(), 2, "5.00", "k1").status == 201);
    CHECK(withdraw(e.port(), 1, "5.00", "k1").status == 201);
    CHECK(get_account(e.port(), 1)["available"] == "95.00");
    CHECK(get_account(e.port(), 2)["available"] == "5.00");

    r = deposit(e.port(), 99, "5.00", "k1");
    CHECK(r.status == 404);
    CHECK(json::parse(r.body)["code"] == "unknown_account");
    CHECK(contains(e.metrics(),
                   "fulltime_wallet_transfers_total{kind=\"deposit\",outcome=\"replayed\"} 1\n"));
    CHECK(contains(e.metrics(),
                   "fulltime_wallet_transfers_total{kind=\"deposit\",outcome=\"key_reused\"} 1\n"));
    e.check_money_invariants();
}

TEST_CASE("the Idempotency-Key header is a deposit's key, and a body naming another is refused") {
    wallet_engine e;
    REQUIRE(
        admin_post(e.port(), "/v1/accounts", json{{"account_id", 7}, {"currency", "EUR"}}).status ==
        201);
    const auto post = [&](const json& body, const std::string& key) {
        auto headers = bearer(token::kind::admin);
        headers.emplace_back("Idempotency-Key", key);
        return http_call(e.port(), "POST", "/v1/accounts/7/deposits", body.dump(), headers);
    };
    auto r = post(json{{"amount", "20.00"}}, "hdr-1");
    REQUIRE(r.status == 201);
    CHECK(json::parse(r.body)["key"] == "hdr-1");
    // The same key again, by header or by body, is the same deposit.
    r = post(json{{"amount", "20.00"}}, "hdr-1");
    CHECK(r.status == 200);
    CHECK(json::parse(r.body)["replayed"] == true);
    CHECK(deposit(e.port(), 7, "20.00", "hdr-1").status == 200);
    r = post(json{{"amount", "20.00"}, {"key", "hdr-1"}}, "hdr-1");
    CHECK(r.status == 200);

    r = post(json{{"amount", "20.00"}, {"key", "body-2"}}, "hdr-2");
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["code"] == "invalid_request");
    CHECK(contains(json::parse(r.body)["detail"], "Idempotency-Key"));
    // The header is checked as text where it arrives, and the refusal names it.
    r = post(json{{"amount", "20.00"}}, "");
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["detail"] == "the Idempotency-Key header must not be empty");
    r = post(json{{"amount", "20.00"}}, "hdr-\xff");
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["detail"] == "the Idempotency-Key header must be valid UTF-8");

    CHECK(get_account(e.port(), 7)["available"] == "20.00");
    CHECK(e.text("SELECT string_agg(entry_key, ',') FROM ledger_transfers") == "deposit:7:hdr-1");
    e.check_money_invariants();
}

TEST_CASE("concurrent deposits make one transfer per key") {
    wallet_engine e;
    REQUIRE(
        admin_post(e.port(), "/v1/accounts", json{{"account_id", 7}, {"currency", "EUR"}}).status ==
        201);
    constexpr int requests = 20;
    SUBCASE("twenty requests with one key") {
        std::vector<std::future<fulltime::test::http_reply>> replies;
        for (int i = 0; i < requests; ++i) {
            replies.push_back(std::async(std::launch::async,
                                         [&] { return deposit(e.port(), 7, "10.00", "same"); }));
        }
        int applied = 0;
        int replayed = 0;
        std::set<std::int64_t> transfer_ids;
        for (auto& f : replies) {
            const auto r = f.get();
            REQUIRE_MESSAGE((r.status == 201 || r.status == 200), r.status << " " << r.body);
            const auto body = json::parse(r.body);
            (body["replayed"] == true ? replayed : applied) += 1;
            transfer_ids.insert(body["transfer_id"].get<std::int64_t>());
        }
        CHECK(applied == 1);
        CHECK(replayed == requests - 1);
        CHECK(transfer_ids.size() == 1);
        CHECK(e.text("SELECT count(*) FROM ledger_transfers") == "1");
        CHECK(get_account(e.port(), 7)["available"] == "10.00");
    }
    SUBCASE("twenty requests with twenty keys") {
        std::vector<std::future<fulltime::test::http_reply>> replies;
        for (int i = 0; i < requests; ++i) {
            replies.push_back(std::async(std::launch::async, [&, i] {
                return deposit(e.port(), 7, "10.00", "key-" + std::to_string(i));
            }));
        }
        for (auto& f : replies) {
            const auto r = f.get();
            CHECK_MESSAGE(r.status == 201, r.status << " " << r.body);
        }
        CHECK(e.text("SELECT count(*) FROM ledger_transfers") == "20");
        CHECK(get_account(e.port(), 7)["available"] == "200.00");
    }
    e.check_money_invariants();
}

TEST_CASE("a withdrawal above available is refused and changes nothing") {
    wallet_engine e;
    REQUIRE(
        admin_post(e.port(), "/v1/accounts", json{{"account_id", 3}, {"currency", "GBP"}}).status ==
        201);
    REQUIRE(deposit(e.port(), 3, "50.00", "d1").status == 201);
    auto r = withdraw(e.port(), 3, "50.01", "w1");
    CHECK(r.status == 409);
    CHECK(json::parse(r.body) == fulltime::test::problem_json(409, "Conflict", "insufficient_funds",
                                                              "available balance is below 50.01"));
    CHECK(e.text("SELECT count(*) FROM ledger_transfers") == "1");
    CHECK(get_account(e.port(), 3)["available"] == "50.00");

    r = withdraw(e.port(), 3, "50.00", "w2");
    CHECK(r.status == 201);
    const auto body = json::parse(r.body);
    CHECK(body["kind"] == "withdrawal");
    CHECK(body["currency"] == "GBP");
    CHECK(get_account(e.port(), 3)["available"] == "0.00");
    CHECK(e.text("SELECT concat_ws('|', debit_side, debit_account_id, credit_side, amount) "
                 "FROM ledger_transfers WHERE entry_key = 'withdrawal:3:w2'") ==
          "available|3|cash|5000");
    CHECK(withdraw(e.port(), 3, "50.00", "w2").status == 200);
    CHECK(withdraw(e.port(), 3, "0.01", "w3").status == 409);
    CHECK(e.text("SELECT sum(amount) FILTER (WHERE credit_side = 'cash') - "
                 "sum(amount) FILTER (WHERE debit_side = 'cash') FROM ledger_transfers") == "0");
    CHECK(contains(e.metrics(),
                   "fulltime_wallet_transfers_total{kind=\"withdrawal\",outcome="
                   "\"insufficient_funds\"} 2\n"));
    e.check_money_invariants();
}

TEST_CASE("bad amounts and keys are refused with a clear message") {
    wallet_engine e;
    REQUIRE(
        admin_post(e.port(), "/v1/accounts", json{{"account_id", 4}, {"currency", "EUR"}}).status ==
        201);
    const auto refused = [&](const json& body) {
        const auto r = admin_post(e.port(), "/v1/accounts/4/deposits", body);
        CHECK(r.status == 400);
        const auto parsed = json::parse(r.body);
        CHECK(parsed["code"] == "invalid_request");
        return parsed["detail"].get<std::string>();
    };
    CHECK(contains(refused(json{{"amount", "0"}, {"key", "a"}}), "amount: "));
    CHECK(contains(refused(json{{"amount", "0.00"}, {"key", "a"}}), "amount: "));
    CHECK(contains(refused(json{{"amount", "-5.00"}, {"key", "a"}}), "amount: "));
    CHECK(contains(refused(json{{"amount", "1.005"}, {"key", "a"}}), "amount: "));
    CHECK(contains(refused(json{{"amount", "99999999999999999999.00"}, {"key", "a"}}), "amount: "));
    CHECK(refused(json{{"amount", 5}, {"key", "a"}}) ==
          "amount: must be a decimal string such as \"10.00\"");
    CHECK(refused(json{{"amount", "5.00"}}) == "key: is required");
    CHECK(refused(json{{"amount", "5.00"}, {"key", std::string(256, 'k')}}) ==
          "key: is longer than 255 bytes");
    const auto r =
        admin_post(e.port(), "/v1/accounts/0/deposits", json{{"amount", "1.00"}, {"key", "a"}});
    CHECK(r.status == 400);
    CHECK(admin_post(e.port(), "/v1/accounts/4/refunds", json{{"amount", "1.00"}, {"key", "a"}})
              .status == 404);
    CHECK(e.text("SELECT count(*) FROM ledger_transfers") == "0");
    CHECK(contains(e.metrics(),
                   "fulltime_wallet_transfers_total{kind=\"deposit\",outcome=\"invalid\"} 8\n"));
    e.check_money_invariants();
}

TEST_CASE("a deposit waiting on a held balance row retries then answers busy and writes nothing") {
    wallet_engine e;
    REQUIRE(
        admin_post(e.port(), "/v1/accounts", json{{"account_id", 5}, {"currency", "EUR"}}).status ==
        201);
    std::unique_ptr<PGconn, decltype(&PQfinish)> holder(PQconnectdb(e.url().c_str()), &PQfinish);
    REQUIRE(PQstatus(holder.get()) == CONNECTION_OK);
    PQclear(PQexec(holder.get(), "BEGIN"));
    PQclear(PQexec(holder.get(), "UPDATE accounts SET reserved = reserved WHERE account_id = 5"));

    const auto started = std::chrono::steady_clock::now();
    auto r = deposit(e.port(), 5, "1.00", "held");
    const auto took = std::chrono::steady_clock::now() - started;
    CHECK(r.status == 503);
    CHECK(json::parse(r.body)["code"] == "busy");
    CHECK(r.header("Retry-After") == "1");
    // Four attempts of about 50 ms each, well under a second.
    CHECK(took >= 150ms);
    CHECK(took < 2s);
    CHECK(contains(e.metrics(), "fulltime_wallet_lock_retries_total 3\n"));

    PQclear(PQexec(holder.get(), "ROLLBACK"));
    CHECK(e.text("SELECT count(*) FROM ledger_transfers") == "0");
    r = deposit(e.port(), 5, "1.00", "held");
    CHECK(r.status == 201);
    CHECK(get_account(e.port(), 5)["available"] == "1.00");
    e.check_money_invariants();
}
