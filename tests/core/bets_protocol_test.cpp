#include "fulltime/core/bets_protocol.hpp"
#include "support/text.hpp"

#include "fulltime/limits.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace bets = fulltime::bets;
using nlohmann::json;

using fulltime::test::contains;

namespace {

constexpr std::int64_t account = 42;

json place_message() {
    return json{{"type", "place"},      {"id", "c1"},       {"idempotency_key", "k1"},
                {"selection_id", 1001}, {"stake", "10.00"}, {"odds", "2.50"}};
}

// Returns the refusal message of a parse that must fail.
template <class T>
std::string refusal(const bets::checked<T>& r) {
    REQUIRE_FALSE(r.has_value());
    return r.error().message;
}

}  // namespace

TEST_CASE("a well-formed place message becomes a typed request on the token's account") {
    auto r = bets::parse_place(place_message(), account);
    REQUIRE(r.has_value());
    CHECK(r->account_id == account);
    CHECK(r->idempotency_key == "k1");
    CHECK(r->selection_id == 1001);
    CHECK(r->stake_thousandths == 10'000);
    CHECK(r->odds_units == 25000);
    CHECK(r->accept == bets::accept_policy::exact);

    for (auto [text, policy] : {std::pair{"exact", bets::accept_policy::exact},
                                {"better", bets::accept_policy::better},
                                {"any", bets::accept_policy::any}}) {
        auto m = place_message();
        m["accept"] = text;
        auto p = bets::parse_place(m, account);
        REQUIRE(p.has_value());
        CHECK(p->accept == policy);
    }
    auto m = place_message();
    m["account_id"] = account;
    CHECK(bets::parse_place(m, account).has_value());
}

TEST_CASE("place refuses missing and mistyped fields with a message naming the field") {
    for (const char* field : {"idempotency_key", "selection_id", "stake", "odds"}) {
        auto m = place_message();
        m.erase(field);
        CHECK(refusal(bets::parse_place(m, account)) == std::string("missing \"") + field + "\"");
    }
    auto m = place_message();
    m["stake"] = 10;
    CHECK(contains(refusal(bets::parse_place(m, account)), "\"stake\" must be a string"));
    m = place_message();
    m["odds"] = 2.5;
    CHECK(contains(refusal(bets::parse_place(m, account)), "\"odds\" must be a string"));
    m = place_message();
    m["idempotency_key"] = 7;
    CHECK(contains(refusal(bets::parse_place(m, account)), "\"idempotency_key\" must be a string"));
    for (json bad : {json("1001"), json(1001.0), json(0), json(-5), json(nullptr), json::array(),
                     json(18446744073709551615ULL)}) {
        m = place_message();
        m["selection_id"] = bad;
        CHECK(refusal(bets::parse_place(m, account)) ==
              "\"selection_id\" must be a positive integer");
    }
}

TEST_CASE("place refuses stakes that are zero negative over-precise or too large") {
    const std::pair<const char*, const char*> cases[] = {
        {"0", "greater than zero"},
        {"0.00", "greater than zero"},
        {"-1.00", "negative"},
        {"10.0001", "decimal places"},
        {"1e3", "plain decimal digits"},
        {"", "empty"},
        {" 10", "plain decimal digits"},
        {"9223372036854775807", "too large"},
        {"1000000000000000.001", "too large"},
    };
    for (auto [stake, expected] : cases) {
        auto m = place_message();
        m["stake"] = stake;
        const auto msg = refusal(bets::parse_place(m, account));
        CHECK_MESSAGE(contains(msg, expected), stake << " -> " << msg);
        CHECK(msg.rfind("\"stake\": ", 0) == 0);
    }
    auto m = place_message();
    // The largest stake of a currency without decimals: the currency's own bound (and decimals)
    // are the placement function's to check, once it has read the account.
    m["stake"] = "1000000000000000";
    auto r = bets::parse_place(m, account);
    REQUIRE(r.has_value());
    CHECK(r->stake_thousandths == fulltime::limits::amount_thousandths_max);
    m["stake"] = "10.005";
    CHECK(bets::parse_place(m, account)->stake_thousandths == 10'005);
}

TEST_CASE("place refuses odds below 1.01 or with more than four decimals") {
    for (auto [odds, expected] : {std::pair{"1.00", "at least 1.01"},
                                  {"1.009", "at least 1.01"},
                                  {"0", "at least 1.01"},
                                  {"2.50001", "decimal places"},
                                  {"10000.01", "too large"},
                                  {"abc", "plain decimal digits"}}) {
        auto m = place_message();
        m["odds"] = odds;
        const auto msg = refusal(bets::parse_place(m, account));
        CHECK_MESSAGE(contains(msg, expected), odds << " -> " << msg);
    }
    auto m = place_message();
    m["odds"] = "1.01";
    CHECK(bets::parse_place(m, account).has_value());
}

TEST_CASE("place bounds the idempotency key to 1 through 255 bytes") {
    auto m = place_message();
    m["idempotency_key"] = "";
    CHECK(refusal(bets::parse_place(m, account)) == "\"idempotency_key\" must not be empty");
    m["idempotency_key"] = std::string(256, 'k');
    CHECK(contains(refusal(bets::parse_place(m, account)), "longer than 255 bytes"));
    m["idempotency_key"] = std::string(300, 'k');
    CHECK(contains(refusal(bets::parse_place(m, account)), "longer than 255 bytes"));
    m["idempotency_key"] = std::string(255, 'k');
    CHECK(bets::parse_place(m, account).has_value());
    // Bytes, not characters: 128 two-byte characters are 256 bytes.
    std::string wide;
    for (int i = 0; i < 128; ++i) {
        wide += "\xc3\xa9";
    }
    m["idempotency_key"] = wide;
    CHECK(contains(refusal(bets::parse_place(m, account)), "longer than 255 bytes"));
}

TEST_CASE("place refuses an idempotency key the database would refuse: NUL or not UTF-8") {
    // The strict parser refuses "\u0000" before this; a message built another way is checked
    // here all the same, so that such a key never reaches the placement group.
    auto m = place_message();
    for (const auto& key : {std::string("k\0", 2), std::string("\0", 1), std::string("a\0b", 3)}) {
        m["idempotency_key"] = key;
        CHECK(refusal(bets::parse_place(m, account)) ==
              "\"idempotency_key\" must not contain a NUL character");
    }
    for (const char* key : {"\xff", "k\xc3", "\xc0\x80", "\xed\xa0\x80"}) {
        m["idempotency_key"] = key;
        CHECK(refusal(bets::parse_place(m, account)) == "\"idempotency_key\" must be valid UTF-8");
    }
    m["idempotency_key"] = "caf\xc3\xa9 \xf0\x9f\x8e\xb2";
    CHECK(bets::parse_place(m, account).has_value());
}

TEST_CASE("place refuses an accept policy other than exact better or any") {
    for (json bad : {json("EXACT"), json(""), json("best"), json(1), json(nullptr)}) {
        auto m = place_message();
        m["accept"] = bad;
        CHECK(refusal(bets::parse_place(m, account)) ==
              "\"accept\" must be \"exact\", \"better\" or \"any\"");
    }
}

TEST_CASE("every request naming another account is refused") {
    const std::string own_only = "a bet-client token acts on its own account only";
    auto m = place_message();
    m["account_id"] = 43;
    CHECK(refusal(bets::parse_place(m, account)) == own_only);
    CHECK(refusal(bets::parse_balance(json{{"type", "balance"}, {"id", 1}, {"account_id", 7}},
                                      account)) == own_only);
    CHECK(refusal(bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"account_id", 7}},
                                   account)) == own_only);
    m["account_id"] = "42";
    CHECK(contains(refusal(bets::parse_place(m, account)), "\"account_id\" must be"));
    CHECK(bets::parse_balance(json{{"type", "balance"}, {"id", 1}, {"account_id", 42}}, account)
              .has_value());
}

TEST_CASE("unknown fields are refused by every request type") {
    auto m = place_message();
    m["acept"] = "any";
    CHECK(refusal(bets::parse_place(m, account)) == "unknown field \"acept\"");
    CHECK(refusal(bets::parse_balance(json{{"type", "balance"}, {"id", 1}, {"x", 1}}, account)) ==
          "unknown field \"x\"");
    CHECK(refusal(bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"limits", 5}}, account)) ==
          "unknown field \"limits\"");
    m = place_message();
    m[std::string(100, 'z')] = 1;
    CHECK(refusal(bets::parse_place(m, account)).size() < 90);
}

TEST_CASE("bets takes status and limit within bounds and defaults to all and 50") {
    auto r = bets::parse_bets(json{{"type", "bets"}, {"id", 1}}, account);
    REQUIRE(r.has_value());
    CHECK(r->status == bets::status_filter::all);
    CHECK(r->limit == 50);
    r = bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"status", "open"}, {"limit", 200}},
                         account);
    REQUIRE(r.has_value());
    CHECK(r->status == bets::status_filter::open);
    CHECK(r->limit == 200);
    r = bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"status", "settled"}, {"limit", 1}},
                         account);
    REQUIRE(r.has_value());
    CHECK(r->status == bets::status_filter::settled);
    for (json bad : {json(0), json(201), json(-1), json(1.5), json("10"), json(nullptr)}) {
        CHECK(refusal(bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"limit", bad}},
                                       account)) == "\"limit\" must be an integer from 1 to 200");
    }
    for (json bad : {json("Open"), json("won"), json(1)}) {
        CHECK(refusal(
                  bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"status", bad}}, account)) ==
              "\"status\" must be \"open\", \"settled\" or \"all\"");
    }
}

TEST_CASE("bets takes before as a positive bet_id and defaults to the newest bets") {
    auto r = bets::parse_bets(json{{"type", "bets"}, {"id", 1}}, account);
    REQUIRE(r.has_value());
    CHECK_FALSE(r->before.has_value());
    r = bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"before", 1234}, {"limit", 200}},
                         account);
    REQUIRE(r.has_value());
    CHECK(r->before == 1234);
    CHECK(r->limit == 200);
    r = bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"before", std::uint64_t{INT64_MAX}}},
                         account);
    REQUIRE(r.has_value());
    CHECK(r->before == INT64_MAX);
    const std::string what =
        "\"before\" must be a positive integer (a bet_id from \"next_before\")";
    for (json bad : {json(0), json(-5), json(1.5), json("10"), json(nullptr), json(true),
                     json(std::uint64_t{INT64_MAX} + 1), json::array({1})}) {
        CAPTURE(bad.dump());
        CHECK(refusal(bets::parse_bets(json{{"type", "bets"}, {"id", 1}, {"before", bad}},
                                       account)) == what);
    }
}

TEST_CASE("a bets reply carries next_before, null when there are no more bets") {
    bets::bets_page page;
    bets::bet_line line;
    line.bet.bet_id = 77;
    line.bet.account_id = 42;
    line.bet.stake_minor = 1000;  // a placed bet's stake is minor units
    line.bet.odds_units = 25000;
    line.currency = "EUR";
    page.lines.push_back(line);
    page.next_before = 77;
    auto more = bets::render_bets("q", page);
    CHECK(more["type"] == "bets");
    CHECK(more["id"] == "q");
    REQUIRE(more["bets"].size() == 1);
    CHECK(more["bets"][0] == bets::render_bet_line(line));
    CHECK(more["next_before"] == 77);
    page.next_before.reset();
    auto last = bets::render_bets(7, page);
    REQUIRE(last.contains("next_before"));
    CHECK(last["next_before"].is_null());
    auto none = bets::render_bets(7, bets::bets_page{});
    CHECK(none["bets"] == json::array());
    CHECK(none["next_before"].is_null());
}

TEST_CASE("the fingerprint is canonical over the parsed parameters") {
    auto a = bets::parse_place(place_message(), account).value();
    auto m = place_message();
    m["stake"] = "10";
    m["odds"] = "2.5000";
    m["accept"] = "exact";
    m["idempotency_key"] = "another";
    auto b = bets::parse_place(m, account).value();
    CHECK(bets::fingerprint(a) == bets::fingerprint(b));
    CHECK(bets::fingerprint(a).size() == 64);

    std::set<std::string> seen{bets::fingerprint(a)};
    auto variant = a;
    variant.stake_thousandths = 10'010;
    CHECK(seen.insert(bets::fingerprint(variant)).second);
    variant.stake_thousandths = 10'001;
    CHECK(seen.insert(bets::fingerprint(variant)).second);
    variant = a;
    variant.odds_units = 25001;
    CHECK(seen.insert(bets::fingerprint(variant)).second);
    variant = a;
    variant.selection_id = 1002;
    CHECK(seen.insert(bets::fingerprint(variant)).second);
    variant = a;
    variant.accept = bets::accept_policy::any;
    CHECK(seen.insert(bets::fingerprint(variant)).second);
}

TEST_CASE("stored placement results render as placed and rejected replies") {
    const std::string stored_bet =
        R"({"outcome":"placed","bet_id":7,"account_id":42,"market_id":3,"selection_id":1001,)"
        R"("stake":1000,"odds":25000,"placed_at":"2026-11-30T10:00:00.000000Z",)"
        R"("available":9000,"reserved":1000,"currency":"EUR"})";
    auto placed = bets::read_place_outcome("placed", stored_bet);
    REQUIRE(placed.has_value());
    CHECK(bets::render_place_result("c1", *placed) ==
          json::parse(R"({"type":"placed","id":"c1","replayed":false,"bet":{"bet_id":7,)"
                      R"("account_id":42,"market_id":3,"selection_id":1001,"stake":"10.00",)"
                      R"("odds":"2.50","placed_at":"2026-11-30T10:00:00.000000Z"},)"
                      R"("balance":{"available":"90.00","reserved":"10.00"}})"));
    auto replayed = bets::read_place_outcome("replayed", stored_bet);
    REQUIRE(replayed.has_value());
    CHECK(bets::render_place_result("c2", *replayed)["replayed"] == true);

    auto odds = bets::read_place_outcome(
        "rejected", R"({"outcome":"rejected","code":"odds_changed","odds":24000})");
    REQUIRE(odds.has_value());
    CHECK(bets::render_place_result(5, *odds) == json{{"type", "rejected"},
                                                      {"id", 5},
                                                      {"code", "odds_changed"},
                                                      {"message", "the odds are now 2.40"},
                                                      {"replayed", false}});
    auto odds_again = bets::read_place_outcome(
        "replayed", R"({"outcome":"rejected","code":"odds_changed","odds":24000})");
    REQUIRE(odds_again.has_value());
    CHECK(bets::render_place_result(5, *odds_again)["replayed"] == true);

    auto limit = bets::read_place_outcome(
        "rejected",
        R"({"outcome":"rejected","code":"stake_limit","stake_min":10,"stake_max":100000000})");
    REQUIRE(limit.has_value());
    CHECK(limit->message == "the stake must be between 0.10 and 1000000.00");
    // Since currencies have their own decimals the refusal names the bet's currency.
    auto yen_limit = bets::read_place_outcome(
        "rejected",
        R"({"outcome":"rejected","code":"stake_limit","stake_min":10,"stake_max":100000000,)"
        R"("currency":"JPY"})");
    REQUIRE(yen_limit.has_value());
    CHECK(yen_limit->message == "the stake must be between 10 and 100000000");

    auto suspended = bets::read_place_outcome(
        "rejected",
        R"({"outcome":"rejected","code":"market_suspended","market_id":3,"market_status":"suspended"})");
    REQUIRE(suspended.has_value());
    CHECK(suspended->message == "market 3 is suspended");

    auto reused = bets::read_place_outcome("key_reused", R"({"code":"idempotency_key_reused"})");
    REQUIRE(reused.has_value());
    const auto reply = bets::render_place_result("c3", *reused);
    CHECK(reply["code"] == "idempotency_key_reused");
    CHECK_FALSE(reply.contains("replayed"));

    for (auto code : {"insufficient_funds", "unknown_selection", "liability_limit"}) {
        auto r = bets::read_place_outcome("rejected",
                                          json{{"outcome", "rejected"}, {"code", code}}.dump());
        REQUIRE(r.has_value());
        CHECK(r->code == code);
        CHECK_FALSE(r->message.empty());
    }
}

TEST_CASE("placed replies use the currency's decimals") {
    const auto placed = [](std::int64_t stake, std::int64_t available, const char* currency) {
        const json stored{{"outcome", "placed"},    {"bet_id", 7},
                          {"account_id", 42},       {"market_id", 3},
                          {"selection_id", 1001},   {"stake", stake},
                          {"odds", 25000},          {"placed_at", "2026-11-30T10:00:00.000000Z"},
                          {"available", available}, {"reserved", stake},
                          {"currency", currency}};
        return bets::render_place_result("c",
                                         bets::read_place_outcome("placed", stored.dump()).value());
    };
    const auto yen = placed(100, 900, "JPY");
    CHECK(yen["bet"]["stake"] == "100");
    CHECK(yen["balance"] == json{{"available", "900"}, {"reserved", "100"}});
    const auto dinar = placed(10500, 500, "KWD");
    CHECK(dinar["bet"]["stake"] == "10.500");
    CHECK(dinar["balance"] == json{{"available", "0.500"}, {"reserved", "10.500"}});
}

TEST_CASE("a stake with more decimals than its currency is invalid_request, not a refusal") {
    auto r = bets::read_place_outcome(
        "invalid", R"({"outcome":"invalid","stake":10500,"stake_digits":3,"currency":"JPY"})");
    REQUIRE(r.has_value());
    CHECK(r->kind == bets::place_result::status::invalid);
    CHECK_FALSE(r->stored);
    CHECK(bets::render_place_result("c9", *r) ==
          json{{"type", "error"},
               {"id", "c9"},
               {"code", "invalid_request"},
               {"message", "\"stake\": too many decimal places for JPY (0)"}});
    auto big = bets::read_place_outcome(
        "invalid",
        R"({"outcome":"invalid","stake":10000000000000010,"stake_digits":3,"currency":"EUR"})");
    REQUIRE(big.has_value());
    CHECK(big->message == "\"stake\": the number is too large");
    // A stake the currency allows was not the function's to refuse: the shape is wrong.
    CHECK_FALSE(bets::read_place_outcome("invalid",
                                         R"({"outcome":"invalid","stake":10000,"currency":"JPY"})")
                    .has_value());
    CHECK_FALSE(bets::read_place_outcome("invalid", R"({"outcome":"invalid"})").has_value());
}

TEST_CASE("a stored result of an unknown shape is an error not a reply") {
    CHECK_FALSE(bets::read_place_outcome("placed", "not json").has_value());
    CHECK_FALSE(bets::read_place_outcome("placed", R"({"outcome":"placed"})").has_value());
    CHECK_FALSE(bets::read_place_outcome("rejected", R"({"outcome":"rejected","code":"nope"})")
                    .has_value());
    CHECK_FALSE(bets::read_place_outcome("exploded", R"({})").has_value());
    bets::place_result failed;
    CHECK(bets::render_place_result("x", failed)["code"] == "internal");
    bets::place_result busy;
    busy.kind = bets::place_result::status::busy;
    CHECK(bets::render_place_result("x", busy)["code"] == "busy");
    CHECK(bets::render_place_result("x", busy)["retry_after_ms"] == 100);
}

TEST_CASE("balance and bet lines render money as decimal strings") {
    CHECK(bets::render_balance("b", bets::balance{12345, 5, "EUR"}) == json{{"type", "balance"},
                                                                            {"id", "b"},
                                                                            {"available", "123.45"},
                                                                            {"reserved", "0.05"},
                                                                            {"currency", "EUR"}});
    bets::bet_line line;
    line.bet.bet_id = 1;
    line.bet.account_id = 42;
    line.bet.stake_minor = 250;
    line.bet.odds_units = 13333;
    line.currency = "EUR";
    auto open = bets::render_bet_line(line);
    CHECK(open["status"] == "open");
    CHECK(open["stake"] == "2.50");
    CHECK(open["odds"] == "1.3333");
    CHECK_FALSE(open.contains("payout"));
    line.settled = true;
    line.version = 2;
    line.outcome = "won";
    line.payout_minor = 333;
    auto settled = bets::render_bet_line(line);
    CHECK(settled["status"] == "settled");
    CHECK(settled["payout"] == "3.33");
    CHECK(settled["version"] == 2);
}
