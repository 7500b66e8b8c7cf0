#pragma once
/// Which placement actor of one event loop serves an account. Private to actors/; pure logic
/// (no executor, no CAF), touched on its loop's thread only.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace fulltime::actors::detail {

/// Keeps an account on one actor while it is active, and gives a new account the actor that
/// holds the fewest active accounts. An account is active while it has unanswered placements and
/// for `linger` after its last one: its placements queue on one actor, commit together and apply
/// in the order sent, instead of several actors' groups waiting on its balance row lock. Past
/// that it may move, at no cost: nothing of it is queued.
///
/// A fixed map (the account id modulo the loop's actors) left actors idle while others queued
/// whenever a loop's active accounts were few: the ids of one loop's connections alias with the
/// round robin that spreads connections over the loops (sequential ids, two loops: one loop's
/// accounts all odd), and a handful of ids fall unevenly on a handful of actors anyway.
class account_router {
public:
    using clock = std::chrono::steady_clock;

    /// A router over `actors` actors (at least one).
    account_router(std::size_t actors, clock::duration linger);

    /// Returns the actor for one more placement of `account` and counts it unanswered until
    /// answered() is called for it.
    std::size_t route(std::int64_t account, clock::time_point now);

    /// Notes that one placement of `account` routed here was answered.
    void answered(std::int64_t account, clock::time_point now);

    /// The accounts held (active), in all and on one actor.
    std::size_t accounts() const noexcept { return by_account_.size(); }
    std::size_t accounts_on(std::size_t actor) const noexcept { return held_.at(actor); }

private:
    struct entry {
        std::size_t actor = 0;
        std::size_t unanswered = 0;
        clock::time_point last;                   ///< last routed or answered
        std::list<std::int64_t>::iterator order;  ///< its place in order_
    };

    void touch(entry& e, clock::time_point now);
    void expire(clock::time_point now);

    clock::duration linger_;
    std::vector<std::size_t> held_;  ///< active accounts per actor
    std::unordered_map<std::int64_t, entry> by_account_;
    std::list<std::int64_t> order_;  ///< accounts, least recently touched first
};

}  // namespace fulltime::actors::detail
