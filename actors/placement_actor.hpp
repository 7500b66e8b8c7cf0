#pragma once
/// One placement actor: a FIFO of place requests and one connection, served by the thread of one
/// event loop. Private to actors/; see placement.hpp for the threading model. No CAF here.

#include "actors/placement_detail.hpp"
#include "actors/reply_sink.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fulltime::actors::detail {

/// Holds one place request on its way through an actor.
struct pending_placement {
    bets::place_request request;
    std::string fingerprint;
    reply_ptr reply;
    steady::time_point submitted;  ///< when the session handed it over
    steady::time_point deadline;   ///< when its asker stops waiting
    steady::time_point queued;     ///< when it entered the actor's queue
};

/// Runs the placements handed to it in groups on its worker's connection. Every member is
/// touched on its executor only (one event loop's thread).
class placement_actor : public std::enable_shared_from_this<placement_actor> {
public:
    /// Creates an actor whose groups run on `worker`, on `executor` (an io_context's executor,
    /// run by one thread), at most `group_max` placements per group.
    placement_actor(boost::asio::any_io_executor executor, std::shared_ptr<placement_worker> worker,
                    std::size_t group_max);

    /// Returns the executor everything of this actor runs on.
    const boost::asio::any_io_executor& executor() const noexcept { return executor_; }

    /// Queues one placement, or answers it busy when the queue is full or the actor stopped.
    /// When nothing runs, a group starts once the handlers already ready on this thread have run
    /// (so that requests read together commit together); nothing waits on a timer. Call on
    /// executor().
    void submit(pending_placement p);

    /// Answers every queued placement busy, takes no more, and releases the idle connection; a
    /// running group answers its own when its call ends. Call on executor().
    void stop();

    /// Calls `hook` (on executor()) when the running group turns slow while placements wait in
    /// the queue behind it. A group turns slow once it has run for `after`
    /// (placement.reroute_after_ms) and for twice as long as this actor's groups lately took
    /// (a moving average): under a steady load whose groups all take long, none is slow, and
    /// groups stay whole. Never when `after` is zero. Call before the first submit.
    void on_slow(std::chrono::microseconds after, std::function<void(placement_actor&)> hook);

    /// Returns true when no group runs and nothing is queued.
    bool idle() const noexcept { return !running_ && queue_.empty(); }

    /// Returns true when the running group is slow at `now` (see on_slow).
    bool slow(steady::time_point now) const noexcept {
        return slow_after_.count() > 0 && running_ && now >= slow_at();
    }

    /// Takes out of the queue, in queue order, every placement whose account has none in the
    /// running group: moved elsewhere, they wait on no lock of this actor's group, and an
    /// account's placements leave together, so their order holds.
    std::vector<pending_placement> take_movable();

    /// Queues placements taken from another actor's queue (take_movable), keeping when they
    /// were first queued, and starts a group as submit() does. Call on executor().
    void adopt(std::vector<pending_placement> moved);

private:
    void schedule();
    steady::time_point slow_at() const noexcept {
        return group_started_ + std::max(slow_after_, 2 * typical_);
    }
    void arm_slow_timer();
    void start_next();
    static boost::asio::awaitable<void> run_group(std::shared_ptr<placement_actor> self,
                                                  std::vector<pending_placement> group);

    boost::asio::any_io_executor executor_;
    std::shared_ptr<placement_worker> worker_;
    std::size_t group_max_;
    std::deque<pending_placement> queue_;  ///< at most limits::placement_queue_per_actor_max
    bool running_ = false;                 ///< a group owns the connection
    bool scheduled_ = false;               ///< a start_next is posted
    bool stopped_ = false;
    steady::time_point group_started_;          ///< when the running group started
    std::uint64_t group_serial_ = 0;            ///< counts the groups started
    std::vector<std::int64_t> group_accounts_;  ///< the running group's accounts
    std::chrono::microseconds slow_after_{0};   ///< 0: no slow hook
    /// A group's run, start to answers, as a moving average of the last few (1/8 weight).
    std::chrono::microseconds typical_{0};
    std::function<void(placement_actor&)> slow_hook_;
    boost::asio::steady_timer slow_timer_;
    bool slow_armed_ = false;        ///< slow_timer_ waits
    std::uint64_t slow_serial_ = 0;  ///< the group it was armed for
};

}  // namespace fulltime::actors::detail
