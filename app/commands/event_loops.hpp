#pragma once
/// The engine's event loops (gateway.io_threads): one io_context and one thread each. Loop 0 is
/// the main loop, run by the thread that calls run_main(); the others get threads of their own.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fulltime::app {

/// Owns the event loops and the threads of loops 1..n-1.
class event_loops {
public:
    /// Creates `n` loops (at least one); no thread starts until start().
    explicit event_loops(std::size_t n);
    /// Stops every loop and joins the threads (finish() with no grace) when finish() was not
    /// called.
    ~event_loops();
    event_loops(const event_loops&) = delete;
    event_loops& operator=(const event_loops&) = delete;

    /// Returns the main loop.
    boost::asio::io_context& main() noexcept { return *loops_.front(); }
    /// Returns every loop, the main one first.
    std::vector<boost::asio::io_context*> all() const;
    /// Returns every loop's executor, the main one first.
    std::vector<boost::asio::any_io_executor> executors() const;

    /// Starts one thread per loop but the main one; each runs its loop until finish().
    void start();

    /// Lets the other loops end once out of work, waits at most `grace` for them, stops those
    /// still running, and joins their threads. Call after the main loop returned.
    void finish(std::chrono::milliseconds grace);

private:
    using guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
    std::vector<std::unique_ptr<boost::asio::io_context>> loops_;
    std::vector<guard> guards_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable ended_;
    std::size_t running_ = 0;  ///< threads whose loop has not returned; guarded by mutex_
};

}  // namespace fulltime::app
