// The placement actors, the purge actor, and the service that owns them. See placement.hpp for
// the threading model: actors hold queues and promises; every database call runs on the
// io_context, and its result comes back to the actor as a message.

#include "actors/placement_detail.hpp"
#include "fulltime/actors/bridge.hpp"
#include "fulltime/actors/placement.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/core/metrics.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <caf/all.hpp>

#include <atomic>
#include <deque>
#include <vector>

namespace fulltime::actors::detail {

/// Where one placement's answer goes: the waiting session's coroutine. A place request carries
/// its sink to the actor, the actor hands it to the group that runs it, and the group delivers
/// on the io_context, so an answer takes no extra trip through CAF (no bridge actor, no
/// response message). The answer is delivered exactly once, on the asker's executor; a sink
/// dropped unanswered (an actor exiting, a message to an actor already gone) answers busy from
/// its destructor, so no session ever waits for a reply that cannot come.
class reply_sink {
public:
    virtual ~reply_sink() = default;
    virtual void deliver(bets::place_result result) = 0;
};

using reply_ptr = std::shared_ptr<reply_sink>;

}  // namespace fulltime::actors::detail

// Placement messages never leave the process, so they need no serialization: CAF 0.17 accepts
// such types in messages once they are declared unsafe-but-allowed.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::bets::place_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::detail::reply_ptr)

namespace fulltime::actors {

namespace asio = boost::asio;
using detail::steady;

namespace {

using place_atom = caf::atom_constant<caf::atom("ft_place")>;
using placed_atom = caf::atom_constant<caf::atom("ft_placed")>;
using tick_atom = caf::atom_constant<caf::atom("ft_tick")>;
using purge_atom = caf::atom_constant<caf::atom("ft_purge")>;
using purged_atom = caf::atom_constant<caf::atom("ft_purged")>;

const std::string shutting_down =
    "the server is shutting down: retry with the same idempotency_key";

using detail::reply_ptr;

// The sink of one co_await in placement_service::place: holds the coroutine's completion
// handler and keeps its executor busy until the answer is posted to it.
template <class Handler>
class handler_sink final : public detail::reply_sink {
public:
    explicit handler_sink(Handler h)
        : handler_(std::move(h)),
          work_(asio::make_work_guard(asio::get_associated_executor(handler_))) {}

    handler_sink(const handler_sink&) = delete;
    handler_sink& operator=(const handler_sink&) = delete;

    ~handler_sink() override {
        if (!done_) {
            post(detail::busy_result(shutting_down));
        }
    }

    void deliver(bets::place_result result) override {
        if (!done_) {
            post(std::move(result));
        }
    }

private:
    void post(bets::place_result result) {
        done_ = true;
        auto executor = work_.get_executor();
        asio::post(executor, [handler = std::move(handler_), work = std::move(work_),
                              result = std::move(result)]() mutable {
            work.reset();
            std::move(handler)(std::move(result));
        });
    }

    Handler handler_;
    asio::executor_work_guard<asio::associated_executor_t<Handler>> work_;
    bool done_ = false;
};

// --- Placement actor -------------------------------------------------------------------------

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
    std::shared_ptr<detail::placement_worker> worker;
    asio::any_io_executor io;
    placement_metrics* metrics = nullptr;
    static inline const char* name = "fulltime.placement";
};

using placement_actor = caf::stateful_actor<placement_state>;

// Runs on the io_context: one group of placements, each answer straight to its session, then
// word to the actor that the group is done.
asio::awaitable<void> run_and_report(std::shared_ptr<detail::placement_worker> worker,
                                     std::vector<detail::group_item> items,
                                     std::vector<reply_ptr> replies, steady::time_point deadline,
                                     caf::actor reply_to, std::uint64_t seq) {
    auto results = co_await detail::execute_group(std::move(worker), std::move(items), deadline);
    FULLTIME_DEBUG_ASSERT(results.size() == replies.size());
    for (std::size_t i = 0; i < replies.size() && i < results.size(); ++i) {
        replies[i]->deliver(std::move(results[i]));
    }
    caf::anon_send(reply_to, placed_atom::value, seq);
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
    std::vector<detail::group_item> items;
    std::vector<reply_ptr> replies;
    steady::time_point deadline = steady::time_point::max();
    const auto now = steady::now();
    while (!st.queue.empty() && items.size() < limits::placement_group_max) {
        pending_placement next = std::move(st.queue.front());
        st.queue.pop_front();
        if (now >= next.deadline) {
            st.metrics->busy_deadline.inc();
            next.reply->deliver(detail::busy_result(
                "the placement waited too long: retry with the same idempotency_key"));
            continue;
        }
        deadline = std::min(deadline, next.deadline);
        replies.push_back(std::move(next.reply));
        items.push_back(detail::group_item{std::move(next.request), std::move(next.fingerprint)});
    }
    if (items.empty()) {
        return;
    }
    const std::uint64_t seq = ++st.seq;
    st.running = true;
    // The coroutine is created and started on the io thread, never on a CAF worker.
    asio::post(st.io, [worker = st.worker, io = st.io, items = std::move(items),
                       replies = std::move(replies), deadline,
                       reply_to = caf::actor_cast<caf::actor>(self), seq]() mutable {
        asio::co_spawn(io,
                       run_and_report(std::move(worker), std::move(items), std::move(replies),
                                      deadline, std::move(reply_to), seq),
                       asio::detached);
    });
}

caf::behavior placement_behavior(placement_actor* self,
                                 std::shared_ptr<detail::placement_worker> worker,
                                 asio::any_io_executor io, placement_metrics* metrics) {
    self->state.worker = std::move(worker);
    self->state.io = std::move(io);
    self->state.metrics = metrics;
    // Every queued placement gets an answer on the way out. A running group's sinks belong to
    // its coroutine, which answers them when its call ends (the workers are closed on stop).
    self->set_exit_handler([self](caf::exit_msg& msg) {
        auto& st = self->state;
        for (auto& p : st.queue) {
            p.reply->deliver(detail::busy_result(shutting_down));
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
                reply->deliver(detail::busy_result(
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

// --- Purge actor -----------------------------------------------------------------------------

struct purge_state {
    std::shared_ptr<detail::purge_worker> worker;
    asio::any_io_executor io;
    std::chrono::milliseconds interval{0};
    bool running = false;
    bool tick_pending = false;
    std::vector<caf::response_promise> waiting;  ///< purge_now callers of the running round
    static inline const char* name = "fulltime.idempotency_purge";
};

using purge_actor = caf::stateful_actor<purge_state>;

asio::awaitable<void> purge_and_report(std::shared_ptr<detail::purge_worker> worker,
                                       caf::actor reply_to) {
    auto deleted = co_await detail::purge_round(std::move(worker));
    caf::anon_send(reply_to, purged_atom::value, deleted.has_value(), deleted.value_or(0));
}

void start_round(purge_actor* self) {
    auto& st = self->state;
    if (st.running) {
        return;
    }
    st.running = true;
    asio::post(st.io, [worker = st.worker, io = st.io,
                       reply_to = caf::actor_cast<caf::actor>(self)]() mutable {
        asio::co_spawn(io, purge_and_report(std::move(worker), std::move(reply_to)),
                       asio::detached);
    });
}

void schedule_tick(purge_actor* self) {
    auto& st = self->state;
    if (!st.tick_pending) {
        st.tick_pending = true;
        self->delayed_send(self, st.interval, tick_atom::value);
    }
}

caf::behavior purge_behavior(purge_actor* self, std::shared_ptr<detail::purge_worker> worker,
                             asio::any_io_executor io, std::chrono::milliseconds interval) {
    self->state.worker = std::move(worker);
    self->state.io = std::move(io);
    self->state.interval = interval;
    self->set_exit_handler([self](caf::exit_msg& msg) {
        for (auto& p : self->state.waiting) {
            p.deliver(caf::make_error(caf::sec::request_receiver_down));
        }
        self->state.waiting.clear();
        self->quit(msg.reason);
    });
    schedule_tick(self);
    return {
        [self](tick_atom) {
            self->state.tick_pending = false;
            start_round(self);
        },
        [self](purge_atom) -> caf::result<std::int64_t> {
            auto promise = self->make_response_promise();
            self->state.waiting.push_back(promise);
            start_round(self);
            return promise;
        },
        [self](purged_atom, bool ok, std::int64_t deleted) {
            auto& st = self->state;
            st.running = false;
            for (auto& p : st.waiting) {
                if (ok) {
                    p.deliver(deleted);
                } else {
                    p.deliver(caf::make_error(caf::sec::runtime_error));
                }
            }
            st.waiting.clear();
            schedule_tick(self);
        },
    };
}

}  // namespace

// --- Service ---------------------------------------------------------------------------------

struct placement_service::impl {
    caf::actor_system* system = nullptr;
    asio::any_io_executor io;
    std::vector<caf::actor> actors;
    caf::actor purger;
    std::vector<std::shared_ptr<detail::placement_worker>> workers;
    std::shared_ptr<detail::purge_worker> purge_worker;
    /// A placement's answer is due this long after it is asked (and a purge_now's reply).
    std::chrono::milliseconds request_timeout{0};
    placement_metrics* metrics = nullptr;
    bool stopped = false;

    // Runs on the io_context: drops the idle connections and stops further calls.
    void close_workers() {
        for (auto& w : workers) {
            w->closed = true;
            w->conn = db::pooled_connection{};
        }
        purge_worker->closed = true;
    }

    void send_exits() {
        for (auto& a : actors) {
            caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
        }
        caf::anon_send_exit(purger, caf::exit_reason::user_shutdown);
    }
};

placement_service::placement_service(caf::actor_system& system, asio::any_io_executor io,
                                     db::pool& placement, db::pool& background, const config& cfg,
                                     placement_metrics& metrics)
    : impl_(std::make_shared<impl>()) {
    FULLTIME_ASSERT(cfg.placement.actors > 0);
    impl_->system = &system;
    impl_->io = io;
    impl_->request_timeout = std::chrono::milliseconds(cfg.actors.request_timeout_ms);
    impl_->metrics = &metrics;
    // Every placement is answered within request_timeout: a request still queued when it passes is
    // answered busy, and a group's database call is cut at its earliest member's deadline.
    for (std::size_t i = 0; i < cfg.placement.actors; ++i) {
        auto w = std::make_shared<detail::placement_worker>();
        w->pool = &placement;
        w->lock_timeout_ms = cfg.placement.lock_timeout_ms;
        w->lock_retries_max = cfg.placement.lock_retries_max;
        w->query_timeout = std::chrono::milliseconds(cfg.database.query_timeout_ms);
        w->shard_hint = static_cast<std::int32_t>(i);
        w->metrics = &metrics;
        impl_->workers.push_back(w);
        impl_->actors.push_back(system.spawn(placement_behavior, w, io, &metrics));
        asio::co_spawn(io, detail::warm(w), asio::detached);
    }
    auto p = std::make_shared<detail::purge_worker>();
    p->pool = &background;
    p->retention_s = cfg.placement.idempotency_retention_s;
    p->batch_max = cfg.placement.purge_batch_max;
    p->lock_timeout_ms = cfg.placement.lock_timeout_ms;
    p->statement_timeout_ms = cfg.database.statement_timeout_ms;
    p->metrics = &metrics;
    impl_->purge_worker = p;
    impl_->purger = system.spawn(purge_behavior, p, io,
                                 std::chrono::milliseconds(cfg.placement.purge_interval_ms));
}

placement_service::~placement_service() {
    if (!impl_->stopped) {
        impl_->send_exits();
        asio::post(impl_->io, [state = impl_] { state->close_workers(); });
    }
}

asio::awaitable<bets::place_result> placement_service::place(bets::place_request request,
                                                             std::string fingerprint) {
    std::shared_ptr<impl> st = impl_;
    const auto start = steady::now();
    bets::place_result result;
    if (st->stopped) {
        result = detail::busy_result(shutting_down);
    } else {
        // An account's placements go to one actor (by account id). Correctness does not depend
        // on it (the database decides), but it keeps an account's placements out of each
        // other's way: they queue in one mailbox and commit together as one group, instead of
        // several actors' groups waiting on the same balance row lock.
        caf::actor target =
            st->actors[static_cast<std::uint64_t>(request.account_id) % st->actors.size()];
        const auto deadline = (start + st->request_timeout).time_since_epoch().count();
        auto initiation = [&](auto handler) {
            reply_ptr sink = std::make_shared<handler_sink<decltype(handler)>>(std::move(handler));
            // A message to an actor already gone is dropped with its sink, which answers busy.
            caf::anon_send(target, place_atom::value, std::move(request), std::move(fingerprint),
                           std::move(sink), deadline);
        };
        result =
            co_await asio::async_initiate<decltype(asio::use_awaitable), void(bets::place_result)>(
                std::move(initiation), asio::use_awaitable);
    }
    st->metrics->record(
        result, std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - start));
    co_return result;
}

asio::awaitable<std::optional<std::int64_t>> placement_service::purge_now() {
    std::shared_ptr<impl> st = impl_;
    auto reply =
        co_await ask<std::int64_t>(*st->system, st->purger, st->request_timeout, purge_atom::value);
    if (!reply) {
        co_return std::nullopt;
    }
    co_return *reply;
}

std::size_t placement_service::actor_count() const noexcept { return impl_->actors.size(); }

void placement_service::stop() {
    if (impl_->stopped) {
        return;
    }
    impl_->stopped = true;
    impl_->send_exits();
    impl_->close_workers();
}

}  // namespace fulltime::actors
