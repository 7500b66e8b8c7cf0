// Which placement actor of a loop serves an account (actors/account_router.cpp): accounts spread
// evenly over the actors whatever their ids, an account keeps its actor while it has unanswered
// placements and for the linger after, and then leaves the actor's count so that new accounts
// fill the emptiest actor.

#include "actors/account_router.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <vector>

using namespace std::chrono_literals;
using fulltime::actors::detail::account_router;

namespace {

const account_router::clock::time_point t0{};

std::vector<std::size_t> held(const account_router& r, std::size_t actors) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < actors; ++i) {
        out.push_back(r.accounts_on(i));
    }
    return out;
}

}  // namespace

TEST_CASE("account router: one loop's accounts spread evenly whatever their ids") {
    // The ids one loop sees when two loops take connections in turn: all odd. By id modulo
    // four actors they would fall on two of them.
    account_router r(4, 1s);
    for (std::int64_t id = 1; id <= 15; id += 2) {
        r.route(id, t0);
    }
    CHECK(r.accounts() == 8);
    CHECK(held(r, 4) == std::vector<std::size_t>{2, 2, 2, 2});
}

TEST_CASE("account router: an account keeps its actor while unanswered and for the linger") {
    account_router r(2, 1s);
    const std::size_t a = r.route(100, t0);
    r.route(200, t0 + 10ms);  // the other actor; never answered
    // Five seconds on, 100's placement is still out. A new account takes the actors in turn
    // (both hold one): a's. Had 100 been forgotten, the newcomer would have taken a's place and
    // 100 the other actor.
    CHECK(r.route(400, t0 + 5s) == a);
    CHECK(r.route(100, t0 + 5s) == a);
    r.answered(100, t0 + 5s);
    r.answered(100, t0 + 5s);
    r.answered(400, t0 + 5s);
    // Answered, and back within the linger: the same actor, which still counts both.
    CHECK(r.accounts_on(a) == 2);
    CHECK(r.route(100, t0 + 5s + 900ms) == a);
    r.answered(100, t0 + 5s + 950ms);
    CHECK(r.accounts_on(a) == 2);
}

TEST_CASE("account router: an account idle for the linger leaves its actor's count") {
    account_router r(2, 1s);
    const std::size_t a = r.route(7, t0);
    const std::size_t b = r.route(8, t0);
    CHECK(a != b);
    r.answered(7, t0 + 1ms);
    r.answered(8, t0 + 500ms);
    // At 1.2 s account 7 has been idle for the linger, 8 not yet: the next new account takes 7's
    // place, the emptiest actor.
    CHECK(r.route(9, t0 + 1200ms) == a);
    CHECK(r.accounts() == 2);
    CHECK(held(r, 2) == std::vector<std::size_t>{1, 1});
    // Much later everything is idle: all forgotten, a new account starts the count again.
    r.answered(9, t0 + 1300ms);
    r.route(10, t0 + 10s);
    CHECK(r.accounts() == 1);
}

TEST_CASE("account router: an unanswered account delays the others' expiry, never loses them") {
    account_router r(2, 1s);
    const std::size_t slow = r.route(1, t0);  // its placement stays out
    r.route(2, t0 + 1ms);
    r.answered(2, t0 + 2ms);
    // Account 2 is past the linger but behind account 1, still unanswered: both held.
    CHECK(r.route(1, t0 + 3s) == slow);
    CHECK(r.accounts() == 2);
    r.answered(1, t0 + 3s);
    r.answered(1, t0 + 3s);
    // Once 1 is answered it moves behind 2, and 2 goes at the next route.
    r.route(3, t0 + 3s + 1ms);
    CHECK(r.accounts() == 2);
    CHECK(held(r, 2) == std::vector<std::size_t>{1, 1});
}

TEST_CASE("account router: accounts that arrive while the actors hold as many take them in turn") {
    account_router r(4, 1s);
    std::vector<std::size_t> got;
    for (std::int64_t id = 1; id <= 8; ++id) {
        got.push_back(r.route(id * 4, t0));  // ids that are all 0 modulo 4
    }
    CHECK(got == std::vector<std::size_t>{0, 1, 2, 3, 0, 1, 2, 3});
}
