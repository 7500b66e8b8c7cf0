// The rehearsal's scenario file: the shipped scenarios parse, every field is validated with a
// message naming it, and unknown fields are refused.

#include "app/rehearsal/scenario.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>

using fulltime::app::rehearsal::fault_kind;
using fulltime::app::rehearsal::parse_scenario;
using nlohmann::json;

namespace {

json minimal() {
    return json::parse(R"({
      "name": "t",
      "accounts": {"count": 10, "deposit": "100.00"},
      "markets": {"live": 1, "burst": 1},
      "bettors": {"connections": 2, "rate_per_s": 1, "stake": "1.00"},
      "timeline": {"duration_s": 20, "burst_at_s": 5},
      "criteria": {"placement_p99_ms_max": 100, "backlog_age_s_max": 2, "backlog_within_s": 10}
    })");
}

std::string scenario_refusal(const json& doc) {
    try {
        parse_scenario(doc);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("the shipped scenarios parse") {
    for (const char* name : {"smoke", "final-night", "through-pgbouncer"}) {
        CAPTURE(name);
        std::ifstream in(std::string(FULLTIME_SOURCE_DIR) + "/config/scenarios/" + name + ".json");
        REQUIRE(in);
        const auto s = parse_scenario(json::parse(in));
        CHECK(s.name == name);
        CHECK_FALSE(s.faults.empty());
        CHECK(s.pgbouncer == (std::string(name) == "through-pgbouncer"));
    }
}

TEST_CASE("a minimal scenario takes the defaults, money as minor units") {
    const auto s = parse_scenario(minimal());
    CHECK(s.accounts == 10);
    CHECK(s.deposit_minor == 10000);
    CHECK(s.stake_minor == 100);
    CHECK(s.retry_ratio == 0);
    CHECK(s.preload_bets == 0);
    CHECK(s.faults.empty());
    CHECK_FALSE(s.pgbouncer);
}

TEST_CASE("faults are sorted by time and keep their settings") {
    auto doc = minimal();
    doc["faults"] = json::parse(R"([
      {"kind": "correct_result", "at_s": 9, "market": 1, "reordered": true},
      {"kind": "terminate_backends", "at_s": 3, "pool": "settlement"},
      {"kind": "idle_in_transaction", "at_s": 6, "hold_s": 2.5}
    ])");
    const auto s = parse_scenario(doc);
    REQUIRE(s.faults.size() == 3);
    CHECK(s.faults[0].kind == fault_kind::terminate_backends);
    CHECK(s.faults[0].pool == "settlement");
    CHECK(s.faults[1].kind == fault_kind::idle_in_transaction);
    CHECK(s.faults[1].hold_s == 2.5);
    CHECK(s.faults[2].kind == fault_kind::correct_result);
    CHECK(s.faults[2].reordered);
}

TEST_CASE("bad input is refused with the field's name") {
    auto doc = minimal();
    doc["accounts"]["deposit"] = 100;
    CHECK(scenario_refusal(doc).find("accounts.deposit: must be an amount") == 0);

    doc = minimal();
    doc["bettors"]["stake"] = "1.001";
    CHECK(scenario_refusal(doc).find("bettors.stake:") == 0);

    doc = minimal();
    doc["bettors"]["colour"] = "red";
    CHECK(scenario_refusal(doc) == "bettors.colour: is not a known field");

    doc = minimal();
    doc.erase("criteria");
    CHECK(scenario_refusal(doc).find("criteria: is required") == 0);

    doc = minimal();
    doc["faults"] = json::parse(R"([{"kind": "unplug", "at_s": 1}])");
    CHECK(scenario_refusal(doc).find("faults[0].kind: unknown fault \"unplug\"") == 0);

    doc = minimal();
    doc["faults"] = json::parse(R"([{"kind": "kill_engine", "at_s": 99}])");
    CHECK(scenario_refusal(doc).find("faults[0].at_s: must be from") == 0);

    doc = minimal();
    doc["faults"] = json::parse(R"([{"kind": "terminate_backends", "at_s": 1, "pool": "x"}])");
    CHECK(scenario_refusal(doc).find("faults[0].pool:") == 0);

    doc = minimal();
    doc["faults"] = json::parse(R"([{"kind": "duplicate_result", "at_s": 1}])");
    CHECK(scenario_refusal(doc).find("faults[0].at_s: must not be before the burst") == 0);

    doc = minimal();
    doc["faults"] = json::parse(R"([{"kind": "cancel_market", "at_s": 6, "market": 2}])");
    CHECK(scenario_refusal(doc).find("faults[0].market: must be from 1 to 1") == 0);

    doc = minimal();
    doc["bettors"]["connections"] = 11;
    CHECK(scenario_refusal(doc).find("bettors.connections:") == 0);

    doc = minimal();
    doc["name"] = "../etc";
    CHECK(scenario_refusal(doc).find("name:") == 0);

    doc = minimal();
    doc["criteria"]["backlog_within_s"] = 16;
    CHECK(scenario_refusal(doc).find("criteria.backlog_within_s: must end within the run") == 0);
}

TEST_CASE("a deposit too small for an account's share of the stakes is refused") {
    auto doc = minimal();
    doc["bettors"]["rate_per_s"] = 20;  // 20/s over 2 connections for 20 s: 200 bets each
    CHECK(scenario_refusal(doc).find("accounts.deposit: is too small") == 0);
}

TEST_CASE("to_json gives a document that parses back to the same scenario") {
    auto doc = minimal();
    doc["faults"] = json::parse(R"([{"kind": "cancel_market", "at_s": 6, "market": 1}])");
    const auto s = parse_scenario(doc);
    const auto back = parse_scenario(to_json(s));
    CHECK(back.name == s.name);
    CHECK(back.deposit_minor == s.deposit_minor);
    REQUIRE(back.faults.size() == 1);
    CHECK(back.faults[0].kind == fault_kind::cancel_market);
}
