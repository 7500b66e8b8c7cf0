#include "app/commands/event_loops.hpp"

#include "fulltime/core/assert.hpp"
#include "fulltime/core/log.hpp"

#include <exception>
#include <string>

namespace fulltime::app {

namespace asio = boost::asio;

event_loops::event_loops(std::size_t n) {
    FULLTIME_ASSERT(n > 0);
    for (std::size_t i = 0; i < n; ++i) {
        // A concurrency hint of 1: each loop is run by exactly one thread, so Asio can skip
        // the locking a shared loop needs.
        loops_.push_back(std::make_unique<asio::io_context>(1));
    }
}

event_loops::~event_loops() { finish(std::chrono::milliseconds(0)); }

std::vector<asio::io_context*> event_loops::all() const {
    std::vector<asio::io_context*> out;
    for (const auto& l : loops_) {
        out.push_back(l.get());
    }
    return out;
}

std::vector<asio::any_io_executor> event_loops::executors() const {
    std::vector<asio::any_io_executor> out;
    for (const auto& l : loops_) {
        out.emplace_back(l->get_executor());
    }
    return out;
}

void event_loops::start() {
    FULLTIME_ASSERT(threads_.empty());
    for (std::size_t i = 1; i < loops_.size(); ++i) {
        guards_.emplace_back(loops_[i]->get_executor());
    }
    running_ = loops_.size() - 1;
    for (std::size_t i = 1; i < loops_.size(); ++i) {
        threads_.emplace_back([this, loop = loops_[i].get(), i] {
            try {
                loop->run();
            } catch (const std::exception& e) {
                log::error("event loop " + std::to_string(i) + ": " + e.what());
            }
            std::lock_guard lock(mutex_);
            --running_;
            ended_.notify_all();
        });
    }
}

void event_loops::finish(std::chrono::milliseconds grace) {
    if (threads_.empty()) {
        return;
    }
    for (auto& g : guards_) {
        g.reset();
    }
    {
        std::unique_lock lock(mutex_);
        if (!ended_.wait_for(lock, grace, [this] { return running_ == 0; })) {
            log::warn("event loops still busy after the shutdown grace: stopping them");
        }
    }
    for (std::size_t i = 1; i < loops_.size(); ++i) {
        loops_[i]->stop();
    }
    for (auto& t : threads_) {
        t.join();
    }
    threads_.clear();
    guards_.clear();
}

}  // namespace fulltime::app
