#include "fulltime/core/feed_protocol.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

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
std::string refusal(const Parsed& p) {
    REQUIRE_MESSAGE(!p.has_value(), "expected a refusal");
    return p.error().message;
}

std::string market_refusal(const std::string& field, const json& value) {
    json m = valid_market();
    m[field] = value;
    return refusal(feed::parse_market(m));
}

std::string market_without(const std::string& field) {
    json m = valid_market();
    m.erase(field);
    return refusal(feed::parse_market(m));
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
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
    CHECK(refusal(feed::parse_market(m)) == "stake_max: must not be below stake_min");
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
    CHECK(refusal(feed::parse_market(m)) ==
          "liability_limit: must be at least exposure_shards minor units");
    m["liability_limit"] = "0.08";
    CHECK(feed::parse_market(m).has_value());
}

TEST_CASE("unknown fields are refused so a misspelt limit is never ignored") {
    CHECK(market_refusal("stake_maximum", "10.00") == "unknown field \"stake_maximum\"");
    json o = json::parse(R"({"type":"odds","market_id":1,"selection_id":2,"odds":"2.00","x":1})");
    CHECK(refusal(feed::parse_odds(o)) == "unknown field \"x\"");
    json s = json::parse(R"({"type":"suspend","market_id":1,"reason":"goal"})");
    CHECK(refusal(feed::parse_status(s)) == "unknown field \"reason\"");
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
    CHECK(refusal(feed::parse_odds(json::parse(
              R"({"type":"odds","selection_id":2,"odds":"2"})"))) == "market_id: is required");
    CHECK(refusal(feed::parse_odds(json::parse(R"({"type":"odds","market_id":1,"odds":"2"})"))) ==
          "selection_id: is required");
    CHECK(refusal(feed::parse_odds(json::parse(
              R"({"type":"odds","market_id":1,"selection_id":2})"))) == "odds: is required");
    CHECK(contains(refusal(feed::parse_odds(json::parse(
                       R"({"type":"odds","market_id":1,"selection_id":2,"odds":"1.0099"})"))),
                   "odds: "));
    CHECK(contains(refusal(feed::parse_odds(json::parse(
                       R"({"type":"odds","market_id":1,"selection_id":2,"odds":"100000.00"})"))),
                   "odds: "));
    CHECK(refusal(feed::parse_odds(json::array())) == "message must be a JSON object");
}

TEST_CASE("suspend and resume name their market") {
    const auto s = feed::parse_status(json::parse(R"({"type":"suspend","market_id":7})"));
    REQUIRE(s.has_value());
    CHECK(s->market_id == 7);
    CHECK(s->target == feed::market_status::suspended);
    const auto r = feed::parse_status(json::parse(R"({"type":"resume","market_id":7})"));
    REQUIRE(r.has_value());
    CHECK(r->target == feed::market_status::open);
    CHECK(refusal(feed::parse_status(json::parse(R"({"type":"resume"})"))) ==
          "market_id: is required");
    CHECK(refusal(feed::parse_status(json::parse(R"({"type":"resume","market_id":"7"})"))) ==
          "market_id: must be a positive integer");
    CHECK(refusal(feed::parse_status(json::parse(R"({"type":"close","market_id":7})"))) ==
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
        return refusal(feed::parse_account_request(json::parse(text)));
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
}

TEST_CASE("deposit and withdrawal bodies need a positive amount and a key") {
    const auto ok = feed::parse_transfer_request(json::parse(R"({"amount":"100.00","key":"k1"})"));
    REQUIRE(ok.has_value());
    CHECK(ok->amount_minor == 10000);
    CHECK(ok->key == "k1");
    const auto bad = [](const json& body) { return refusal(feed::parse_transfer_request(body)); };
    CHECK(bad(json{{"key", "k"}}) == "amount: is required");
    CHECK(contains(bad(json{{"amount", "0"}, {"key", "k"}}), "amount: "));
    CHECK(contains(bad(json{{"amount", "0.00"}, {"key", "k"}}), "amount: "));
    CHECK(contains(bad(json{{"amount", "-1.00"}, {"key", "k"}}), "amount: "));
    CHECK(contains(bad(json{{"amount", "1.005"}, {"key", "k"}}), "amount: "));
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
