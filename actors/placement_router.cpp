// Which placement actor of one event loop takes a bet: see placement_router.hpp.

#include "actors/placement_router.hpp"

#include "fulltime/core/assert.hpp"
#include "fulltime/core/metrics.hpp"

namespace fulltime::actors::detail {

placement_router::placement_router(std::vector<std::shared_ptr<placement_actor>> actors,
                                   std::chrono::microseconds reroute_after,
                                   placement_metrics& metrics)
    : actors_(std::move(actors)), reroute_after_(reroute_after), metrics_(&metrics) {
    FULLTIME_ASSERT(!actors_.empty());
}

void placement_router::start() {
    if (reroute_after_.count() == 0 || actors_.size() < 2) {
        return;
    }
    for (auto& a : actors_) {
        a->on_slow(reroute_after_, [router = weak_from_this()](placement_actor& slow) {
            if (auto r = router.lock()) {
                r->spill(slow);
            }
        });
    }
}

placement_actor& placement_router::take(std::int64_t account) {
    if (auto it = held_.find(account); it != held_.end()) {
        ++it->second.count;
        return *it->second.actor;
    }
    placement_actor* actor = actors_[static_cast<std::uint64_t>(account) % actors_.size()].get();
    if (actor->slow(steady::now())) {
        if (placement_actor* idle = idle_other(*actor)) {
            actor = idle;
            metrics_->rerouted.inc();
        }
    }
    held_.emplace(account, hold{actor, 1});
    return *actor;
}

void placement_router::release(std::int64_t account) noexcept {
    auto it = held_.find(account);
    FULLTIME_DEBUG_ASSERT(it != held_.end() && it->second.count > 0);
    if (it != held_.end() && --it->second.count == 0) {
        held_.erase(it);
    }
}

// The slow actor's queued placements that can run elsewhere go together to one idle actor, where
// they make one group. With no idle actor they stay: every connection is busy anyway.
void placement_router::spill(placement_actor& slow) {
    placement_actor* to = idle_other(slow);
    if (to == nullptr) {
        return;
    }
    std::vector<pending_placement> moved = slow.take_movable();
    if (moved.empty()) {
        return;
    }
    for (const auto& p : moved) {
        auto it = held_.find(p.request.account_id);
        if (it != held_.end()) {
            it->second.actor = to;
        }
    }
    metrics_->rerouted.inc(moved.size());
    to->adopt(std::move(moved));
}

// Looks from the actor after `busy`, so that two slow actors spill to different idle ones.
placement_actor* placement_router::idle_other(const placement_actor& busy) const noexcept {
    std::size_t from = 0;
    while (from < actors_.size() && actors_[from].get() != &busy) {
        ++from;
    }
    for (std::size_t i = 1; i < actors_.size(); ++i) {
        placement_actor* a = actors_[(from + i) % actors_.size()].get();
        if (a->idle()) {
            return a;
        }
    }
    return nullptr;
}

}  // namespace fulltime::actors::detail
