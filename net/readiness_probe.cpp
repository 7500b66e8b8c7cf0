#include "net/readiness_probe.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/db/error.hpp"
#include "fulltime/db/migrations.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace fulltime::net::detail {

namespace asio = boost::asio;

readiness_probe::readiness_probe(asio::any_io_executor executor, std::string conninfo,
                                 const database_settings& settings,
                                 std::vector<resources::migration_source> migrations)
    : executor_(std::move(executor)),
      conninfo_(std::move(conninfo)),
      connect_timeout_(std::min(settings.connect_timeout_ms, limits::readiness_timeout_ms)),
      query_timeout_(std::min(settings.query_timeout_ms, limits::readiness_timeout_ms)),
      migrations_(std::move(migrations)),
      timer_(executor_) {
    session_.application_name = "fulltime-readiness";
    if (settings.session_timeouts) {
        session_.statement_timeout_ms = limits::readiness_timeout_ms;
        session_.idle_in_transaction_timeout_ms = settings.idle_in_transaction_timeout_ms;
        session_.jit = false;
    }
}

readiness readiness_probe::current(clock::time_point now) const {
    std::lock_guard lock(mutex_);
    const auto stale_after =
        std::chrono::milliseconds(limits::readiness_interval_ms + limits::readiness_timeout_ms);
    if (!newest_ || now - newest_at_ > stale_after) {
        return readiness::unreachable;
    }
    return *newest_;
}

asio::awaitable<void> readiness_probe::run() {
    while (!stopped_) {
        const readiness r = co_await check();
        {
            std::lock_guard lock(mutex_);
            newest_ = r;
            newest_at_ = clock::now();
        }
        if (stopped_) {
            break;
        }
        timer_.expires_after(std::chrono::milliseconds(limits::readiness_interval_ms));
        co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    connection_.reset();
}

void readiness_probe::stop() {
    asio::post(executor_, [self = shared_from_this()] {
        self->stopped_ = true;
        self->timer_.cancel();
    });
}

asio::awaitable<readiness> readiness_probe::check() {
    if (connection_ && connection_->broken()) {
        connection_.reset();
    }
    if (!connection_) {
        auto opened = co_await db::connection::open(executor_, conninfo_, connect_timeout_,
                                                    query_timeout_, false, session_);
        if (!opened) {
            record(readiness::unreachable, db::describe(opened.error()));
            co_return readiness::unreachable;
        }
        connection_ = std::move(*opened);
    }
    auto migrated = co_await db::is_migrated(*connection_, migrations_);
    if (!migrated) {
        record(readiness::unreachable, db::describe(migrated.error()));
        co_return readiness::unreachable;
    }
    const readiness r = *migrated ? readiness::ready : readiness::pending;
    record(r, {});
    co_return r;
}

// One line per change of the finding, not one per check (nor, as before the checks were
// cached, one per probe).
void readiness_probe::record(readiness r, const std::string& why) {
    if (logged_ == r) {
        return;
    }
    logged_ = r;
    switch (r) {
        case readiness::ready:
            log::info("readiness: ready");
            break;
        case readiness::pending:
            log::warn("readiness: not ready: migrations pending");
            break;
        case readiness::unreachable:
            log::warn("readiness: not ready: database unreachable: " + why);
            break;
    }
}

}  // namespace fulltime::net::detail
