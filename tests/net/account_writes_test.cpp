// Each account's newest write, which every session of the account reads before it reads
// (net/account_writes.hpp): pure logic, no database.

#include "fulltime/net/account_writes.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <thread>
#include <vector>

using fulltime::net::account_writes;

TEST_CASE("an account's figures only rise, each on its own") {
    account_writes w;
    CHECK(w.of(42).xid == 0);
    CHECK(w.of(42).commit_lsn == 0);
    w.note(42, 100, 5000);
    CHECK(w.of(42).xid == 100);
    CHECK(w.of(42).commit_lsn == 5000);
    // An older write noted later (another loop's group answered after) leaves the newer.
    w.note(42, 90, 4000);
    CHECK(w.of(42).xid == 100);
    CHECK(w.of(42).commit_lsn == 5000);
    // 0 is "not known": a push carries a transaction id and no position.
    w.note(42, 120, 0);
    CHECK(w.of(42).xid == 120);
    CHECK(w.of(42).commit_lsn == 5000);
}

TEST_CASE("a read of one account never misses that account's write, whatever else is noted") {
    account_writes w;
    // Every account of a range noted once: each reads at least its own figures (accounts that
    // share a slot read the higher of theirs, a wait for a newer write, never a miss).
    const std::int64_t accounts = 200'000;  // more than the table's slots
    for (std::int64_t a = 1; a <= accounts; ++a) {
        w.note(a, static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(2 * a));
    }
    std::int64_t exact = 0;
    for (std::int64_t a = 1; a <= accounts; ++a) {
        const auto seen = w.of(a);
        REQUIRE(seen.xid >= static_cast<std::uint64_t>(a));
        REQUIRE(seen.commit_lsn >= static_cast<std::uint64_t>(2 * a));
        exact += seen.xid == static_cast<std::uint64_t>(a) ? 1 : 0;
    }
    // The hash spreads consecutive ids: 200,000 of them fill every slot, and the highest id in
    // each slot reads exactly its own figures (the others, a newer write of a neighbour).
    CHECK(exact == static_cast<std::int64_t>(fulltime::limits::account_writes_slots));
    // An account never noted reads 0 only when nobody shares its slot; negative ids (not issued,
    // but an int64) hash like any other.
    w.note(-7, 1, 1);
    CHECK(w.of(-7).xid >= 1);
}

TEST_CASE("notes from several threads keep the highest of each figure") {
    account_writes w;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&w, t] {
            for (std::uint64_t i = 1; i <= 10'000; ++i) {
                w.note(42, i * 4 + static_cast<std::uint64_t>(t), i);
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    CHECK(w.of(42).xid == 10'000 * 4 + 3);
    CHECK(w.of(42).commit_lsn == 10'000);
}
