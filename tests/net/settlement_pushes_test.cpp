// What the push loop reads out of an outbox row: the settles and cancels of a settlement_batch
// row (one entry per bet, the account in each entry), or the one settlement of a bet_settled row
// written before migration 0004 (the account in the row).

#include "fulltime/net/settlement_pushes.hpp"

#include <doctest/doctest.h>

using fulltime::net::announced_settlements;

TEST_CASE("a settlement batch announces its settles and cancels in order, not its reversals") {
    const auto got = announced_settlements("settlement_batch", std::nullopt,
                                           R"({"result_event_id": 9, "settlements": [
              {"account_id": 7, "bet_id": 100, "version": 1, "kind": "settle",
               "outcome": "won", "payout": 25000},
              {"account_id": 8, "bet_id": 101, "version": 2, "kind": "reverse",
               "outcome": null, "payout": null},
              {"account_id": 7, "bet_id": 102, "version": 1, "kind": "cancel",
               "outcome": "void", "payout": 1000},
              {"account_id": 9, "bet_id": 103, "version": 3, "kind": "settle",
               "outcome": "lost", "payout": 0}]})");
    REQUIRE(got.size() == 3);
    CHECK(got[0].account_id == 7);
    CHECK(got[0].bet_id == 100);
    CHECK(got[0].version == 1);
    CHECK(got[0].outcome == "won");
    CHECK(got[0].payout == 25000);
    CHECK(got[1].bet_id == 102);
    CHECK(got[1].outcome == "void");
    CHECK(got[1].payout == 1000);
    CHECK(got[2].account_id == 9);
    CHECK(got[2].version == 3);
    CHECK(got[2].payout == 0);
}

TEST_CASE(
    "a bet_settled row written before the batches announces one settlement to its row's "
    "account") {
    const auto got = announced_settlements(
        "bet_settled", 42,
        R"({"bet_id": 5, "version": 1, "kind": "settle", "outcome": "won", "payout": 300})");
    REQUIRE(got.size() == 1);
    CHECK(got[0].account_id == 42);
    CHECK(got[0].bet_id == 5);
    CHECK(got[0].payout == 300);
    CHECK(announced_settlements("bet_settled", std::nullopt,
                                R"({"bet_id": 5, "version": 1, "outcome": "won", "payout": 3})")
              .empty());
}

TEST_CASE("entries that do not parse are left out, and the rest of the batch is announced") {
    const auto got = announced_settlements("settlement_batch", std::nullopt,
                                           R"({"settlements": [
              {"bet_id": 1, "version": 1, "kind": "settle", "outcome": "won", "payout": 2},
              {"account_id": 3, "bet_id": 2, "version": 1, "kind": "settle",
               "outcome": "won", "payout": "2.00"},
              {"account_id": 3, "bet_id": 4, "version": 1, "kind": "settle", "outcome": "won"},
              [1, 2, 3],
              {"account_id": 3, "bet_id": 5, "version": 1, "kind": "settle",
               "outcome": "lost", "payout": 0}]})");
    REQUIRE(got.size() == 1);
    CHECK(got[0].bet_id == 5);
    CHECK(announced_settlements("settlement_batch", std::nullopt, "not json").empty());
    CHECK(announced_settlements("settlement_batch", std::nullopt, R"({"settlements": 3})").empty());
    CHECK(announced_settlements("settlement_batch", std::nullopt, "[]").empty());
    CHECK(announced_settlements("bet_placed", 1, R"({"bet_id": 1, "version": 1, "kind": "settle",
                                                     "outcome": "won", "payout": 2})")
              .empty());
}
