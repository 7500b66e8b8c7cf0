#include "actors/account_router.hpp"

#include "fulltime/core/assert.hpp"

#include <algorithm>

namespace fulltime::actors::detail {

account_router::account_router(std::size_t actors, clock::duration linger)
    : linger_(linger), held_(actors, 0) {
    FULLTIME_ASSERT(actors > 0);
}

std::size_t account_router::route(std::int64_t account, clock::time_point now) {
    expire(now);
    if (auto it = by_account_.find(account); it != by_account_.end()) {
        ++it->second.unanswered;
        touch(it->second, now);
        return it->second.actor;
    }
    // The least-held actor (the first of equals): accounts that arrive while every actor holds
    // as many take the actors in turn.
    const auto best =
        static_cast<std::size_t>(std::min_element(held_.begin(), held_.end()) - held_.begin());
    ++held_[best];
    order_.push_back(account);
    by_account_.emplace(account, entry{best, 1, now, std::prev(order_.end())});
    return best;
}

void account_router::answered(std::int64_t account, clock::time_point now) {
    auto it = by_account_.find(account);
    FULLTIME_DEBUG_ASSERT(it != by_account_.end() && it->second.unanswered > 0);
    if (it == by_account_.end() || it->second.unanswered == 0) {
        return;
    }
    --it->second.unanswered;
    touch(it->second, now);
}

void account_router::touch(entry& e, clock::time_point now) {
    e.last = now;
    order_.splice(order_.end(), order_, e.order);
}

// Drops the accounts idle for linger_, oldest first. One with unanswered placements stops the
// sweep until it is answered (it then moves to the back): at most a request's deadline.
void account_router::expire(clock::time_point now) {
    while (!order_.empty()) {
        auto it = by_account_.find(order_.front());
        FULLTIME_DEBUG_ASSERT(it != by_account_.end());
        const entry& e = it->second;
        if (e.unanswered > 0 || now - e.last < linger_) {
            return;
        }
        --held_[e.actor];
        by_account_.erase(it);
        order_.pop_front();
    }
}

}  // namespace fulltime::actors::detail
