// One placement actor. See placement.hpp for the threading model: the actor holds a queue of
// requests; each group of them runs on the io_context, which answers each request's sink and
// then tells the actor the group is done.

#include "actors/placement_actor.hpp"

#include "actors/io_handoff.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/limits.hpp"

#include <caf/all.hpp>

#include <deque>
#include <string>
#include <vector>

namespace fulltime::actors::detail {

namespace asio = boost::asio;

namespace {

using placed_atom = caf::atom_constant<caf::atom("ft_placed")>;

struct pending_placement {
    bets::place_request request;
    std::string fingerprint;
    reply_ptr reply;
    steady::time_point deadline;
};

struct placement_state {
    std::deque<pending_placement> queue;  ///< at most limits::placement_queue_per_actor_max
    bool running = false;   ///< a group is on the io_context; it owns its placements' sinks
    std::uint64_t seq = 0;  ///< identifies the running group
    std::shared_ptr<placement_worker> worker;
    asio::any_io_executor io;
    placement_metrics* metrics = nullptr;
    static inline const char* name = "fulltime.placement";
};

using placement_actor = caf::stateful_actor<placement_state>;

// Runs on the io_context: one group of placements, each answer straight to its session.
asio::awaitable<void> run_group(std::shared_ptr<placement_worker> worker,
                                std::vector<group_item> items, std::vector<reply_ptr> replies,
                                steady::time_point deadline) {
    auto results = co_await execute_group(std::move(worker), std::move(items), deadline);
    FULLTIME_DEBUG_ASSERT(results.size() == replies.size());
    for (std::size_t i = 0; i < replies.size() && i < results.size(); ++i) {
        replies[i]->deliver(std::move(results[i]));
    }
}

// When nothing runs, starts the requests queued so far (at most limits::placement_group_max)
// as one group: natural group commit, since they queued while the previous transaction ran.
// Requests whose deadline passed while queued are answered busy without touching the
// database: their asker has given up.
void start_next(placement_actor* self) {
    auto& st = self->state;
    if (st.running) {
        return;
    }
    std::vector<group_item> items;
    std::vector<reply_ptr> replies;
    steady::time_point deadline = steady::time_point::max();
    const auto now = steady::now();
    while (!st.queue.empty() && items.size() < limits::placement_group_max) {
        pending_placement next = std::move(st.queue.front());
        st.queue.pop_front();
        if (now >= next.deadline) {
            st.metrics->busy_deadline.inc();
            next.reply->deliver(
                busy_result("the placement waited too long: retry with the same idempotency_key"));
            continue;
        }
        deadline = std::min(deadline, next.deadline);
        replies.push_back(std::move(next.reply));
        items.push_back(group_item{std::move(next.request), std::move(next.fingerprint)});
    }
    if (items.empty()) {
        return;
    }
    const std::uint64_t seq = ++st.seq;
    st.running = true;
    run_on_io<placed_atom>(
        self, st.io,
        [worker = st.worker, items = std::move(items), replies = std::move(replies),
         deadline]() mutable {
            return run_group(std::move(worker), std::move(items), std::move(replies), deadline);
        },
        seq);
}

caf::behavior placement_behavior(placement_actor* self, std::shared_ptr<placement_worker> worker,
                                 asio::any_io_executor io, placement_metrics* metrics) {
    self->state.worker = std::move(worker);
    self->state.io = std::move(io);
    self->state.metrics = metrics;
    // Every queued placement gets an answer on the way out. A running group's sinks belong to
    // its coroutine, which answers them when its call ends (the workers are closed on stop).
    self->set_exit_handler([self](caf::exit_msg& msg) {
        auto& st = self->state;
        for (auto& p : st.queue) {
            p.reply->deliver(busy_result(std::string(shutting_down_message)));
        }
        st.queue.clear();
        self->quit(msg.reason);
    });
    return {
        // `deadline` is in steady_clock ticks: when the session asked, plus request_timeout.
        [self](place_atom, bets::place_request& request, std::string& fingerprint, reply_ptr& reply,
               steady::rep deadline) {
            auto& st = self->state;
            if (st.queue.size() >= limits::placement_queue_per_actor_max) {
                st.metrics->busy_queue_full.inc();
                reply->deliver(busy_result(
                    "too many placements are waiting: retry with the same idempotency_key"));
                return;
            }
            st.queue.push_back(pending_placement{std::move(request), std::move(fingerprint),
                                                 std::move(reply),
                                                 steady::time_point(steady::duration(deadline))});
            start_next(self);
        },
        [self](placed_atom, std::uint64_t seq) {
            auto& st = self->state;
            FULLTIME_DEBUG_ASSERT(st.running && seq == st.seq);
            if (!st.running || seq != st.seq) {
                return;
            }
            st.running = false;
            start_next(self);
        },
    };
}

}  // namespace

caf::actor spawn_placement_actor(caf::actor_system& system,
                                 std::shared_ptr<placement_worker> worker, asio::any_io_executor io,
                                 placement_metrics* metrics) {
    return system.spawn(placement_behavior, std::move(worker), std::move(io), metrics);
}

}  // namespace fulltime::actors::detail
