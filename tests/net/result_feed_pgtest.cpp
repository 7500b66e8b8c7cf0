// The result-event intake of the feed against the real schema: `result`, `rollback_result`,
// `cancel` and `rollback_cancel` on the /v1/feed WebSocket and on POST /v1/feed, stored in
// result_events by fulltime_record_result (db/functions/fulltime_record_result.sql) and
// acknowledged after the commit. The gateway runs in-process on an ephemeral port with real pools
// on a migrated scratch database, driven by the blocking test client from this thread while the
// io_context runs on another (the pattern of feed_wallet_pgtest.cpp).

#include "fulltime/config/config.hpp"
#include "fulltime/core/token.hpp"
#include "support/engine_fixture.hpp"

#include <doctest/doctest.h>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

namespace token = fulltime::token;
using fulltime::test::bearer;
using fulltime::test::contains;
using fulltime::test::http_call;
using fulltime::test::ws_client;
using nlohmann::json;
using namespace std::chrono_literals;

// What the result-event hook was told. Shared with the hook, which runs on the engine's loop
// until the engine stopped.
struct hook_calls {
    std::mutex mutex;
    std::vector<std::int64_t> woken;
    std::atomic<bool> throws = false;
};

// The gateway with the feed on the engine's pools (tests/support/engine_fixture.hpp), its
// result-event hook recording the markets it is told about instead of waking settlement.
class result_feed_engine : public fulltime::test::engine {
public:
    result_feed_engine() : result_feed_engine(std::make_shared<hook_calls>()) {}

    std::string metrics() const { return fulltime::test::http_get(port(), "/metrics").body; }

    /// Returns the market ids the hook was called with so far, in order. The hook runs before
    /// the ack is written, so after a reply arrived its call is here.
    std::vector<std::int64_t> woken() const {
        const std::lock_guard lock(calls_->mutex);
        return calls_->woken;
    }

    /// Makes the hook throw after recording its call.
    void make_hook_throw() { calls_->throws = true; }

    /// Returns result_events as one comparable text: every column a producer's message decides,
    /// row by row in id order.
    std::string events() const {
        return text(
            "SELECT coalesce(string_agg(concat_ws('|', result_event_id, market_id, seq, "
            "event_key, kind, payload::text, producer), E'\\n' "
            "ORDER BY result_event_id), '') FROM result_events");
    }

private:
    explicit result_feed_engine(std::shared_ptr<hook_calls> calls)
        : fulltime::test::engine({.gateway = true,
                                  .feed = true,
                                  .on_result_event =
                                      [calls](std::int64_t market_id) {
                                          {
                                              const std::lock_guard lock(calls->mutex);
                                              calls->woken.push_back(market_id);
                                          }
                                          if (calls->throws) {
                                              throw std::runtime_error(
                                                  "the settlement service is not there");
                                          }
                                      }}),
          calls_(std::move(calls)) {}

    std::shared_ptr<hook_calls> calls_;
};

ws_client open_feed(std::uint16_t port, const std::string& producer = "feed-1") {
    return fulltime::test::open_ws(port, "/v1/feed", bearer(token::kind::producer, producer));
}

json round_trip(ws_client& c, const json& message) {
    c.send_text(message.dump());
    const auto r = c.read();
    REQUIRE_MESSAGE(r.text.has_value(), "no reply: closed=" << r.closed << " " << r.error);
    return json::parse(*r.text);
}

fulltime::test::http_reply post_feed(std::uint16_t port, const json& message,
                                     const std::string& producer = "feed-1") {
    return http_call(port, "POST", "/v1/feed", message.dump(),
                     bearer(token::kind::producer, producer));
}

// A market with selections <id>1 and <id>2 (1001 and 1002 for market 100).
json market_message(std::int64_t market_id = 100) {
    return json{
        {"type", "market"},
        {"market_id", market_id},
        {"event_id", 10},
        {"name", "Match winner"},
        {"status", "open"},
        {"selections",
         json::array(
             {{{"selection_id", market_id * 10 + 1}, {"name", "Home"}, {"odds", "2.50"}},
              {{"selection_id", market_id * 10 + 2}, {"name", "Away"}, {"odds", "3.40"}}})}};
}

json result_message(std::int64_t market_id = 100, int seq = 1, const std::string& key = "ev-1") {
    return json{{"type", "result"},
                {"id", "r-" + key},
                {"market_id", market_id},
                {"seq", seq},
                {"event_key", key},
                {"outcomes", json::array({{{"selection_id", market_id * 10 + 1},
                                           {"result", "win"},
                                           {"dead_heat_factor", "0.5"}},
                                          {{"selection_id", market_id * 10 + 2},
                                           {"result", "lose"},
                                           {"void_factor", "0.25"}}})}};
}

json ack(const json& id, std::int64_t market_id, int seq, const std::string& key, bool duplicate) {
    json a{{"type", "ack"},
           {"market_id", market_id},
           {"seq", seq},
           {"event_key", key},
           {"duplicate", duplicate}};
    if (!id.is_null()) {
        a["id"] = id;
    }
    return a;
}

}  // namespace

TEST_CASE("a result over WebSocket is stored once and acknowledged and a resend is a duplicate") {
    result_feed_engine e;
    auto c = open_feed(e.port());
    REQUIRE(round_trip(c, market_message())["type"] == "ack");
    REQUIRE(round_trip(c, market_message(200))["type"] == "ack");
    CHECK(e.woken().empty());

    const json result = result_message();
    CHECK(round_trip(c, result) == ack("r-ev-1", 100, 1, "ev-1", false));
    CHECK(e.text("SELECT count(*) FROM result_events") == "1");
    CHECK(e.text("SELECT concat_ws('|', market_id, seq, event_key, kind, producer) "
                 "FROM result_events") == "100|1|ev-1|result|feed-1");
    // The payload the settlement SQL reads: sorted outcomes, every key, factors in 1/10000.
    CHECK(e.text("SELECT payload = '{\"outcomes\":["
                 "{\"selection_id\":1001,\"win\":true,\"void_factor\":0,"
                 "\"dead_heat_factor\":5000},"
                 "{\"selection_id\":1002,\"win\":false,\"void_factor\":2500,"
                 "\"dead_heat_factor\":10000}]}'::jsonb FROM result_events") == "t");
    // A result stops trading on its market at once; the other market stays open.
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "suspended");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 200") == "open");
    CHECK(e.woken() == std::vector<std::int64_t>{100});
    const std::string stored = e.events();

    // The same message again: acknowledged as a duplicate, nothing written, the market woken.
    CHECK(round_trip(c, result) == ack("r-ev-1", 100, 1, "ev-1", true));
    // Reordered outcomes, another request id and explicit defaults are still the same event.
    json reordered = result;
    reordered["id"] = 77;
    std::swap(reordered["outcomes"][0], reordered["outcomes"][1]);
    reordered["outcomes"][0]["dead_heat_factor"] = "1";
    reordered["outcomes"][1]["void_factor"] = "0.0";
    CHECK(round_trip(c, reordered) == ack(77, 100, 1, "ev-1", true));
    CHECK(e.events() == stored);
    CHECK(e.woken() == std::vector<std::int64_t>{100, 100, 100});

    // Without an id the ack has none (docs/protocol-feed.md's feed messages carry none).
    json no_id = result;
    no_id.erase("id");
    CHECK(round_trip(c, no_id) == ack(nullptr, 100, 1, "ev-1", true));

    // A producer resuming the market after the result reopens it; a duplicate does not suspend
    // it again (it writes nothing).
    REQUIRE(round_trip(c, json{{"type", "resume"}, {"market_id", 100}})["type"] == "ack");
    CHECK(round_trip(c, result)["duplicate"] == true);
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "open");
    CHECK(e.events() == stored);
    CHECK(
        contains(e.metrics(), "fulltime_feed_messages_total{type=\"result\",outcome=\"ack\"} 5\n"));
}

TEST_CASE("result events that clash with a stored event are refused as conflicts") {
    result_feed_engine e;
    auto c = open_feed(e.port());
    REQUIRE(round_trip(c, market_message())["type"] == "ack");
    REQUIRE(round_trip(c, result_message())["duplicate"] == false);
    const std::string stored = e.events();
    const auto woken = e.woken();

    // The same event_key with another payload.
    json changed = result_message();
    changed["outcomes"][0]["dead_heat_factor"] = "0.3333";
    json r = round_trip(c, changed);
    CHECK(r["type"] == "error");
    CHECK(r["id"] == "r-ev-1");
    CHECK(r["code"] == "conflict");
    CHECK(contains(r["message"], "event_key \"ev-1\""));
    CHECK(contains(r["message"], "event_key ev-1 is market 100 seq 1 (result)"));
    // The same event_key as another kind.
    r = round_trip(
        c,
        json{{"type", "rollback_result"}, {"market_id", 100}, {"seq", 1}, {"event_key", "ev-1"}});
    CHECK(r["code"] == "conflict");
    // The same event_key under another seq.
    r = round_trip(c, result_message(100, 2, "ev-1"));
    CHECK(r["code"] == "conflict");
    CHECK(contains(r["message"], "is market 100 seq 1"));
    // The same (market_id, seq) under another event_key, even with the same outcomes.
    r = round_trip(c, result_message(100, 1, "ev-other"));
    CHECK(r["code"] == "conflict");
    CHECK(contains(r["message"], "event_key ev-1 is market 100 seq 1 (result)"));
    // The same event_key for another market.
    REQUIRE(round_trip(c, market_message(200))["type"] == "ack");
    json elsewhere = result_message(200, 1, "ev-1");
    r = round_trip(c, elsewhere);
    CHECK(r["code"] == "conflict");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 200") == "open");

    CHECK(e.events() == stored);
    CHECK(e.woken() == woken);
    CHECK(contains(e.metrics(),
                   "fulltime_feed_messages_total{type=\"result\",outcome=\"refused\"} 4\n"));
    CHECK(contains(e.metrics(),
                   "fulltime_feed_messages_total{type=\"rollback_result\",outcome=\"refused\"} "
                   "1\n"));
}

TEST_CASE("result events for unknown markets or selections and invalid ones write nothing") {
    result_feed_engine e;
    auto c = open_feed(e.port());
    REQUIRE(round_trip(c, market_message())["type"] == "ack");
    REQUIRE(round_trip(c, market_message(200))["type"] == "ack");

    json r = round_trip(c, result_message(999, 1, "ev-x"));
    CHECK(r == json{{"type", "error"},
                    {"id", "r-ev-x"},
                    {"code", "unknown_market"},
                    {"message", "market 999 does not exist"}});
    r = round_trip(c, json{{"type", "cancel"}, {"market_id", 999}, {"seq", 1}, {"event_key", "c"}});
    CHECK(r["code"] == "unknown_market");
    // A selection of another market, and one that does not exist at all.
    json foreign = result_message();
    foreign["outcomes"][1]["selection_id"] = 2001;
    r = round_trip(c, foreign);
    CHECK(r["code"] == "unknown_selection");
    CHECK(r["message"] == "selection 2001 is not a selection of market 100");
    foreign["outcomes"][1]["selection_id"] = 5;
    CHECK(round_trip(c, foreign)["message"] == "selection 5 is not a selection of market 100");

    // Invalid messages never reach the database.
    json number = result_message();
    number["outcomes"][0]["void_factor"] = 0.5;
    r = round_trip(c, number);
    CHECK(r["code"] == "invalid_request");
    CHECK(r["message"] ==
          "outcomes[0].void_factor: must be a decimal string such as \"0.5\", not "
          "a JSON number or other value");
    json zero_seq = result_message();
    zero_seq["seq"] = 0;
    CHECK(round_trip(c, zero_seq)["message"] ==
          "seq: must be an integer from 1 to 9223372036854775806");
    json extra = result_message();
    extra["winner"] = 1001;
    CHECK(round_trip(c, extra)["message"] == "unknown field \"winner\"");
    CHECK(round_trip(c, json{{"type", "cancel"},
                             {"market_id", 100},
                             {"seq", 1},
                             {"event_key", "c"},
                             {"start_time", "2025-05-01T19:00:00Z"},
                             {"end_time", "2025-05-01T18:00:00Z"}})["message"] ==
          "end_time: must be after start_time");

    CHECK(e.text("SELECT count(*) FROM result_events") == "0");
    CHECK(e.text("SELECT string_agg(status, ',' ORDER BY market_id) FROM markets") == "open,open");
    CHECK(e.woken().empty());
    // The market is still usable for a valid event.
    CHECK(round_trip(c, result_message())["duplicate"] == false);
    CHECK(contains(e.metrics(),
                   "fulltime_feed_messages_total{type=\"result\",outcome=\"invalid\"} 3\n"));
    CHECK(contains(e.metrics(),
                   "fulltime_feed_messages_total{type=\"cancel\",outcome=\"invalid\"} 1\n"));
}

TEST_CASE("cancel and rollback events store their normalised window") {
    result_feed_engine e;
    auto c = open_feed(e.port());
    REQUIRE(round_trip(c, market_message())["type"] == "ack");

    // A cancel without a window voids every bet of the market; it suspends the market.
    CHECK(round_trip(c, json{{"type", "cancel"},
                             {"id", "c1"},
                             {"market_id", 100},
                             {"seq", 1},
                             {"event_key", "cancel-1"}}) == ack("c1", 100, 1, "cancel-1", false));
    CHECK(e.text("SELECT payload::text FROM result_events WHERE event_key = 'cancel-1'") == "{}");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "suspended");

    // A rollback_cancel with a window given in another zone: stored in UTC, microseconds.
    REQUIRE(round_trip(c, json{{"type", "resume"}, {"market_id", 100}})["type"] == "ack");
    const json rollback{{"type", "rollback_cancel"},
                        {"market_id", 100},
                        {"seq", 2},
                        {"event_key", "uncancel-1"},
                        {"start_time", "2025-05-01T20:30:00+02:00"},
                        {"end_time", "2025-05-01T19:00:00.5Z"}};
    CHECK(round_trip(c, rollback) == ack(nullptr, 100, 2, "uncancel-1", false));
    CHECK(e.text("SELECT payload = '{\"start_time\":\"2025-05-01T18:30:00.000000Z\","
                 "\"end_time\":\"2025-05-01T19:00:00.500000Z\"}'::jsonb "
                 "FROM result_events WHERE event_key = 'uncancel-1'") == "t");
    CHECK(e.text("SELECT (payload->>'start_time')::timestamptz = '2025-05-01T18:30:00Z' "
                 "FROM result_events WHERE event_key = 'uncancel-1'") == "t");
    // A rollback does not stop trading.
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "open");
    // The same instants written in another zone are the same event.
    json same = rollback;
    same["start_time"] = "2025-05-01T18:30:00Z";
    same["end_time"] = "2025-05-01T21:00:00.500+02:00";
    CHECK(round_trip(c, same)["duplicate"] == true);
    // A window with one bound differs from the whole market.
    json half{{"type", "cancel"},
              {"market_id", 100},
              {"seq", 3},
              {"event_key", "cancel-2"},
              {"end_time", "2025-05-01T19:00:00Z"}};
    CHECK(round_trip(c, half)["duplicate"] == false);
    CHECK(e.text("SELECT payload = '{\"end_time\":\"2025-05-01T19:00:00.000000Z\"}'::jsonb "
                 "FROM result_events WHERE event_key = 'cancel-2'") == "t");
    half.erase("end_time");
    CHECK(round_trip(c, half)["code"] == "conflict");

    CHECK(round_trip(c, json{{"type", "rollback_result"},
                             {"market_id", 100},
                             {"seq", 4},
                             {"event_key", "unresult-1"}}) ==
          ack(nullptr, 100, 4, "unresult-1", false));
    CHECK(e.text("SELECT string_agg(seq || ':' || kind, ',' ORDER BY seq) FROM result_events") ==
          "1:cancel,2:rollback_cancel,3:cancel,4:rollback_result");
    CHECK(e.text("SELECT count(*) FROM settlement_progress WHERE market_id = 100") == "1");
    CHECK(e.woken() == std::vector<std::int64_t>{100, 100, 100, 100, 100});
}

TEST_CASE("POST /v1/feed takes result events with HTTP statuses") {
    result_feed_engine e;
    REQUIRE(post_feed(e.port(), market_message()).status == 200);

    // The producer named in the token is stored with the event.
    auto r = post_feed(e.port(), result_message(), "scores-eu");
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == ack("r-ev-1", 100, 1, "ev-1", false));
    CHECK(e.text("SELECT producer FROM result_events") == "scores-eu");
    CHECK(e.text("SELECT status FROM markets WHERE market_id = 100") == "suspended");
    const std::string stored = e.events();

    // A resend from another producer is still the same event: the first producer stays.
    r = post_feed(e.port(), result_message());
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == ack("r-ev-1", 100, 1, "ev-1", true));

    json changed = result_message();
    changed["outcomes"][0]["result"] = "lose";
    changed["outcomes"][0].erase("dead_heat_factor");
    r = post_feed(e.port(), changed);
    CHECK(r.status == 409);
    CHECK(json::parse(r.body)["code"] == "conflict");
    CHECK(contains(json::parse(r.body)["detail"], "event_key ev-1 is market 100 seq 1"));
    r = post_feed(e.port(), result_message(100, 1, "ev-2"));
    CHECK(r.status == 409);
    CHECK(json::parse(r.body)["code"] == "conflict");

    r = post_feed(e.port(), result_message(404, 1, "ev-3"));
    CHECK(r.status == 404);
    CHECK(json::parse(r.body) == fulltime::test::problem_json(404, "Not Found", "unknown_market",
                                                              "market 404 does not exist"));
    json foreign = result_message(100, 2, "ev-4");
    foreign["outcomes"][0]["selection_id"] = 9;
    r = post_feed(e.port(), foreign);
    CHECK(r.status == 404);
    CHECK(json::parse(r.body)["code"] == "unknown_selection");

    json bad = result_message(100, 2, "ev-5");
    bad["outcomes"][1]["dead_heat_factor"] = "0.5";
    r = post_feed(e.port(), bad);
    CHECK(r.status == 400);
    CHECK(json::parse(r.body) ==
          fulltime::test::problem_json(
              400, "Bad Request", "invalid_request",
              "outcomes[1].dead_heat_factor: must be 1 (or absent) when the result is \"lose\""));
    r = http_call(e.port(), "POST", "/v1/feed", R"({"type":"result",)",
                  bearer(token::kind::producer));
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["code"] == "invalid_json");
    // Only a producer token is accepted.
    CHECK(http_call(e.port(), "POST", "/v1/feed", result_message(100, 2, "ev-6").dump(),
                    bearer(token::kind::admin))
              .status == 401);
    CHECK(http_call(e.port(), "POST", "/v1/feed", result_message(100, 2, "ev-6").dump()).status ==
          401);

    CHECK(e.events() == stored);
    CHECK(e.woken() == std::vector<std::int64_t>{100, 100});

    // A cancel by POST, with its window.
    r = post_feed(e.port(), json{{"type", "cancel"},
                                 {"market_id", 100},
                                 {"seq", 2},
                                 {"event_key", "cancel-1"},
                                 {"start_time", "2025-05-01T18:30:00Z"}});
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == ack(nullptr, 100, 2, "cancel-1", false));
    CHECK(e.text("SELECT payload->>'start_time' FROM result_events WHERE seq = 2") ==
          "2025-05-01T18:30:00.000000Z");
    CHECK(contains(e.metrics(),
                   "fulltime_feed_messages_total{type=\"result\",outcome=\"refused\"} 4\n"));
    CHECK(
        contains(e.metrics(), "fulltime_feed_messages_total{type=\"cancel\",outcome=\"ack\"} 1\n"));
}

TEST_CASE("concurrent sends of one result event store it once") {
    result_feed_engine e;
    REQUIRE(post_feed(e.port(), market_message()).status == 200);
    constexpr int requests = 12;
    std::vector<std::future<fulltime::test::http_reply>> replies;
    for (int i = 0; i < requests; ++i) {
        replies.push_back(
            std::async(std::launch::async, [&] { return post_feed(e.port(), result_message()); }));
    }
    int fresh = 0;
    int duplicates = 0;
    for (auto& f : replies) {
        const auto r = f.get();
        REQUIRE_MESSAGE(r.status == 200, r.status << " " << r.body);
        (json::parse(r.body)["duplicate"] == true ? duplicates : fresh) += 1;
    }
    CHECK(fresh == 1);
    CHECK(duplicates == requests - 1);
    CHECK(e.text("SELECT count(*) FROM result_events") == "1");
    CHECK(e.woken().size() == static_cast<std::size_t>(requests));
}

TEST_CASE("a result waiting on a locked market row answers busy and writes nothing") {
    result_feed_engine e;
    REQUIRE(post_feed(e.port(), market_message()).status == 200);
    std::unique_ptr<PGconn, decltype(&PQfinish)> holder(PQconnectdb(e.url().c_str()), &PQfinish);
    REQUIRE(PQstatus(holder.get()) == CONNECTION_OK);
    // As a catalog message holds it: the intake's suspension waits for this lock.
    PQclear(PQexec(holder.get(), "BEGIN"));
    PQclear(PQexec(holder.get(), "SELECT 1 FROM markets WHERE market_id = 100 FOR NO KEY UPDATE"));

    auto r = post_feed(e.port(), result_message());
    CHECK(r.status == 503);
    CHECK(json::parse(r.body)["code"] == "busy");
    CHECK(r.header("Retry-After") == "1");
    {
        auto c = open_feed(e.port());
        json reply = round_trip(c, result_message());
        CHECK(reply["code"] == "busy");
        CHECK(reply["retry_after_ms"] == 100);
    }
    PQclear(PQexec(holder.get(), "ROLLBACK"));
    CHECK(e.text("SELECT count(*) FROM result_events") == "0");
    CHECK(e.woken().empty());
    CHECK(contains(e.metrics(),
                   "fulltime_feed_messages_total{type=\"result\",outcome=\"busy\"} 2\n"));

    // Retried after the lock is gone, the same message is stored.
    r = post_feed(e.port(), result_message());
    CHECK(r.status == 200);
    CHECK(json::parse(r.body)["duplicate"] == false);
}

TEST_CASE("a throwing result-event hook does not cost the producer its ack") {
    result_feed_engine e;
    e.make_hook_throw();
    auto c = open_feed(e.port());
    REQUIRE(round_trip(c, market_message())["type"] == "ack");
    CHECK(round_trip(c, result_message()) == ack("r-ev-1", 100, 1, "ev-1", false));
    CHECK(round_trip(c, result_message()) == ack("r-ev-1", 100, 1, "ev-1", true));
    CHECK(e.woken() == std::vector<std::int64_t>{100, 100});
    CHECK(e.text("SELECT count(*) FROM result_events") == "1");
}
