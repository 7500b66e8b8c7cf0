#pragma once
/// One placement actor: a FIFO of place requests and one connection, served by the thread of one
/// event loop. Private to actors/; see placement.hpp for the threading model. No CAF here.

#include "actors/placement_detail.hpp"
#include "actors/reply_sink.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <deque>
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

private:
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
};

}  // namespace fulltime::actors::detail
