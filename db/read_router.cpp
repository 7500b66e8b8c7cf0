#include "fulltime/db/read_router.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace fulltime::db {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

namespace {

constexpr const char* primary_lsn_sql = "SELECT pg_current_wal_insert_lsn()::text";
// NULL on a server that is not in recovery: read_url then names a primary (a promoted standby,
// or a mistake), whose data this engine cannot date against its own primary.
constexpr const char* replay_lsn_sql = "SELECT pg_last_wal_replay_lsn()::text";

constexpr std::int64_t unknown = -1;

std::int64_t ticks(steady::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

std::optional<std::uint64_t> parse_lsn(std::string_view text) noexcept {
    const auto slash = text.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size() || slash > 8 ||
        text.size() - slash - 1 > 8) {
        return std::nullopt;
    }
    std::uint32_t high = 0;
    std::uint32_t low = 0;
    const char* begin = text.data();
    const auto [hi_end, hi_ec] = std::from_chars(begin, begin + slash, high, 16);
    const auto [lo_end, lo_ec] = std::from_chars(begin + slash + 1, begin + text.size(), low, 16);
    if (hi_ec != std::errc{} || lo_ec != std::errc{} || hi_end != begin + slash ||
        lo_end != begin + text.size()) {
        return std::nullopt;
    }
    return (static_cast<std::uint64_t>(high) << 32) | low;
}

std::string format_lsn(std::uint64_t lsn) {
    char buffer[20];
    std::snprintf(buffer, sizeof buffer, "%X/%X", static_cast<unsigned>(lsn >> 32),
                  static_cast<unsigned>(lsn & 0xffffffffU));
    return buffer;
}

std::string_view route_name(read_route r) noexcept {
    switch (r) {
        case read_route::fresh:
            return "fresh";
        case read_route::waited:
            return "waited";
        case read_route::no_standby:
            return "no_standby";
        case read_route::standby_down:
            return "standby_down";
        case read_route::stale:
            return "stale";
        case read_route::behind_write:
            return "behind_write";
        case read_route::standby_failed:
            return "standby_failed";
        case read_route::count_:
            break;
    }
    return "unknown";
}

struct read_router::state {
    state(pool& p, pool* s, read_router_settings rs) : primary(p), standby(s), settings(rs) {}

    /// One sample of the primary: its WAL insert position when the query was sent.
    struct lsn_sample {
        steady::time_point at;
        std::uint64_t lsn = 0;
    };

    pool& primary;
    pool* standby;
    read_router_settings settings;

    // The sampler's thread only.
    std::deque<lsn_sample> samples;
    std::uint64_t replay = 0;  ///< highest replay position seen on the standby
    bool warned_not_standby = false;

    // Read by stats() from any thread.
    std::atomic<bool> standby_up{false};
    std::atomic<std::int64_t> fresh_as_of{unknown};  ///< ticks(); unknown: no such sample
    std::atomic<std::uint64_t> primary_lsn{0};
    std::atomic<std::uint64_t> replay_lsn{0};
    std::atomic<std::uint64_t> sample_failures{0};
    std::atomic<std::uint64_t> routed[static_cast<std::size_t>(read_route::count_)] = {};

    /// Dates the standby: the newest primary sample its replay has passed.
    void date_standby() {
        const auto past =
            std::upper_bound(samples.begin(), samples.end(), replay,
                             [](std::uint64_t lsn, const lsn_sample& s) { return lsn < s.lsn; });
        fresh_as_of.store(past == samples.begin() ? unknown : ticks(std::prev(past)->at),
                          std::memory_order_relaxed);
    }

    /// Notes a replay position read on the standby (a sample or a read-your-writes poll).
    void note_replay(std::uint64_t lsn) {
        replay = std::max(replay, lsn);
        replay_lsn.store(replay, std::memory_order_relaxed);
        date_standby();
    }

    /// Returns how far behind the standby is at most now; nullopt when unknown.
    std::optional<std::chrono::milliseconds> staleness(steady::time_point now) const {
        const std::int64_t as_of = fresh_as_of.load(std::memory_order_relaxed);
        if (as_of == unknown) {
            return std::nullopt;
        }
        return std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::nanoseconds(ticks(now) - as_of));
    }

    void count(read_route r) { routed[static_cast<std::size_t>(r)].fetch_add(1); }

    /// Reads the standby's replay position on `conn`; nullopt (and a warning, once) when the
    /// server is not in recovery.
    asio::awaitable<outcome<std::optional<std::uint64_t>>> read_replay(connection& conn) {
        auto rows = co_await conn.query(replay_lsn_sql);
        if (!rows) {
            co_return rows.error();
        }
        auto text = rows->get<std::optional<std::string>>(0, 0);
        if (!text) {
            co_return failure{errc::bad_result, {}, "unexpected pg_last_wal_replay_lsn row"};
        }
        if (!*text) {
            if (!warned_not_standby) {
                warned_not_standby = true;
                log::warn(
                    "standby: database.read_url is not in recovery (not a standby): reads "
                    "use the primary");
            }
            co_return std::optional<std::uint64_t>{};
        }
        auto lsn = parse_lsn(**text);
        if (!lsn) {
            co_return failure{errc::bad_result, {}, "unexpected pg_lsn " + **text};
        }
        co_return lsn;
    }
};

read_router::read_router(pool& primary, pool* standby, read_router_settings settings)
    : state_(std::make_shared<state>(primary, standby, settings)) {}

read_router::~read_router() = default;

bool read_router::has_standby() const noexcept { return state_->standby != nullptr; }

asio::awaitable<outcome<read_router::lent>> read_router::acquire(read_need need) {
    state& s = *state_;
    const auto on_primary = [&s](read_route route) -> asio::awaitable<outcome<lent>> {
        auto conn = co_await s.primary.acquire();
        if (!conn) {
            co_return conn.error();
        }
        s.count(route);
        co_return lent{std::move(*conn), read_target::primary, route};
    };
    if (s.standby == nullptr || need.staleness_max.count() <= 0) {
        co_return co_await on_primary(read_route::no_standby);
    }
    if (!s.standby_up.load(std::memory_order_relaxed)) {
        co_return co_await on_primary(read_route::standby_down);
    }
    const auto behind = s.staleness(steady::now());
    if (!behind || *behind > need.staleness_max) {
        co_return co_await on_primary(read_route::stale);
    }
    auto conn = co_await s.standby->acquire();
    if (!conn) {
        log::debug("standby: no connection: " + describe(conn.error()));
        co_return co_await on_primary(read_route::standby_failed);
    }
    if (need.after_lsn <= s.replay) {
        s.count(read_route::fresh);
        co_return lent{std::move(*conn), read_target::standby, read_route::fresh};
    }
    // Read-your-writes: poll the standby until its replay passes the session's write.
    const auto deadline = steady::now() + s.settings.ryw_wait;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (;;) {
        auto replay = co_await s.read_replay(**conn);
        if (!replay || !*replay) {
            if (!replay) {
                log::debug("standby: replay position: " + describe(replay.error()));
            }
            *conn = pooled_connection{};
            co_return co_await on_primary(read_route::standby_failed);
        }
        s.note_replay(**replay);
        if (**replay >= need.after_lsn) {
            s.count(read_route::waited);
            co_return lent{std::move(*conn), read_target::standby, read_route::waited};
        }
        if (steady::now() >= deadline) {
            break;
        }
        timer.expires_after(std::chrono::milliseconds(limits::read_ryw_poll_ms));
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    *conn = pooled_connection{};
    co_return co_await on_primary(read_route::behind_write);
}

asio::awaitable<outcome<read_router::lent>> read_router::acquire_primary_after_failure() {
    auto conn = co_await state_->primary.acquire();
    if (!conn) {
        co_return conn.error();
    }
    state_->count(read_route::standby_failed);
    co_return lent{std::move(*conn), read_target::primary, read_route::standby_failed};
}

void read_router::note_standby_failure(const failure& f) {
    // A statement cancelled by recovery (SQLSTATE 40001 on a standby), a lost standby or a busy
    // standby pool: the read runs again on the primary.
    log::debug("standby: read failed, running it on the primary: " + describe(f));
}

asio::awaitable<void> read_router::sample_once() {
    state& s = *state_;
    const auto sent = steady::now();
    if (auto conn = co_await s.primary.acquire(); conn) {
        auto rows = co_await (*conn)->query(primary_lsn_sql);
        auto text = rows ? rows->get<std::string>(0, 0) : outcome<std::string>(rows.error());
        if (auto lsn = text ? parse_lsn(*text) : std::nullopt; lsn) {
            if (s.samples.empty() || s.samples.back().lsn <= *lsn) {
                s.samples.push_back({sent, *lsn});
            }
            while (s.samples.size() > limits::read_lsn_samples_max) {
                s.samples.pop_front();
            }
            s.primary_lsn.store(*lsn, std::memory_order_relaxed);
        } else if (!text) {
            log::debug("standby: primary position: " + describe(text.error()));
        }
    }
    if (s.standby == nullptr) {
        co_return;
    }
    auto conn = co_await s.standby->acquire();
    if (!conn) {
        s.standby_up.store(false, std::memory_order_relaxed);
        s.sample_failures.fetch_add(1);
        co_return;
    }
    auto replay = co_await s.read_replay(**conn);
    if (!replay || !*replay) {
        s.standby_up.store(false, std::memory_order_relaxed);
        s.sample_failures.fetch_add(1);
        co_return;
    }
    s.standby_up.store(true, std::memory_order_relaxed);
    s.note_replay(**replay);
}

asio::awaitable<void> read_router::sample(std::shared_ptr<const std::atomic<bool>> stopped) {
    // The state, not the router, is held: a sampler wakes after the router is gone only to stop.
    auto keep = state_;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!stopped->load()) {
        co_await sample_once();
        timer.expires_after(keep->settings.sample_interval);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

read_router_stats read_router::stats() const {
    const state& s = *state_;
    read_router_stats out;
    out.has_standby = s.standby != nullptr;
    out.standby_up = s.standby_up.load(std::memory_order_relaxed);
    if (auto behind = s.staleness(steady::now()); behind && out.has_standby) {
        out.staleness_ms = behind->count();
    }
    out.primary_lsn = s.primary_lsn.load(std::memory_order_relaxed);
    out.standby_replay_lsn = s.replay_lsn.load(std::memory_order_relaxed);
    out.sample_failures = s.sample_failures.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < static_cast<std::size_t>(read_route::count_); ++i) {
        out.routed[i] = s.routed[i].load(std::memory_order_relaxed);
    }
    return out;
}

}  // namespace fulltime::db
