#include "fulltime/core/feed_protocol.hpp"
#include "support/text.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>

using fulltime::test::contains;

namespace {

using nlohmann::json;
namespace feed = fulltime::feed;

json valid_market() {
    return json::parse(R"({"type":"market","id":"m1","market_id":100,"event_id":10,
        "name":"Match winner","status":"open",
        "selections":[{"selection_id":1001,"name":"Home","odds":"2.10"},
                      {"selection_id":1002,"name":"Away","odds":"3.40"}]})");
}

// Returns the refusal message of a market message with `field` replaced (or removed when null
// is passed as `remove`).
template <class Parsed>
std::string feed_refusal(const Parsed& p) {
    REQUIRE_MESSAGE(!p.has_value(), "expected a refusal");
    return p.error().message;
}

std::string market_refusal(const std::string& field, const json& value) {
    json m = valid_market();
    m[field] = value;
    return feed_refusal(feed::parse_market(m));
}

std::string market_without(const std::string& field) {
    json m = valid_market();
    m.erase(field);
    return feed_refusal(feed::parse_market(m));
}

}  // namespace

TEST_CASE("a valid market message parses with its optional fields empty") {
    const auto m = feed::parse_market(valid_market());
    REQUIRE(m.has_value());
    CHECK(m->market_id == 100);
    CHECK(m->event_id == 10);
    CHECK_FALSE(m->event_name.has_value());
    CHECK(m->name == "Match winner");
    CHECK(m->status == feed::market_status::open);
    REQUIRE(m->selections.size() == 2);
    CHECK(m->selections[0].selection_id == 1001);
    CHECK(m->selections[0].name == "Home");
    CHECK(m->selections[0].odds_units == 21000);
    CHECK(m->selections[1].odds_units == 34000);
    CHECK_FALSE(m->stake_min_minor.has_value());
    CHECK_FALSE(m->stake_max_minor.has_value());
    CHECK_FALSE(m->liability_limit_minor.has_value());
    CHECK_FALSE(m->exposure_shards.has_value());
    CHECK_FALSE(m->settle_deadline_at.has_value());
}

TEST_CASE("a market message carries its limits and deadline when given") {
    json j = valid_market();
    j["event_name"] = "Lyon - Nantes";
    j["stake_min"] = "0.50";
    j["stake_max"] = "500";
    j["liability_limit"] = "10000.01";
    j["exposure_shards"] = 4;
    j["settle_deadline_at"] = "2025-05-01T20:30:00+02:00";
    j["status"] = "suspended";
    const auto m = feed::parse_market(j);
    REQUIRE(m.has_value());
    CHECK(m->event_name == "Lyon - Nantes");
    CHECK(m->stake_min_minor == 50);
    CHECK(m->stake_max_minor == 50000);
    CHECK(m->liability_limit_minor == 1000001);
    CHECK(m->exposure_shards == 4);
    CHECK(m->settle_deadline_at == "2025-05-01T18:30:00.000000Z");
    CHECK(m->status == feed::market_status::suspended);
    // Explicit nulls read as absent.
    j["stake_min"] = nullptr;
    j["status"] = nullptr;
    const auto n = feed::parse_market(j);
    REQUIRE(n.has_value());
    CHECK_FALSE(n->stake_min_minor.has_value());
    CHECK_FALSE(n->status.has_value());
}

TEST_CASE("market ids must be positive int64 integers") {
    CHECK(market_without("market_id") == "market_id: is required");
    CHECK(market_refusal("market_id", nullptr) == "market_id: is required");
    CHECK(market_refusal("market_id", 0) == "market_id: must be a positive integer");
    CHECK(market_refusal("market_id", -5) == "market_id: must be a positive integer");
    CHECK(market_refusal("market_id", 1.5) == "market_id: must be a positive integer");
    CHECK(market_refusal("market_id", 100.0) == "market_id: must be a positive integer");
    CHECK(market_refusal("market_id", "100") == "market_id: must be a positive integer");
    CHECK(market_refusal("market_id", true) == "market_id: must be a positive integer");
    CHECK(contains(market_refusal("market_id", 9223372036854775808ULL), "too large"));
    json m = valid_market();
    m["market_id"] = 9223372036854775807LL;
    CHECK(feed::parse_market(m).has_value());
    CHECK(market_without("event_id") == "event_id: is required");
    CHECK(market_refusal("event_id", -1) == "event_id: must be a positive integer");
}

TEST_CASE("market names and statuses are checked") {
    CHECK(market_without("name") == "name: is required");
    CHECK(market_refusal("name", "") == "name: must not be empty");
    CHECK(market_refusal("name", 7) == "name: must be a string");
    CHECK(market_refusal("name", std::string(201, 'n')) == "name: is longer than 200 bytes");
    json m = valid_market();
    m["name"] = std::string(200, 'n');
    CHECK(feed::parse_market(m).has_value());
    CHECK(market_refusal("event_name", "") == "event_name: must not be empty");
    CHECK(market_refusal("event_name", 3) == "event_name: must be a string");
    CHECK(market_refusal("status", "settled") ==
          "status: must be \"open\", \"suspended\" or \"closed\"");
    CHECK(market_refusal("status", 1) == "status: must be \"open\", \"suspended\" or \"closed\"");
    m = valid_market();
    m["status"] = "closed";
    CHECK(feed::parse_market(m)->status == feed::market_status::closed);
}

TEST_CASE("catalog names keep the rules of client text: no NUL, UTF-8") {
    const std::string nul("Home\0x", 6);
    CHECK(market_refusal("name", nul) == "name: must not contain a NUL character");
    CHECK(market_refusal("event_name", nul) == "event_name: must not contain a NUL character");
    CHECK(market_refusal("name", "\xff") == "name: must be valid UTF-8");
    CHECK(market_refusal("event_name", "Lyon \xe2\x82") == "event_name: must be valid UTF-8");
    CHECK(market_refusal("selections",
                         json::array({{{"selection_id", 1}, {"name", nul}, {"odds", "2.10"}}})) ==
          "selections[0].name: must not contain a NUL character");
    CHECK(market_refusal(
              "selections",
              json::array({{{"selection_id", 1}, {"name", "\xc0\x80"}, {"odds", "2.10"}}})) ==
          "selections[0].name: must be valid UTF-8");
    json m = valid_market();
    m["name"] = "Lyon \xe2\x80\x93 Nantes \xe2\x9a\xbd";
    m["event_name"] = "Ligue 1 \xc3\xa9t\xc3\xa9";
    CHECK(feed::parse_market(m).has_value());
}

TEST_CASE("selections are required and each is checked") {
    CHECK(market_without("selections") == "selections: is required");
    CHECK(market_refusal("selections", json::object()) == "selections: must be an array");
    CHECK(market_refusal("selections", json::array()) == "selections: must not be empty");
    CHECK(market_refusal("selections", json::array({1})) == "selections[0]: must be an object");
    CHECK(market_refusal("selections", json::parse(R"([{"name":"Home","odds":"2.10"}])")) ==
          "selections[0].selection_id: is required");
    CHECK(market_refusal("selections",
                         json::parse(R"([{"selection_id":0,"name":"Home","odds":"2.10"}])")) ==
          "selections[0].selection_id: must be a positive integer");
    CHECK(market_refusal("selections", json::parse(R"([{"selection_id":1,"odds":"2.10"}])")) ==
          "selections[0].name: is required");
    CHECK(market_refusal("selections", json::parse(R"([{"selection_id":1,"name":"Home"}])")) ==
          "selections[0].odds: is required");
    CHECK(market_refusal("selections",
                         json::parse(R"([{"selection_id":1,"name":"Home","odds":2.1}])")) ==
          "selections[0].odds: must be a decimal string such as \"10.00\"");
    CHECK(contains(market_refusal("selections",
                                  json::parse(R"([{"selection_id":1,"name":"H","odds":"1.00"}])")),
                   "selections[0].odds: "));
    CHECK(contains(
        market_refusal("selections",
                       json::parse(R"([{"selection_id":1,"name":"H","odds":"2.123456"}])")),
        "selections[0].odds: "));
    CHECK(market_refusal("selections",
                         json::parse(R"([{"selection_id":1,"name":"H","odds":"2.1","x":1}])")) ==
          "selections[0]: unknown field \"x\"");
    CHECK(market_refusal("selections", json::parse(R"([{"selection_id":1,"name":"H","odds":"2.1"},
                                                     {"selection_id":1,"name":"I","odds":"2.2"}])")) ==
          "selections[1].selection_id: 1 appears twice");
    json many = json::array();
    for (int i = 1; i <= 257; ++i) {
        many.push_back({{"selection_id", i}, {"name", "s"}, {"odds", "2.00"}});
    }
    CHECK(market_refusal("selections", many) == "selections: has more than 256 entries");
    many.erase(many.end() - 1);
    json m = valid_market();
    m["selections"] = many;
    CHECK(feed::parse_market(m).has_value());
}

TEST_CASE("market limits are positive decimal strings within bounds") {
    CHECK(market_refusal("stake_min", 10) ==
          "stake_min: must be a decimal string such as \"10.00\"");
    CHECK(contains(market_refusal("stake_min", "0"), "stake_min: "));
    CHECK(contains(market_refusal("stake_min", "-1.00"), "stake_min: "));
    CHECK(contains(market_refusal("stake_max", "1.001"), "stake_max: "));
    CHECK(contains(market_refusal("liability_limit", "99999999999999999999"), "liability_limit: "));
    CHECK(contains(market_refusal("liability_limit", "abc"), "liability_limit: "));
    json m = valid_market();
    m["stake_min"] = "5.00";
    m["stake_max"] = "4.99";
    CHECK(feed_refusal(feed::parse_market(m)) == "stake_max: must not be below stake_min");
    m["stake_max"] = "5.00";
    CHECK(feed::parse_market(m).has_value());
    CHECK(market_refusal("exposure_shards", 0) ==
          "exposure_shards: must be an integer from 1 to 64");
    CHECK(market_refusal("exposure_shards", 65) ==
          "exposure_shards: must be an integer from 1 to 64");
    CHECK(market_refusal("exposure_shards", "4") ==
          "exposure_shards: must be an integer from 1 to 64");
    CHECK(market_refusal("exposure_shards", 2.5) ==
          "exposure_shards: must be an integer from 1 to 64");
    m = valid_market();
    m["exposure_shards"] = 8;
    m["liability_limit"] = "0.07";
    CHECK(feed_refusal(feed::parse_market(m)) ==
          "liability_limit: must be at least exposure_shards minor units");
    m["liability_limit"] = "0.08";
    CHECK(feed::parse_market(m).has_value());
}

TEST_CASE("unknown fields are refused so a misspelt limit is never ignored") {
    CHECK(market_refusal("stake_maximum", "10.00") == "unknown field \"stake_maximum\"");
    json o = json::parse(R"({"type":"odds","market_id":1,"selection_id":2,"odds":"2.00","x":1})");
    CHECK(feed_refusal(feed::parse_odds(o)) == "unknown field \"x\"");
    json s = json::parse(R"({"type":"suspend","market_id":1,"reason":"goal"})");
    CHECK(feed_refusal(feed::parse_status(s)) == "unknown field \"reason\"");
}

TEST_CASE("settle_deadline_at must be an ISO 8601 date-time with a zone") {
    json m = valid_market();
    m["settle_deadline_at"] = "2025-05-01T18:30:00.123456Z";
    CHECK(feed::parse_market(m)->settle_deadline_at == "2025-05-01T18:30:00.123456Z");
    for (const char* bad :
         {"2025-05-01", "2025-05-01T18:30:00", "2025-02-30T00:00:00Z", "2025-13-01T00:00:00Z",
          "2025-05-01T24:00:00Z", "2025-05-01 18:30:00Z", "2025-05-01T18:30:00.1234567Z",
          "2025-05-01T18:30:00.Z", "2025-05-01T18:30:00+0200", "1969-12-31T23:59:59Z", "tomorrow",
          "2025-05-01T18:30:00Zjunk"}) {
        CAPTURE(bad);
        CHECK(contains(market_refusal("settle_deadline_at", bad), "settle_deadline_at: must be"));
    }
    CHECK(
        contains(market_refusal("settle_deadline_at", 1714588200), "settle_deadline_at: must be"));
}

TEST_CASE("timestamps convert across zones and leap days") {
    CHECK(feed::parse_timestamp_us("1970-01-01T00:00:00Z") == 0);
    CHECK(feed::parse_timestamp_us("1970-01-01T01:00:00+01:00") == 0);
    CHECK(feed::parse_timestamp_us("2024-02-29T00:00:00z") == 1709164800LL * 1'000'000);
    CHECK_FALSE(feed::parse_timestamp_us("2023-02-29T00:00:00Z"));
    CHECK(feed::parse_timestamp_us("2000-02-29T12:00:00.5-03:30") ==
          (951825600LL + 3 * 3600 + 1800) * 1'000'000 + 500'000);
    CHECK(feed::format_timestamp_us(0) == "1970-01-01T00:00:00.000000Z");
    CHECK(feed::format_timestamp_us(1709164800LL * 1'000'000 + 42) ==
          "2024-02-29T00:00:00.000042Z");
    const auto us = feed::parse_timestamp_us("2031-12-31T23:59:59.999999Z");
    REQUIRE(us);
    CHECK(feed::format_timestamp_us(*us) == "2031-12-31T23:59:59.999999Z");
}

TEST_CASE("odds messages are checked field by field") {
    const auto ok = feed::parse_odds(
        json::parse(R"({"type":"odds","id":3,"market_id":1,"selection_id":2,"odds":"2.20"})"));
    REQUIRE(ok.has_value());
    CHECK(ok->market_id == 1);
    CHECK(ok->selection_id == 2);
    CHECK(ok->odds_units == 22000);
    CHECK(feed_refusal(feed::parse_odds(json::parse(
              R"({"type":"odds","selection_id":2,"odds":"2"})"))) == "market_id: is required");
    CHECK(feed_refusal(feed::parse_odds(json::parse(
              R"({"type":"odds","market_id":1,"odds":"2"})"))) == "selection_id: is required");
    CHECK(feed_refusal(feed::parse_odds(json::parse(
              R"({"type":"odds","market_id":1,"selection_id":2})"))) == "odds: is required");
    CHECK(contains(feed_refusal(feed::parse_odds(json::parse(
                       R"({"type":"odds","market_id":1,"selection_id":2,"odds":"1.0099"})"))),
                   "odds: "));
    CHECK(contains(feed_refusal(feed::parse_odds(json::parse(
                       R"({"type":"odds","market_id":1,"selection_id":2,"odds":"100000.00"})"))),
                   "odds: "));
    CHECK(feed_refusal(feed::parse_odds(json::array())) == "message must be a JSON object");
}

TEST_CASE("suspend and resume name their market") {
    const auto s = feed::parse_status(json::parse(R"({"type":"suspend","market_id":7})"));
    REQUIRE(s.has_value());
    CHECK(s->market_id == 7);
    CHECK(s->target == feed::market_status::suspended);
    const auto r = feed::parse_status(json::parse(R"({"type":"resume","market_id":7})"));
    REQUIRE(r.has_value());
    CHECK(r->target == feed::market_status::open);
    CHECK(feed_refusal(feed::parse_status(json::parse(R"({"type":"resume"})"))) ==
          "market_id: is required");
    CHECK(feed_refusal(feed::parse_status(json::parse(R"({"type":"resume","market_id":"7"})"))) ==
          "market_id: must be a positive integer");
    CHECK(feed_refusal(feed::parse_status(json::parse(R"({"type":"close","market_id":7})"))) ==
          "type: must be \"suspend\" or \"resume\"");
}

TEST_CASE("status names round-trip") {
    for (auto s :
         {feed::market_status::open, feed::market_status::suspended, feed::market_status::closed}) {
        CHECK(feed::status_from_string(feed::to_string(s)) == s);
    }
    CHECK_FALSE(feed::status_from_string("Open"));
}

TEST_CASE("account creation bodies need an id and a currency code") {
    const auto ok =
        feed::parse_account_request(json::parse(R"({"account_id":42,"currency":"EUR"})"));
    REQUIRE(ok.has_value());
    CHECK(ok->account_id == 42);
    CHECK(ok->currency == "EUR");
    const auto bad = [](const char* text) {
        return feed_refusal(feed::parse_account_request(json::parse(text)));
    };
    CHECK(bad(R"({"currency":"EUR"})") == "account_id: is required");
    CHECK(bad(R"({"account_id":0,"currency":"EUR"})") == "account_id: must be a positive integer");
    CHECK(bad(R"({"account_id":1})") == "currency: is required");
    CHECK(bad(R"({"account_id":1,"currency":"eur"})") ==
          "currency: must be three upper-case letters such as \"EUR\"");
    CHECK(bad(R"({"account_id":1,"currency":"EU"})") ==
          "currency: must be three upper-case letters such as \"EUR\"");
    CHECK(bad(R"({"account_id":1,"currency":"EURO"})") == "currency: is longer than 3 bytes");
    CHECK(bad(R"({"account_id":1,"currency":"EUR","balance":"5"})") == "unknown field \"balance\"");
    CHECK(bad("[1]") == "body must be a JSON object");
    // ISO 4217 gives these four decimals: more than an amount's thousandths can carry.
    CHECK(bad(R"({"account_id":1,"currency":"CLF"})") ==
          "currency: has 4 decimal places in ISO 4217; the engine holds at most 3");
    CHECK(feed::parse_account_request(json::parse(R"({"account_id":1,"currency":"JPY"})"))
              .has_value());
}

TEST_CASE("deposit and withdrawal bodies need a positive amount and a key") {
    const auto ok = feed::parse_transfer_request(json::parse(R"({"amount":"100.00","key":"k1"})"));
    REQUIRE(ok.has_value());
    // Thousandths until the route knows the account's currency.
    CHECK(ok->amount_thousandths == 100'000);
    CHECK(feed::parse_transfer_request(json::parse(R"({"amount":"10.500","key":"k1"})"))
              ->amount_thousandths == 10'500);
    CHECK(ok->key == "k1");
    const auto bad = [](const json& body) {
        return feed_refusal(feed::parse_transfer_request(body));
    };
    CHECK(bad(json{{"key", "k"}}) == "amount: is required");
    CHECK(contains(bad(json{{"amount", "0"}, {"key", "k"}}), "amount: "));
    CHECK(contains(bad(json{{"amount", "0.00"}, {"key", "k"}}), "amount: "));
    CHECK(contains(bad(json{{"amount", "-1.00"}, {"key", "k"}}), "amount: "));
    CHECK(contains(bad(json{{"amount", "1.0005"}, {"key", "k"}}), "amount: "));
    CHECK(contains(bad(json{{"amount", "92233720368547758.08"}, {"key", "k"}}), "amount: "));
    CHECK(contains(bad(json{{"amount", "1e3"}, {"key", "k"}}), "amount: "));
    CHECK(bad(json{{"amount", 100}, {"key", "k"}}) ==
          "amount: must be a decimal string such as \"10.00\"");
    CHECK(bad(json{{"amount", "1.00"}}) == "key: is required");
    CHECK(bad(json{{"amount", "1.00"}, {"key", ""}}) == "key: must not be empty");
    CHECK(bad(json{{"amount", "1.00"}, {"key", 5}}) == "key: must be a string");
    CHECK(bad(json{{"amount", "1.00"}, {"key", std::string(256, 'k')}}) ==
          "key: is longer than 255 bytes");
    CHECK(feed::parse_transfer_request(json{{"amount", "1.00"}, {"key", std::string(255, 'k')}})
              .has_value());
    // The key may come from the Idempotency-Key header, which is not JSON: checked here too.
    CHECK(bad(json{{"amount", "1.00"}, {"key", std::string("d\0", 2)}}) ==
          "key: must not contain a NUL character");
    CHECK(bad(json{{"amount", "1.00"}, {"key", "d\xff"}}) == "key: must be valid UTF-8");
}

TEST_CASE("void-overdue bodies take an optional key and an optional force") {
    const auto ok = feed::parse_void_request(json::parse(R"({"key":"v1","force":true})"));
    REQUIRE(ok.has_value());
    CHECK(ok->key == "v1");
    CHECK(ok->force);
    const auto empty = feed::parse_void_request(json::object());
    REQUIRE(empty.has_value());
    CHECK_FALSE(empty->key.has_value());
    CHECK_FALSE(empty->force);
    const auto bad = [](const json& body) { return feed_refusal(feed::parse_void_request(body)); };
    CHECK(bad(json{{"key", ""}}) == "key: must not be empty");
    CHECK(bad(json{{"key", 5}}) == "key: must be a string");
    CHECK(bad(json{{"key", std::string(256, 'v')}}) == "key: is longer than 255 bytes");
    CHECK(bad(json{{"key", std::string("v\0", 2)}}) == "key: must not contain a NUL character");
    CHECK(bad(json{{"key", "\xed\xa0\x80"}}) == "key: must be valid UTF-8");
    CHECK(bad(json{{"force", "yes"}}) == "force: must be true or false");
    CHECK(bad(json{{"forced", true}}) == "unknown field \"forced\"");
    CHECK(bad(json::array()) == "body must be a JSON object");
}

TEST_CASE("path ids are plain positive decimals") {
    CHECK(feed::parse_path_id("42") == 42);
    CHECK(feed::parse_path_id("9223372036854775807") == 9223372036854775807LL);
    CHECK_FALSE(feed::parse_path_id("9223372036854775808"));
    CHECK_FALSE(feed::parse_path_id("99999999999999999999"));
    CHECK_FALSE(feed::parse_path_id(""));
    CHECK_FALSE(feed::parse_path_id("0"));
    CHECK_FALSE(feed::parse_path_id("042"));
    CHECK_FALSE(feed::parse_path_id("-1"));
    CHECK_FALSE(feed::parse_path_id("+1"));
    CHECK_FALSE(feed::parse_path_id("1a"));
}

// --- Result events -------------------------------------------------------------------------------

namespace {

json valid_result() {
    return json::parse(R"({"type":"result","id":"r1","market_id":100,"seq":1,"event_key":"ev-1",
        "outcomes":[{"selection_id":1001,"result":"win"},
                    {"selection_id":1002,"result":"lose"}]})");
}

json valid_cancel(const std::string& type = "cancel") {
    return json{{"type", type}, {"market_id", 100}, {"seq", 2}, {"event_key", "ev-2"}};
}

std::string result_refusal(const std::string& field, const json& value) {
    json m = valid_result();
    m[field] = value;
    return feed_refusal(feed::parse_result_event(m));
}

// Returns the refusal of a result whose first outcome has `field` set to `value`.
std::string outcome_refusal(const std::string& field, const json& value) {
    json m = valid_result();
    m["outcomes"][0][field] = value;
    return feed_refusal(feed::parse_result_event(m));
}

// Returns the void factor, in 1/10000, that a winning outcome with `text` parses to.
std::int64_t void_units(const std::string& text) {
    json m = valid_result();
    m["outcomes"][0]["void_factor"] = text;
    const auto r = feed::parse_result_event(m);
    REQUIRE_MESSAGE(r.has_value(), text << ": " << r.error().message);
    return r->outcomes[0].void_factor_units;
}

std::int64_t dead_heat_units(const std::string& text) {
    json m = valid_result();
    m["outcomes"][0]["dead_heat_factor"] = text;
    const auto r = feed::parse_result_event(m);
    REQUIRE_MESSAGE(r.has_value(), text << ": " << r.error().message);
    return r->outcomes[0].dead_heat_factor_units;
}

}  // namespace

TEST_CASE("a valid result parses with default factors and a normalised payload") {
    const auto r = feed::parse_result_event(valid_result());
    REQUIRE(r.has_value());
    CHECK(r->kind == feed::result_event_kind::result);
    CHECK(r->market_id == 100);
    CHECK(r->seq == 1);
    CHECK(r->event_key == "ev-1");
    REQUIRE(r->outcomes.size() == 2);
    CHECK(r->outcomes[0].selection_id == 1001);
    CHECK(r->outcomes[0].win);
    CHECK(r->outcomes[0].void_factor_units == 0);
    CHECK(r->outcomes[0].dead_heat_factor_units == 10000);
    CHECK_FALSE(r->outcomes[1].win);
    CHECK_FALSE(r->start_time.has_value());
    CHECK_FALSE(r->end_time.has_value());
    // Every key always written, integers in 1/10000, win as a boolean.
    CHECK(
        r->payload_json ==
        R"({"outcomes":[{"dead_heat_factor":10000,"selection_id":1001,"void_factor":0,"win":true},)"
        R"({"dead_heat_factor":10000,"selection_id":1002,"void_factor":0,"win":false}]})");
    CHECK(feed::result_event_payload(*r) == r->payload_json);
}

TEST_CASE("a result carries its factors in ten-thousandths") {
    json m = valid_result();
    m["outcomes"][0]["void_factor"] = "0.5";
    m["outcomes"][0]["dead_heat_factor"] = "0.3333";
    m["outcomes"][1]["void_factor"] = "0.25";
    m["outcomes"][1]["dead_heat_factor"] = "1";
    const auto r = feed::parse_result_event(m);
    REQUIRE(r.has_value());
    CHECK(r->outcomes[0].void_factor_units == 5000);
    CHECK(r->outcomes[0].dead_heat_factor_units == 3333);
    CHECK(r->outcomes[1].void_factor_units == 2500);
    CHECK(r->outcomes[1].dead_heat_factor_units == 10000);
    CHECK(
        r->payload_json ==
        R"({"outcomes":[{"dead_heat_factor":3333,"selection_id":1001,"void_factor":5000,"win":true},)"
        R"({"dead_heat_factor":10000,"selection_id":1002,"void_factor":2500,"win":false}]})");
    // Explicit nulls read as absent.
    m["outcomes"][0]["void_factor"] = nullptr;
    m["outcomes"][0]["dead_heat_factor"] = nullptr;
    const auto n = feed::parse_result_event(m);
    REQUIRE(n.has_value());
    CHECK(n->outcomes[0].void_factor_units == 0);
    CHECK(n->outcomes[0].dead_heat_factor_units == 10000);
}

TEST_CASE("factor strings parse exactly with at most four decimals") {
    CHECK(void_units("0") == 0);
    CHECK(void_units("0.0") == 0);
    CHECK(void_units("0.0000") == 0);
    CHECK(void_units("0.5") == 5000);
    CHECK(void_units("0.50") == 5000);
    CHECK(void_units("0.5000") == 5000);
    CHECK(void_units("0.0001") == 1);
    CHECK(void_units("0.9999") == 9999);
    CHECK(void_units("1") == 10000);
    CHECK(void_units("1.0") == 10000);
    CHECK(void_units("1.0000") == 10000);
    CHECK(void_units("01") == 10000);
    CHECK(dead_heat_units("0.0001") == 1);
    CHECK(dead_heat_units("0.3333") == 3333);
    CHECK(dead_heat_units("0.50") == 5000);
    CHECK(dead_heat_units("1") == 10000);
    CHECK(dead_heat_units("1.00") == 10000);

    const std::string v = "outcomes[0].void_factor: ";
    CHECK(outcome_refusal("void_factor", "1.00001") == v + "must have at most 4 decimals");
    CHECK(outcome_refusal("void_factor", "0.50000") == v + "must have at most 4 decimals");
    CHECK(outcome_refusal("void_factor", "-0.1") == v + "must not be negative");
    CHECK(outcome_refusal("void_factor", "-0") == v + "must not be negative");
    CHECK(outcome_refusal("void_factor", "1.0001") == v + "must not be above 1");
    CHECK(outcome_refusal("void_factor", "2") == v + "must not be above 1");
    CHECK(outcome_refusal("void_factor", "99999999999999999999") == v + "must not be above 1");
    CHECK(outcome_refusal("void_factor", "0000000000000000000000000000000001") ==
          v + "is longer than 32 characters");
    for (const char* bad :
         {"", ".5", "0.", "0,5", "1e-1", " 0.5", "0.5 ", "+0.5", "0.5.1", "half", "--1", "0x1"}) {
        CAPTURE(bad);
        CHECK(outcome_refusal("void_factor", bad) ==
              v + "must be a decimal from 0 to 1 such as \"0.5\"");
    }
    // Numbers are refused: factors travel as strings like money and odds.
    for (const json& number : {json(0.5), json(1), json(0), json(true), json::array()}) {
        CAPTURE(number.dump());
        CHECK(outcome_refusal("void_factor", number) ==
              v + "must be a decimal string such as \"0.5\", not a JSON number or other value");
    }
    CHECK(outcome_refusal("dead_heat_factor", 0.5) ==
          "outcomes[0].dead_heat_factor: must be a decimal string such as \"0.5\", not a JSON "
          "number or other value");
}

TEST_CASE("a dead-heat factor is above zero and only on a winning outcome") {
    CHECK(outcome_refusal("dead_heat_factor", "0") ==
          "outcomes[0].dead_heat_factor: must be above 0");
    CHECK(outcome_refusal("dead_heat_factor", "0.0000") ==
          "outcomes[0].dead_heat_factor: must be above 0");
    CHECK(outcome_refusal("dead_heat_factor", "1.5") ==
          "outcomes[0].dead_heat_factor: must not be above 1");
    CHECK(outcome_refusal("dead_heat_factor", "-0.5") ==
          "outcomes[0].dead_heat_factor: must not be negative");
    json m = valid_result();
    m["outcomes"][1]["dead_heat_factor"] = "0.5";
    CHECK(feed_refusal(feed::parse_result_event(m)) ==
          "outcomes[1].dead_heat_factor: must be 1 (or absent) when the result is \"lose\"");
    // A losing outcome may still name the neutral factor, and a void share.
    m["outcomes"][1]["dead_heat_factor"] = "1.00";
    m["outcomes"][1]["void_factor"] = "1";
    const auto r = feed::parse_result_event(m);
    REQUIRE(r.has_value());
    CHECK(r->outcomes[1].void_factor_units == 10000);
}

TEST_CASE("result outcomes are checked one by one") {
    CHECK(result_refusal("outcomes", nullptr) == "outcomes: is required");
    json m = valid_result();
    m.erase("outcomes");
    CHECK(feed_refusal(feed::parse_result_event(m)) == "outcomes: is required");
    CHECK(result_refusal("outcomes", json::array()) == "outcomes: must not be empty");
    CHECK(result_refusal("outcomes", json::object()) == "outcomes: must be an array");
    CHECK(result_refusal("outcomes", "win") == "outcomes: must be an array");
    CHECK(result_refusal("outcomes", json::array({1})) == "outcomes[0]: must be an object");

    json many = json::array();
    for (int i = 1; i <= 257; ++i) {
        many.push_back({{"selection_id", i}, {"result", "lose"}});
    }
    CHECK(result_refusal("outcomes", many) == "outcomes: has more than 256 entries");
    many.erase(many.size() - 1);
    m = valid_result();
    m["outcomes"] = many;
    CHECK(feed::parse_result_event(m).has_value());

    m = valid_result();
    m["outcomes"][1]["selection_id"] = 1001;
    CHECK(feed_refusal(feed::parse_result_event(m)) ==
          "outcomes[1].selection_id: 1001 appears twice");
    m = valid_result();
    m["outcomes"][0].erase("selection_id");
    CHECK(feed_refusal(feed::parse_result_event(m)) == "outcomes[0].selection_id: is required");
    CHECK(outcome_refusal("selection_id", 0) ==
          "outcomes[0].selection_id: must be a positive integer");
    CHECK(outcome_refusal("selection_id", "1001") ==
          "outcomes[0].selection_id: must be a positive integer");
    CHECK(outcome_refusal("selection_id", 1001.0) ==
          "outcomes[0].selection_id: must be a positive integer");

    m = valid_result();
    m["outcomes"][0].erase("result");
    CHECK(feed_refusal(feed::parse_result_event(m)) == "outcomes[0].result: is required");
    CHECK(outcome_refusal("result", nullptr) == "outcomes[0].result: is required");
    for (const json& bad : {json("won"), json("WIN"), json("void"), json(true), json(1)}) {
        CAPTURE(bad.dump());
        CHECK(outcome_refusal("result", bad) == "outcomes[0].result: must be \"win\" or \"lose\"");
    }
    CHECK(outcome_refusal("odds", "2.50") == "outcomes[0]: unknown field \"odds\"");
}

TEST_CASE("result outcomes are sorted by selection id so a reordered resend is the same event") {
    json m = valid_result();
    m["outcomes"] = json::parse(R"([{"selection_id":3003,"result":"lose"},
        {"selection_id":1001,"result":"win","dead_heat_factor":"0.5"},
        {"selection_id":2002,"result":"win","void_factor":"0.25"}])");
    const auto r = feed::parse_result_event(m);
    REQUIRE(r.has_value());
    REQUIRE(r->outcomes.size() == 3);
    CHECK(r->outcomes[0].selection_id == 1001);
    CHECK(r->outcomes[0].dead_heat_factor_units == 5000);
    CHECK(r->outcomes[1].selection_id == 2002);
    CHECK(r->outcomes[1].void_factor_units == 2500);
    CHECK(r->outcomes[2].selection_id == 3003);

    json reordered = m;
    std::swap(reordered["outcomes"][0], reordered["outcomes"][2]);
    reordered["id"] = "another request id";
    const auto again = feed::parse_result_event(reordered);
    REQUIRE(again.has_value());
    CHECK(again->payload_json == r->payload_json);
    // Writing a default explicitly is the same event as leaving it out.
    json explicit_defaults = m;
    explicit_defaults["outcomes"][0]["void_factor"] = "0";
    explicit_defaults["outcomes"][2]["dead_heat_factor"] = "1.0";
    CHECK(feed::parse_result_event(explicit_defaults)->payload_json == r->payload_json);
    // A different factor is a different payload.
    json changed = m;
    changed["outcomes"][2]["void_factor"] = "0.2500";
    CHECK(feed::parse_result_event(changed)->payload_json == r->payload_json);
    changed["outcomes"][2]["void_factor"] = "0.2501";
    CHECK(feed::parse_result_event(changed)->payload_json != r->payload_json);
}

TEST_CASE("result event common fields market_id seq and event_key are checked") {
    json m = valid_result();
    m.erase("market_id");
    CHECK(feed_refusal(feed::parse_result_event(m)) == "market_id: is required");
    CHECK(result_refusal("market_id", 0) == "market_id: must be a positive integer");
    CHECK(result_refusal("market_id", "100") == "market_id: must be a positive integer");
    CHECK(result_refusal("market_id", 1.5) == "market_id: must be a positive integer");
    CHECK(contains(result_refusal("market_id", 9223372036854775808ULL), "too large"));

    const std::string seq_rule = "seq: must be an integer from 1 to 9223372036854775806";
    m = valid_result();
    m.erase("seq");
    CHECK(feed_refusal(feed::parse_result_event(m)) == "seq: is required");
    CHECK(result_refusal("seq", nullptr) == "seq: is required");
    CHECK(result_refusal("seq", 0) == seq_rule);
    CHECK(result_refusal("seq", -1) == seq_rule);
    CHECK(result_refusal("seq", 9223372036854775807LL) == seq_rule);
    CHECK(result_refusal("seq", 9223372036854775808ULL) == seq_rule);
    CHECK(result_refusal("seq", 18446744073709551615ULL) == seq_rule);
    CHECK(result_refusal("seq", 1.0) == seq_rule);
    CHECK(result_refusal("seq", "1") == seq_rule);
    m = valid_result();
    // 64-bit: past PostgreSQL's integer, up to one below bigint's largest.
    m["seq"] = 2147483648LL;
    REQUIRE(feed::parse_result_event(m).has_value());
    CHECK(feed::parse_result_event(m)->seq == 2147483648LL);
    m["seq"] = 9223372036854775806LL;
    REQUIRE(feed::parse_result_event(m).has_value());
    CHECK(feed::parse_result_event(m)->seq == 9223372036854775806LL);

    m = valid_result();
    m.erase("event_key");
    CHECK(feed_refusal(feed::parse_result_event(m)) == "event_key: is required");
    CHECK(result_refusal("event_key", "") == "event_key: must not be empty");
    CHECK(result_refusal("event_key", 7) == "event_key: must be a string");
    CHECK(result_refusal("event_key", std::string(256, 'k')) ==
          "event_key: is longer than 255 bytes");
    CHECK(result_refusal("event_key", std::string("a\0b", 3)) ==
          "event_key: must not contain a NUL character");
    m = valid_result();
    m["event_key"] = std::string(255, 'k');
    CHECK(feed::parse_result_event(m).has_value());

    CHECK(result_refusal("start_time", "2025-05-01T18:30:00Z") == "unknown field \"start_time\"");
    CHECK(result_refusal("outcome", json::array()) == "unknown field \"outcome\"");
    m = valid_result();
    m["type"] = "settle";
    CHECK(feed_refusal(feed::parse_result_event(m)) ==
          "type: must be \"result\", \"rollback_result\", \"cancel\" or \"rollback_cancel\"");
    CHECK(feed_refusal(feed::parse_result_event(json::array())) == "message must be a JSON object");
}

TEST_CASE("rollback_result carries only the common fields and an empty payload") {
    json m{{"type", "rollback_result"},
           {"id", 5},
           {"market_id", 100},
           {"seq", 3},
           {"event_key", "ev-3"}};
    const auto r = feed::parse_result_event(m);
    REQUIRE(r.has_value());
    CHECK(r->kind == feed::result_event_kind::rollback_result);
    CHECK(r->seq == 3);
    CHECK(r->outcomes.empty());
    CHECK(r->payload_json == "{}");
    m["outcomes"] = valid_result()["outcomes"];
    CHECK(feed_refusal(feed::parse_result_event(m)) == "unknown field \"outcomes\"");
    m.erase("outcomes");
    m["end_time"] = "2025-05-01T18:30:00Z";
    CHECK(feed_refusal(feed::parse_result_event(m)) == "unknown field \"end_time\"");
}

TEST_CASE("cancel and rollback_cancel take an optional normalised window") {
    for (const std::string type : {"cancel", "rollback_cancel"}) {
        CAPTURE(type);
        json m = valid_cancel(type);
        auto r = feed::parse_result_event(m);
        REQUIRE(r.has_value());
        CHECK(r->kind == (type == "cancel" ? feed::result_event_kind::cancel
                                           : feed::result_event_kind::rollback_cancel));
        CHECK(r->payload_json == "{}");

        m["start_time"] = "2025-05-01T20:30:00+02:00";
        r = feed::parse_result_event(m);
        REQUIRE(r.has_value());
        CHECK(r->start_time == "2025-05-01T18:30:00.000000Z");
        CHECK_FALSE(r->end_time.has_value());
        CHECK(r->payload_json == R"({"start_time":"2025-05-01T18:30:00.000000Z"})");

        m["end_time"] = "2025-05-01T19:00:00.5Z";
        r = feed::parse_result_event(m);
        REQUIRE(r.has_value());
        CHECK(r->payload_json == R"({"end_time":"2025-05-01T19:00:00.500000Z",)"
                                 R"("start_time":"2025-05-01T18:30:00.000000Z"})");

        m.erase("start_time");
        r = feed::parse_result_event(m);
        REQUIRE(r.has_value());
        CHECK(r->payload_json == R"({"end_time":"2025-05-01T19:00:00.500000Z"})");
        // Explicit nulls read as absent.
        m["start_time"] = nullptr;
        m["end_time"] = nullptr;
        CHECK(feed::parse_result_event(m)->payload_json == "{}");
    }
}

TEST_CASE("a cancel window is two zoned date-times in order") {
    json m = valid_cancel();
    m["start_time"] = "2025-05-01T18:30:00";
    CHECK(feed_refusal(feed::parse_result_event(m)) ==
          "start_time: must be an ISO 8601 date-time with a zone, such as "
          "\"2025-05-01T18:30:00Z\"");
    m["start_time"] = 1746124200;
    CHECK(feed_refusal(feed::parse_result_event(m)) ==
          "start_time: must be an ISO 8601 date-time string such as \"2025-05-01T18:30:00Z\"");
    m.erase("start_time");
    m["end_time"] = "2025-02-30T18:30:00Z";
    CHECK(contains(feed_refusal(feed::parse_result_event(m)), "end_time: must be an ISO 8601"));

    // Equal instants written in two zones: an empty window is refused.
    m["start_time"] = "2025-05-01T20:30:00+02:00";
    m["end_time"] = "2025-05-01T18:30:00Z";
    CHECK(feed_refusal(feed::parse_result_event(m)) == "end_time: must be after start_time");
    m["end_time"] = "2025-05-01T18:00:00Z";
    CHECK(feed_refusal(feed::parse_result_event(m)) == "end_time: must be after start_time");
    m["end_time"] = "2025-05-01T18:30:00.000001Z";
    CHECK(feed::parse_result_event(m).has_value());

    m = valid_cancel();
    m["outcomes"] = json::array();
    CHECK(feed_refusal(feed::parse_result_event(m)) == "unknown field \"outcomes\"");
}

TEST_CASE("result event kinds round-trip") {
    for (auto k : {feed::result_event_kind::result, feed::result_event_kind::rollback_result,
                   feed::result_event_kind::cancel, feed::result_event_kind::rollback_cancel}) {
        CHECK(feed::result_event_kind_from_string(feed::to_string(k)) == k);
    }
    CHECK_FALSE(feed::result_event_kind_from_string("market").has_value());
    CHECK_FALSE(feed::result_event_kind_from_string("").has_value());
}
