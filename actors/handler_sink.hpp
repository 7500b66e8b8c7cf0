#pragma once
/// The reply sink of one co_await in placement_service::place. Private to actors/.

#include "actors/placement_detail.hpp"
#include "actors/reply_sink.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <string>
#include <utility>

namespace fulltime::actors::detail {

/// Holds the coroutine's completion handler (signature void(place_result, time_point answered))
/// and keeps its executor busy until the answer is posted to it; answers busy from its destructor
/// when dropped unanswered.
template <class Handler>
class handler_sink final : public reply_sink {
public:
    /// Takes the completion handler of the co_await.
    explicit handler_sink(Handler h)
        : handler_(std::move(h)),
          work_(boost::asio::make_work_guard(boost::asio::get_associated_executor(handler_))) {}

    handler_sink(const handler_sink&) = delete;
    handler_sink& operator=(const handler_sink&) = delete;

    ~handler_sink() override {
        if (!done_) {
            post(busy_result(std::string(shutting_down_message)));
        }
    }

    /// Posts `result` to the handler's executor, unless an answer was already posted.
    void deliver(bets::place_result result) override {
        if (!done_) {
            post(std::move(result));
        }
    }

private:
    void post(bets::place_result result) {
        done_ = true;
        auto executor = work_.get_executor();
        boost::asio::post(executor,
                          [handler = std::move(handler_), work = std::move(work_),
                           result = std::move(result), answered = steady::now()]() mutable {
                              work.reset();
                              std::move(handler)(std::move(result), answered);
                          });
    }

    Handler handler_;
    boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> work_;
    bool done_ = false;
};

}  // namespace fulltime::actors::detail
