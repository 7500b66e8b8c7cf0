// The descriptor-limit plan (core/fd_limit.cpp): the soft limit raised to the hard one, and
// connections_max lowered to what that holds.

#include "fulltime/core/fd_limit.hpp"

#include <doctest/doctest.h>

#include <limits>

using fulltime::process::plan_fd_limit;

TEST_CASE("a soft limit below the hard one is raised to it") {
    const auto p = plan_fd_limit(1024, 524288, 10000, 211);
    CHECK(p.soft_before == 1024);
    CHECK(p.soft == 524288);
    CHECK(p.connections_max == 10000);
    CHECK_FALSE(p.lowered());
}

TEST_CASE("a hard limit below connections_max plus the reserve lowers connections_max") {
    const auto p = plan_fd_limit(1024, 1024, 10000, 211);
    CHECK(p.soft == 1024);
    CHECK(p.connections_max == 1024 - 211);
    CHECK(p.connections_max_configured == 10000);
    CHECK(p.lowered());
    // Exactly enough is not lowered.
    CHECK_FALSE(plan_fd_limit(256, 10211, 10000, 211).lowered());
    CHECK(plan_fd_limit(256, 10210, 10000, 211).connections_max == 9999);
}

TEST_CASE("a hard limit that does not hold the reserve leaves no connection") {
    CHECK(plan_fd_limit(100, 200, 10000, 211).connections_max == 0);
    CHECK(plan_fd_limit(100, 211, 10000, 211).connections_max == 0);
    CHECK(plan_fd_limit(100, 212, 10000, 211).connections_max == 1);
}

TEST_CASE("an unlimited hard limit is raised to what is needed, and a soft limit never lowered") {
    constexpr auto unlimited = std::numeric_limits<std::uint64_t>::max();
    auto p = plan_fd_limit(1024, unlimited, 10000, 211);
    CHECK(p.soft == 10211);
    CHECK_FALSE(p.lowered());
    p = plan_fd_limit(1'000'000, unlimited, 10000, 211);
    CHECK(p.soft == 1'000'000);
    p = plan_fd_limit(unlimited, unlimited, 10000, 211);
    CHECK(p.soft == unlimited);
    CHECK(p.connections_max == 10000);
}
