// One placement actor. See placement.hpp for the threading model: the actor holds a queue of
// requests and runs them in groups on its connection, all on one event loop's thread.

#include "actors/placement_actor.hpp"

#include "fulltime/core/assert.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

std::chrono::microseconds since(steady::time_point from, steady::time_point to) {
    return std::chrono::duration_cast<std::chrono::microseconds>(to - from);
}

}  // namespace

placement_actor::placement_actor(asio::any_io_executor executor,
                                 std::shared_ptr<placement_worker> worker, std::size_t group_max)
    : executor_(std::move(executor)), worker_(std::move(worker)), group_max_(group_max) {
    FULLTIME_ASSERT(group_max_ > 0 && group_max_ <= limits::placement_group_max);
}

void placement_actor::submit(pending_placement p) {
    placement_metrics& m = *worker_->metrics;
    if (stopped_) {
        p.reply->deliver(busy_result(std::string(shutting_down_message)));
        return;
    }
    if (queue_.size() >= limits::placement_queue_per_actor_max) {
        m.busy_queue_full.inc();
        p.reply->deliver(
            busy_result("too many placements are waiting: retry with the same idempotency_key"));
        return;
    }
    p.queued = steady::now();
    m.stage(placement_stage::handoff).record(since(p.submitted, p.queued));
    queue_.push_back(std::move(p));
    m.queued.add(1);
    if (!running_ && !scheduled_) {
        // Posted, not run now: the frames already read on this thread queue their placements
        // first, and commit with this one.
        scheduled_ = true;
        asio::post(executor_, [self = shared_from_this()] {
            self->scheduled_ = false;
            self->start_next();
        });
    }
}

void placement_actor::stop() {
    stopped_ = true;
    for (auto& p : queue_) {
        p.reply->deliver(busy_result(std::string(shutting_down_message)));
    }
    worker_->metrics->queued.add(-static_cast<std::int64_t>(queue_.size()));
    queue_.clear();
    worker_->closed = true;
    worker_->conn = db::pooled_connection{};
    if (worker_->open_pause != nullptr) {
        worker_->open_pause->cancel();
    }
}

// When nothing runs, starts the requests queued so far (at most group_max_) as one group:
// natural group commit, since they queued while the previous transaction ran. Requests whose
// deadline passed while queued are answered busy without touching the database: their asker has
// given up.
void placement_actor::start_next() {
    if (running_ || stopped_) {
        return;
    }
    placement_metrics& m = *worker_->metrics;
    std::vector<pending_placement> group;
    const auto now = steady::now();
    while (!queue_.empty() && group.size() < group_max_) {
        pending_placement next = std::move(queue_.front());
        queue_.pop_front();
        m.queued.add(-1);
        if (now >= next.deadline) {
            m.busy_deadline.inc();
            next.reply->deliver(
                busy_result("the placement waited too long: retry with the same idempotency_key"));
            continue;
        }
        m.stage(placement_stage::queue).record(since(next.queued, now));
        m.queue_recent.record(since(next.queued, now));
        group.push_back(std::move(next));
    }
    if (group.empty()) {
        return;
    }
    running_ = true;
    asio::co_spawn(executor_, run_group(shared_from_this(), std::move(group)), asio::detached);
}

asio::awaitable<void> placement_actor::run_group(std::shared_ptr<placement_actor> self,
                                                 std::vector<pending_placement> group) {
    const auto started = steady::now();
    steady::time_point deadline = steady::time_point::max();
    std::vector<group_item> items;
    items.reserve(group.size());
    for (auto& p : group) {
        deadline = std::min(deadline, p.deadline);
        items.push_back(group_item{std::move(p.request), std::move(p.fingerprint)});
    }
    group_answer answer = co_await execute_group(self->worker_, std::move(items), deadline);
    FULLTIME_DEBUG_ASSERT(answer.results.size() == group.size());
    placement_metrics& m = *self->worker_->metrics;
    if (answer.sent != steady::time_point{}) {
        for (std::size_t i = 0; i < group.size(); ++i) {
            m.stage(placement_stage::group).record(since(started, answer.sent));
            m.stage(placement_stage::database).record(since(answer.sent, answer.back));
            m.database_recent.record(since(answer.sent, answer.back));
        }
    }
    for (std::size_t i = 0; i < group.size() && i < answer.results.size(); ++i) {
        group[i].reply->deliver(std::move(answer.results[i]));
    }
    self->running_ = false;
    self->start_next();
}

}  // namespace fulltime::actors::detail
