// What the push loop reads out of an outbox row: the settles and cancels of a settlement_batch
// row (parallel arrays, entry i the i-th element of each, the account among them), or the one
// settlement of a bet_settled row written before migration 0004 (the account in the row).

#include "fulltime/net/settlement_pushes.hpp"

#include "fulltime/db/push_statements.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

using fulltime::net::announced_settlements;

TEST_CASE("a settlement batch announces its settles and cancels in order, not its reversals") {
    const auto got = announced_settlements("settlement_batch", std::nullopt,
                                           R"({"result_event_id": 9,
              "account_id": [7, 8, 7, 9],
              "bet_id": [100, 101, 102, 103],
              "version": [1, 2, 1, 3],
              "kind": ["settle", "reverse", "cancel", "settle"],
              "outcome": ["won", null, "void", "lost"],
              "payout": [25000, null, 1000, 0]})");
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
    // Entry 0 has no account, 1 a payout as text, 2 a version as text, 3 an outcome that is
    // not a string; entry 4 is whole.
    const auto got = announced_settlements("settlement_batch", std::nullopt,
                                           R"({"account_id": [null, 3, 3, 3, 3],
              "bet_id": [1, 2, 4, 6, 5],
              "version": [1, 1, "1", 1, 1],
              "kind": ["settle", "settle", "settle", "settle", "settle"],
              "outcome": ["won", "won", "won", [1], "lost"],
              "payout": [2, "2.00", 5, 7, 0]})");
    REQUIRE(got.size() == 1);
    CHECK(got[0].bet_id == 5);
    CHECK(got[0].account_id == 3);
    CHECK(got[0].outcome == "lost");
    CHECK(got[0].payout == 0);
    // An array shorter than the bet ids leaves out the entries it has no element for.
    const auto short_payouts = announced_settlements("settlement_batch", std::nullopt,
                                                     R"({"account_id": [3, 3], "bet_id": [1, 2],
              "version": [1, 1], "kind": ["settle", "settle"], "outcome": ["won", "won"],
              "payout": [2]})");
    REQUIRE(short_payouts.size() == 1);
    CHECK(short_payouts[0].bet_id == 1);
    CHECK(announced_settlements("settlement_batch", std::nullopt, "not json").empty());
    CHECK(announced_settlements("settlement_batch", std::nullopt, R"({"bet_id": 3})").empty());
    CHECK(announced_settlements("settlement_batch", std::nullopt, "[]").empty());
    // Without the account array no entry has an account.
    CHECK(announced_settlements("settlement_batch", std::nullopt,
                                R"({"bet_id": [1], "version": [1], "kind": ["settle"],
                                    "outcome": ["won"], "payout": [2]})")
              .empty());
    // The form before 0010_settlement_batch_arrays.sql (the migration rewrites those rows).
    CHECK(announced_settlements("settlement_batch", std::nullopt, R"({"settlements": [
              {"account_id": 3, "bet_id": 5, "version": 1, "kind": "settle",
               "outcome": "lost", "payout": 0}]})")
              .empty());
    CHECK(announced_settlements("bet_placed", 1, R"({"bet_id": 1, "version": 1, "kind": "settle",
                                                     "outcome": "won", "payout": 2})")
              .empty());
}

TEST_CASE("a page's rows are parsed one at a time, the event loop given back between them") {
    // Forty settlement_batch rows, each announcing bets of accounts 7 and 8 (account 8 has no
    // open session), and a bet_placed row with no payload, which the page skips.
    std::vector<fulltime::db::outbox_row> rows;
    for (int i = 0; i < 40; ++i) {
        const auto bet = std::to_string(1000 + 2 * i);
        const auto next = std::to_string(1001 + 2 * i);
        rows.push_back({std::to_string(500 + i), i + 1, "settlement_batch", std::nullopt,
                        R"({"account_id": [7, 8], "bet_id": [)" + bet + ", " + next +
                            R"(], "version": [1, 1], "kind": ["settle", "settle"],
                            "outcome": ["won", "lost"], "payout": [250, 0]})"});
    }
    rows.push_back({"600", 41, "bet_placed", 7, std::nullopt});

    boost::asio::io_context loop;
    std::vector<fulltime::net::announced_push> got;
    bool done = false;
    int ticks = 0;
    // Another handler on the same loop, ready all along: it runs only when the parse yields.
    std::function<void()> tick = [&] {
        if (!done) {
            ++ticks;
            boost::asio::post(loop, tick);
        }
    };
    boost::asio::co_spawn(
        loop,
        [&]() -> boost::asio::awaitable<void> {
            got = co_await fulltime::net::announced_to_open_sessions(
                rows, [](std::int64_t account) { return account == 7; });
            done = true;
        },
        boost::asio::detached);
    boost::asio::post(loop, tick);
    loop.run();

    REQUIRE(got.size() == 40);
    for (int i = 0; i < 40; ++i) {
        CHECK(got[i].settlement.account_id == 7);
        CHECK(got[i].settlement.bet_id == 1000 + 2 * i);
        CHECK(got[i].xid == static_cast<std::uint64_t>(500 + i));
    }
    // Once between every two rows parsed at least (a parse of the whole page at once: none).
    CHECK(ticks >= 39);
}
