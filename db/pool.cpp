#include "fulltime/db/pool.hpp"

#include "db/detail_error.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <list>

namespace fulltime::db {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace detail {

struct pool_state;

/// One acquire waiting in the queue. It lives in the acquiring coroutine's frame; whoever ends
/// the wait (a returned or newly opened connection, a failed connect, close) removes it from
/// the queue, fills `granted` or `failed` and cancels its timer to wake it. The timer's own
/// expiry is the wait's deadline.
struct pool_waiter {
    pool_waiter(pool_state& owner, const asio::any_io_executor& executor)
        : owner_(owner), timer_(executor) {}
    ~pool_waiter();
    pool_waiter(const pool_waiter&) = delete;
    pool_waiter& operator=(const pool_waiter&) = delete;

    pool_state& owner_;
    asio::steady_timer timer_;
    std::unique_ptr<connection> granted_;  ///< counted in in_use_ from the moment it is set
    std::optional<failure> failed_;
    std::list<pool_waiter*>::iterator position_;
    bool queued_ = false;
};

/// The state of one pool, shared by the pool, its lent connections, its waiters and its
/// connect coroutines, so that any of them may outlive the others.
///
/// Everything but the atomics is touched only on `executor_` (a pool is single-executor);
/// the atomics mirror the gauges for stats() from other threads.
struct pool_state : std::enable_shared_from_this<pool_state> {
    pool_state(asio::any_io_executor executor, std::string name, std::string conninfo,
               pool_settings settings, std::chrono::milliseconds connect_timeout,
               std::chrono::milliseconds query_timeout, bool prepared_statements,
               session_options session)
        : executor_(std::move(executor)),
          name_(std::move(name)),
          conninfo_(std::move(conninfo)),
          settings_(settings),
          connect_timeout_(connect_timeout),
          query_timeout_(query_timeout),
          prepared_statements_(prepared_statements),
          session_(std::move(session)) {}

    /// Lends a connection, waiting in the queue if none is free.
    static asio::awaitable<outcome<pooled_connection>> acquire(std::shared_ptr<pool_state> self,
                                                               std::chrono::milliseconds wait);

    /// Opens one connection and hands it to the oldest waiter or keeps it idle; a failure fails
    /// the oldest waiter, so no waiter is left waiting on a connect that will not come.
    static asio::awaitable<void> open_one(std::shared_ptr<pool_state> self);

    /// Takes a lent connection back; discards it when broken or left inside a transaction.
    void give_back(std::unique_ptr<connection> conn) noexcept {
        FULLTIME_DEBUG_ASSERT(in_use_ > 0);
        --in_use_;
        if (closed_) {
            conn.reset();
        } else if (conn->broken() || !conn->idle()) {
            // Closing a connection left inside a transaction makes the server roll it back.
            broken_total_.fetch_add(1, std::memory_order_relaxed);
            conn.reset();
        } else {
            idle_.push_back(std::move(conn));
        }
        dispatch();
    }

    /// Serves waiters from idle connections, oldest waiter first, and starts connects for the
    /// waiters that neither an idle connection nor a connect already under way will serve.
    void dispatch() noexcept {
        while (!waiters_.empty()) {
            if (auto conn = take_idle()) {
                pool_waiter* w = pop_oldest();
                w->granted_ = std::move(conn);
                ++in_use_;
                w->timer_.cancel();
                continue;
            }
            const std::size_t total = in_use_ + idle_.size() + opening_;
            if (waiters_.size() > opening_ && total < settings_.size_max && start_open()) {
                continue;
            }
            break;
        }
        FULLTIME_DEBUG_ASSERT(waiters_.empty() || idle_.empty());
        FULLTIME_DEBUG_ASSERT(in_use_ + idle_.size() + opening_ <= settings_.size_max);
        publish();
    }

    /// Pops the most recently returned idle connection that is still alive; dead ones (their
    /// backend was terminated or the server restarted while they sat idle) are discarded.
    std::unique_ptr<connection> take_idle() noexcept {
        while (!idle_.empty()) {
            auto conn = std::move(idle_.back());
            idle_.pop_back();
            if (conn->check_alive()) {
                return conn;
            }
            broken_total_.fetch_add(1, std::memory_order_relaxed);
        }
        return nullptr;
    }

    /// Starts one connect; returns false if it could not be started.
    bool start_open() noexcept {
        // Counted before it starts, and started from a posted handler rather than inline:
        // co_spawn runs a coroutine at once when already on its executor, and a connect that
        // fails without suspending (no such socket) would then re-enter dispatch() from inside
        // dispatch(), once per waiter.
        ++opening_;
        try {
            asio::post(executor_, [self = shared_from_this()] {
                try {
                    asio::co_spawn(self->executor_, open_one(self), asio::detached);
                } catch (...) {
                    --self->opening_;
                    self->fail_oldest(make_failure(errc::connect_failed, "out of memory"));
                    self->dispatch();
                }
            });
        } catch (...) {
            --opening_;
            return false;
        }
        return true;
    }

    pool_waiter* pop_oldest() noexcept {
        pool_waiter* w = waiters_.front();
        waiters_.pop_front();
        w->queued_ = false;
        return w;
    }

    void fail_oldest(failure f) {
        if (waiters_.empty()) {
            return;
        }
        pool_waiter* w = pop_oldest();
        w->failed_ = std::move(f);
        w->timer_.cancel();
    }

    void close() noexcept {
        closed_ = true;
        while (!waiters_.empty()) {
            fail_oldest(make_failure(errc::pool_closed, "pool " + name_ + " is closed"));
        }
        idle_.clear();
        publish();
    }

    // Counts one connection lent after waiting `waited` (zero when one was idle).
    pooled_connection lend(std::unique_ptr<connection> conn, clock_type::duration waited = {}) {
        acquired_total_.fetch_add(1, std::memory_order_relaxed);
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(waited);
        acquire_waits_.record(us);
        acquire_wait_us_total_.fetch_add(static_cast<std::uint64_t>(us.count()),
                                         std::memory_order_relaxed);
        return pooled_connection(shared_from_this(), std::move(conn));
    }

    void record_wait(clock_type::duration waited) noexcept {
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(waited).count();
        std::int64_t seen = wait_us_max_.load(std::memory_order_relaxed);
        while (us > seen &&
               !wait_us_max_.compare_exchange_weak(seen, us, std::memory_order_relaxed)) {
        }
    }

    void publish() noexcept {
        in_use_gauge_.store(in_use_, std::memory_order_relaxed);
        idle_gauge_.store(idle_.size(), std::memory_order_relaxed);
        waiting_gauge_.store(waiters_.size(), std::memory_order_relaxed);
        opening_gauge_.store(opening_, std::memory_order_relaxed);
    }

    const asio::any_io_executor executor_;
    const std::string name_;
    const std::string conninfo_;
    const pool_settings settings_;
    const std::chrono::milliseconds connect_timeout_;
    const std::chrono::milliseconds query_timeout_;
    const bool prepared_statements_;
    const session_options session_;

    // Touched only on executor_.
    std::vector<std::unique_ptr<connection>> idle_;
    std::list<pool_waiter*> waiters_;  ///< oldest first; at most settings_.queue_max
    std::size_t in_use_ = 0;
    std::size_t opening_ = 0;
    bool closed_ = false;

    // Read by stats() from any thread.
    std::atomic<std::size_t> in_use_gauge_{0};
    std::atomic<std::size_t> idle_gauge_{0};
    std::atomic<std::size_t> waiting_gauge_{0};
    std::atomic<std::size_t> opening_gauge_{0};
    std::atomic<std::uint64_t> acquired_total_{0};
    std::atomic<std::uint64_t> timeouts_total_{0};
    std::atomic<std::uint64_t> rejected_total_{0};
    std::atomic<std::uint64_t> broken_total_{0};
    std::atomic<std::uint64_t> connect_failures_total_{0};
    std::atomic<std::int64_t> wait_us_max_{0};
    std::atomic<std::uint64_t> acquire_wait_us_total_{0};
    metrics::latency_window acquire_waits_;  ///< every lend's wait, for quantiles
};

pool_waiter::~pool_waiter() {
    // Reached with the waiter still queued or holding a connection only when its coroutine is
    // destroyed mid-wait (its io_context is being torn down).
    if (queued_) {
        owner_.waiters_.erase(position_);
        queued_ = false;
        owner_.publish();
    }
    if (granted_) {
        owner_.give_back(std::move(granted_));
    }
}

asio::awaitable<outcome<pooled_connection>> pool_state::acquire(std::shared_ptr<pool_state> self,
                                                                std::chrono::milliseconds wait) {
    pool_state& s = *self;
    // The pool is single-threaded: callers run on its executor or on a strand of the same
    // single-threaded io_context (the gateway's sessions), so compare execution contexts.
    FULLTIME_DEBUG_ASSERT(
        &asio::query(co_await asio::this_coro::executor, asio::execution::context) ==
        &asio::query(s.executor_, asio::execution::context));
    if (s.closed_) {
        co_return make_failure(errc::pool_closed, "pool " + s.name_ + " is closed");
    }
    if (s.waiters_.empty()) {
        if (auto conn = s.take_idle()) {
            ++s.in_use_;
            s.publish();
            co_return s.lend(std::move(conn));
        }
    }
    if (s.waiters_.size() >= s.settings_.queue_max) {
        s.rejected_total_.fetch_add(1, std::memory_order_relaxed);
        co_return make_failure(errc::pool_queue_full, "pool " + s.name_ + ": " +
                                                          std::to_string(s.waiters_.size()) +
                                                          " waiters already queued");
    }

    const auto started = clock_type::now();
    pool_waiter w{s, s.executor_};
    w.timer_.expires_after(wait);
    w.position_ = s.waiters_.insert(s.waiters_.end(), &w);
    w.queued_ = true;
    s.dispatch();
    // dispatch() may already have served this waiter; a cancel before the wait starts would be
    // lost, so only wait when it has not.
    if (!w.granted_ && !w.failed_) {
        co_await w.timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    const auto waited = clock_type::now() - started;
    s.record_wait(waited);

    // A grant wins even when the timer expired at the same moment: the connection is ours.
    if (w.granted_) {
        co_return s.lend(std::move(w.granted_), waited);
    }
    if (w.failed_) {
        co_return std::move(*w.failed_);
    }
    if (w.queued_) {
        s.waiters_.erase(w.position_);
        w.queued_ = false;
        s.publish();
    }
    s.timeouts_total_.fetch_add(1, std::memory_order_relaxed);
    co_return make_failure(errc::pool_timeout, "pool " + s.name_ + ": no connection within " +
                                                   std::to_string(wait.count()) + " ms");
}

asio::awaitable<void> pool_state::open_one(std::shared_ptr<pool_state> self) {
    pool_state& s = *self;
    auto opened = co_await connection::open(s.executor_, s.conninfo_, s.connect_timeout_,
                                            s.query_timeout_, s.prepared_statements_, s.session_);
    FULLTIME_DEBUG_ASSERT(s.opening_ > 0);
    --s.opening_;
    if (!opened) {
        s.connect_failures_total_.fetch_add(1, std::memory_order_relaxed);
        s.fail_oldest(std::move(opened).error());
    } else if (!s.closed_) {
        s.idle_.push_back(std::move(*opened));
    }
    s.dispatch();
}

}  // namespace detail

// --- pooled_connection --------------------------------------------------------------------------

pooled_connection::pooled_connection(std::shared_ptr<detail::pool_state> owner,
                                     std::unique_ptr<connection> c)
    : owner_(std::move(owner)), conn_(std::move(c)) {}

pooled_connection::pooled_connection(pooled_connection&& other) noexcept
    : owner_(std::move(other.owner_)), conn_(std::move(other.conn_)) {}

pooled_connection& pooled_connection::operator=(pooled_connection&& other) noexcept {
    if (this != &other) {
        release();
        owner_ = std::move(other.owner_);
        conn_ = std::move(other.conn_);
    }
    return *this;
}

pooled_connection::~pooled_connection() { release(); }

void pooled_connection::release() noexcept {
    if (conn_ && owner_) {
        owner_->give_back(std::move(conn_));
    }
    conn_.reset();
    owner_.reset();
}

// --- pool
// -----------------------------------------------------------------------------------------

pool::pool(asio::any_io_executor executor, std::string name, std::string conninfo,
           pool_settings settings, std::chrono::milliseconds connect_timeout,
           std::chrono::milliseconds query_timeout, bool prepared_statements,
           session_options session)
    : state_(std::make_shared<detail::pool_state>(
          std::move(executor), std::move(name), std::move(conninfo), settings, connect_timeout,
          query_timeout, prepared_statements, std::move(session))) {
    FULLTIME_ASSERT(settings.size_max > 0 && settings.size_max <= limits::pool_size_max);
    FULLTIME_ASSERT(settings.queue_max <= limits::pool_queue_max);
    FULLTIME_ASSERT(settings.wait_ms_max >= 0 && settings.wait_ms_max <= limits::timeout_ms_max);
}

pool::~pool() { state_->close(); }

asio::awaitable<outcome<pooled_connection>> pool::acquire() {
    // Not a coroutine itself: the returned coroutine holds the shared state, not `this`.
    return detail::pool_state::acquire(state_,
                                       std::chrono::milliseconds{state_->settings_.wait_ms_max});
}

asio::awaitable<outcome<pooled_connection>> pool::acquire(std::chrono::milliseconds wait) {
    return detail::pool_state::acquire(state_, wait);
}

pool_stats pool::stats() const {
    const detail::pool_state& s = *state_;
    pool_stats out;
    out.name = s.name_;
    out.size_max = s.settings_.size_max;
    out.in_use = s.in_use_gauge_.load(std::memory_order_relaxed);
    out.idle = s.idle_gauge_.load(std::memory_order_relaxed);
    out.waiting = s.waiting_gauge_.load(std::memory_order_relaxed);
    out.opening = s.opening_gauge_.load(std::memory_order_relaxed);
    out.acquired_total = s.acquired_total_.load(std::memory_order_relaxed);
    out.timeouts_total = s.timeouts_total_.load(std::memory_order_relaxed);
    out.rejected_total = s.rejected_total_.load(std::memory_order_relaxed);
    out.broken_total = s.broken_total_.load(std::memory_order_relaxed);
    out.connect_failures_total = s.connect_failures_total_.load(std::memory_order_relaxed);
    out.wait_us_max = s.wait_us_max_.load(std::memory_order_relaxed);
    out.acquire_wait_us_total = s.acquire_wait_us_total_.load(std::memory_order_relaxed);
    out.acquire_waits = s.acquire_waits_.read();
    return out;
}

const std::string& pool::name() const noexcept { return state_->name_; }

void pool::close() {
    asio::dispatch(state_->executor_, [state = state_] { state->close(); });
}

// --- pools
// ----------------------------------------------------------------------------------------

pools pools::make(std::span<const asio::any_io_executor> threads, const database_settings& settings,
                  const std::string& primary_conninfo, const std::string& standby_conninfo,
                  const std::string& placement_commit) {
    FULLTIME_ASSERT(!threads.empty());
    const std::chrono::milliseconds connect_timeout{settings.connect_timeout_ms};
    const std::chrono::milliseconds query_timeout{settings.query_timeout_ms};
    const bool prepared = settings.prepared_statements;
    // Every session names its pool in pg_stat_activity and, unless a bouncer refuses startup
    // options (docs/config.md), carries the engine's bounds: no statement runs longer than
    // statement_timeout_ms unless its transaction says so, and no session of the engine can hold
    // a transaction open while idle (and with it vacuum and the settlement fence) for longer than
    // idle_in_transaction_timeout_ms.
    const auto session = [&settings](const char* pool_name, std::string synchronous_commit = {}) {
        session_options s;
        s.application_name = std::string("fulltime-") + pool_name;
        if (settings.session_timeouts) {
            s.statement_timeout_ms = settings.statement_timeout_ms;
            s.idle_in_transaction_timeout_ms = settings.idle_in_transaction_timeout_ms;
            s.jit = false;  // session_options::jit says why
            s.synchronous_commit = std::move(synchronous_commit);
        }
        return s;
    };
    pools out;
    // size_max split as evenly as it goes: thread i gets one more while the remainder lasts.
    // Placement actors are spread the same way (i % threads), so each thread's pool holds
    // at least its actors' connections while placement.actors <= size_max.
    const std::size_t n = threads.size();
    for (std::size_t i = 0; i < n; ++i) {
        pool_settings share = settings.placement;
        share.size_max = std::max<std::size_t>(
            1, settings.placement.size_max / n + (i < settings.placement.size_max % n ? 1 : 0));
        out.placement.push_back(std::make_unique<pool>(
            threads[i], "placement", primary_conninfo, share, connect_timeout, query_timeout,
            prepared, session("placement", placement_commit)));
    }
    const asio::any_io_executor& main = threads[0];
    out.settlement =
        std::make_unique<pool>(main, "settlement", primary_conninfo, settings.settlement,
                               connect_timeout, query_timeout, prepared, session("settlement"));
    out.read = std::make_unique<pool>(main, "read", primary_conninfo, settings.read,
                                      connect_timeout, query_timeout, prepared, session("read"));
    // Read-only sessions on a standby: the statements are the read pool's; a standby refuses
    // writes on its own.
    if (!standby_conninfo.empty()) {
        out.standby =
            std::make_unique<pool>(main, "standby", standby_conninfo, settings.standby,
                                   connect_timeout, query_timeout, prepared, session("standby"));
    }
    out.background =
        std::make_unique<pool>(main, "background", primary_conninfo, settings.background,
                               connect_timeout, query_timeout, prepared, session("background"));
    return out;
}

std::vector<pool_stats> pools::stats() const {
    std::vector<pool_stats> out;
    pool_stats sum;
    sum.name = "placement";
    for (const auto& p : placement) {
        const pool_stats s = p->stats();
        sum.size_max += s.size_max;
        sum.in_use += s.in_use;
        sum.idle += s.idle;
        sum.waiting += s.waiting;
        sum.opening += s.opening;
        sum.acquired_total += s.acquired_total;
        sum.timeouts_total += s.timeouts_total;
        sum.rejected_total += s.rejected_total;
        sum.broken_total += s.broken_total;
        sum.connect_failures_total += s.connect_failures_total;
        sum.wait_us_max = std::max(sum.wait_us_max, s.wait_us_max);
        sum.acquire_wait_us_total += s.acquire_wait_us_total;
        for (std::size_t i = 0; i < s.acquire_waits.size(); ++i) {
            sum.acquire_waits[i] += s.acquire_waits[i];
        }
    }
    out.push_back(std::move(sum));
    for (const pool* p : {settlement.get(), read.get(), standby.get(), background.get()}) {
        if (p != nullptr) {
            out.push_back(p->stats());
        }
    }
    return out;
}

void pools::close() {
    for (auto& p : placement) {
        p->close();
    }
    for (pool* p : {settlement.get(), read.get(), standby.get(), background.get()}) {
        if (p != nullptr) {
            p->close();
        }
    }
}

}  // namespace fulltime::db
