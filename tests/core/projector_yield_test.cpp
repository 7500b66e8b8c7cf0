// When the read model's projector leaves the database to settlement (core/projector_yield.hpp):
// only while settlement holds a slot, for at most the limit at a time, then a full catch-up
// before it waits again; never with a limit of 0.

#include "fulltime/core/projector_yield.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace std::chrono_literals;
using fulltime::reads::projector_yield;

namespace {

projector_yield::clock::time_point at(std::chrono::milliseconds t) {
    return projector_yield::clock::time_point{} + t;
}

}  // namespace

TEST_CASE("the projector never waits with a limit of 0") {
    projector_yield y{0ms};
    CHECK_FALSE(y.yields(true, at(0ms)));
    CHECK_FALSE(y.yields(true, at(10ms)));
}

TEST_CASE("the projector runs its pages while nothing settles") {
    projector_yield y{1000ms};
    CHECK_FALSE(y.yields(false, at(0ms)));
    CHECK_FALSE(y.yields(false, at(5000ms)));
}

TEST_CASE("the projector waits while settlement runs, for at most the limit") {
    projector_yield y{1000ms};
    CHECK(y.yields(true, at(100ms)));
    CHECK(y.yields(true, at(600ms)));
    CHECK(y.yields(true, at(1099ms)));
    // The limit, counted from the first round it left: it runs until it has caught up, however
    // long settlement goes on.
    CHECK_FALSE(y.yields(true, at(1100ms)));
    CHECK_FALSE(y.yields(true, at(1500ms)));
    CHECK_FALSE(y.yields(true, at(9000ms)));
    // Caught up: it may wait again, the limit counted anew.
    y.caught_up();
    CHECK(y.yields(true, at(9010ms)));
    CHECK(y.yields(true, at(10009ms)));
    CHECK_FALSE(y.yields(true, at(10010ms)));
}

TEST_CASE("a pause in settlement does not give the projector a new limit before it caught up") {
    projector_yield y{1000ms};
    CHECK(y.yields(true, at(0ms)));
    // Settlement paused: the projector runs a round, which did not catch up.
    CHECK_FALSE(y.yields(false, at(400ms)));
    // Settlement again: the rest of the same limit only.
    CHECK(y.yields(true, at(800ms)));
    CHECK_FALSE(y.yields(true, at(1000ms)));
    // A round that caught up while settlement paused starts a new limit.
    y.caught_up();
    CHECK(y.yields(true, at(1200ms)));
    CHECK(y.yields(true, at(2199ms)));
    CHECK_FALSE(y.yields(true, at(2200ms)));
}
