#pragma once
/// Which placement actor of one event loop takes a bet. Private to actors/; see placement.hpp for
/// the threading model. No CAF here.

#include "actors/placement_actor.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace fulltime::actors::detail {

/// Routes one loop's placements to its actors. An account's placements go to one actor (by
/// account id, its home), so that they queue together and commit as one group instead of
/// waiting on each other's balance row lock. One exception, for the tail: when the home's group
/// has been in the database for reroute_after (slow behind a commit, a lock, a settlement's WAL)
/// and another actor of the loop is idle, a bet that would wait behind it goes there, or is
/// moved there from the home's queue once that time passes. An account that has placements
/// unanswered stays where they are, so its placements still apply in the order they came.
/// Only when another actor is idle, and only after the home's group was slow: preferring idle
/// actors always broke groups up and cost throughput (docs/benchmarks.md, issue 10).
/// Every member is touched on the loop's thread only.
class placement_router : public std::enable_shared_from_this<placement_router> {
public:
    /// Routes to `actors` (one loop's, at least one), moving bets after `reroute_after` (zero:
    /// never; every bet goes to its account's actor). Call start() once it is owned.
    placement_router(std::vector<std::shared_ptr<placement_actor>> actors,
                     std::chrono::microseconds reroute_after, placement_metrics& metrics);

    /// Sets each actor's slow hook. The hooks hold the router weakly: an actor's timer that
    /// fires after the service is gone finds nothing to call.
    void start();

    placement_router(const placement_router&) = delete;
    placement_router& operator=(const placement_router&) = delete;

    /// Returns the actor that takes the next placement of `account`, and counts that placement
    /// held there until release(account).
    placement_actor& take(std::int64_t account);

    /// Ends the hold of one placement of `account` that take() routed (it was answered).
    void release(std::int64_t account) noexcept;

    /// Returns the number of accounts with placements held (tests).
    std::size_t held_accounts() const noexcept { return held_.size(); }

private:
    void spill(placement_actor& slow);
    placement_actor* idle_other(const placement_actor& busy) const noexcept;

    struct hold {
        placement_actor* actor = nullptr;
        std::size_t count = 0;
    };
    std::vector<std::shared_ptr<placement_actor>> actors_;
    std::chrono::microseconds reroute_after_;
    placement_metrics* metrics_;
    std::unordered_map<std::int64_t, hold> held_;
};

}  // namespace fulltime::actors::detail
