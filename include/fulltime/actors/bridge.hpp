#pragma once
/// The bridge between Asio coroutines (the gateway) and CAF actors (the coordination layer):
/// a coroutine sends a request to an actor and co_awaits its reply, with a deadline, without
/// blocking any thread.
///
/// Include this only in translation units that talk to actors: it pulls in CAF's headers.

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/expected.hpp>

#include <chrono>
#include <memory>
#include <utility>

namespace fulltime::actors {

namespace detail {

// Holds the coroutine's completion handler and keeps its executor busy until the reply comes,
// so that io_context::run() does not return while a request is outstanding. Completion always
// happens on the coroutine's executor, never on the CAF worker thread that got the reply.
template <class Handler, class R>
class reply_slot {
public:
    explicit reply_slot(Handler h)
        : handler_(std::move(h)),
          work_(boost::asio::make_work_guard(boost::asio::get_associated_executor(handler_))) {}

    void complete(caf::expected<R> value) {
        auto executor = work_.get_executor();
        boost::asio::post(executor, [self = std::move(self_), v = std::move(value)]() mutable {
            auto handler = std::move(self->handler_);
            self->work_.reset();
            std::move(handler)(std::move(v));
        });
    }

    // Set once, right after construction: the slot owns itself until completion.
    std::shared_ptr<reply_slot> self_;

private:
    Handler handler_;
    boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> work_;
};

}  // namespace detail

/// Sends `args...` to `target` as a request and returns its reply of type R, or an error:
/// `caf::sec::request_timeout` after `timeout`, the actor's own error, or
/// `caf::sec::request_receiver_down` when the actor is gone. Must be awaited from a coroutine
/// running on an Asio executor; the reply resumes it on that executor.
///
/// Each call spawns a short-lived CAF actor that issues the request and lives until the reply
/// (CAF keeps an actor alive while it awaits a response), so no CAF thread ever blocks.
template <class R, class... Ts>
boost::asio::awaitable<caf::expected<R>> ask(caf::actor_system& system, caf::actor target,
                                             std::chrono::milliseconds timeout, Ts... args) {
    // The initiation runs before the coroutine suspends; the references it captures outlive it.
    auto initiation = [&system, &target, &timeout, &args...](auto handler) {
        using handler_type = decltype(handler);
        auto slot = std::make_shared<detail::reply_slot<handler_type, R>>(std::move(handler));
        slot->self_ = slot;
        auto* raw = slot.get();
        slot.reset();
        system.spawn([raw, target, timeout, args...](caf::event_based_actor* self) {
            self->request(target, timeout, args...)
                .then([raw](R& reply) { raw->complete(std::move(reply)); },
                      [raw](caf::error& err) { raw->complete(std::move(err)); });
        });
    };
    co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                                   void(caf::expected<R>)>(
        std::move(initiation), boost::asio::use_awaitable);
}

}  // namespace fulltime::actors
