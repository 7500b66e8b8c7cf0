// The placement service: it owns the placement actors, the purge actor and their connection-side
// workers. See placement.hpp for the threading model; the actors live in
// actors/placement_actor.cpp and actors/idempotency_purge_actor.cpp.

#include "actors/account_router.hpp"
#include "actors/handler_sink.hpp"
#include "actors/idempotency_purge_actor.hpp"
#include "actors/placement_actor.hpp"
#include "actors/placement_detail.hpp"
#include "fulltime/actors/bridge.hpp"
#include "fulltime/actors/placement.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/limits.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <caf/all.hpp>

#include <atomic>
#include <optional>
#include <tuple>
#include <vector>

namespace fulltime::actors {

namespace asio = boost::asio;
using detail::placement_actor;
using detail::reply_ptr;
using detail::steady;

struct placement_service::impl {
    caf::actor_system* system = nullptr;
    std::vector<placement_loop> loops;
    /// One loop's actors and the router that picks among them (touched on the loop's thread
    /// only). A loop has no actors, and so no router, when there are more loops than actors.
    struct loop_actors {
        std::vector<std::shared_ptr<placement_actor>> actors;
        std::optional<detail::account_router> router;
    };
    /// by_loop[i]: the actors of loops[i].
    std::vector<loop_actors> by_loop;
    std::vector<std::shared_ptr<placement_actor>> all;
    caf::actor purger;
    asio::any_io_executor main;
    std::shared_ptr<detail::purge_worker> purge_worker;
    /// A placement's answer is due this long after it is asked (and a purge_now's reply).
    std::chrono::milliseconds request_timeout{0};
    placement_metrics* metrics = nullptr;
    std::atomic<bool> stopped{false};  ///< read by place() on any loop
    /// Actors that have opened their first connection (detail::warm), read by opened().
    std::shared_ptr<std::atomic<std::size_t>> opened_count =
        std::make_shared<std::atomic<std::size_t>>(0);

    static constexpr std::size_t no_loop = static_cast<std::size_t>(-1);

    // Picks the actor of `account` among those of the caller's loop, through the loop's router
    // (`routed` is then the loop's index, and the caller reports the answer to its router), or by
    // account id among all actors when the caller's loop has none (or the caller is on no loop,
    // as a test may be; `routed` is then no_loop).
    placement_actor& actor_for(std::int64_t account, std::size_t& routed) {
        for (std::size_t i = 0; i < loops.size(); ++i) {
            auto& mine = by_loop[i];
            if (mine.router && loops[i].context->get_executor().running_in_this_thread()) {
                routed = i;
                return *mine.actors[mine.router->route(account, steady::now())];
            }
        }
        routed = no_loop;
        return *all[static_cast<std::uint64_t>(account) % all.size()];
    }

    void stop_all() {
        for (auto& a : all) {
            asio::dispatch(a->executor(), [a] { a->stop(); });
        }
        asio::dispatch(main, [w = purge_worker] { w->closed = true; });
        caf::anon_send_exit(purger, caf::exit_reason::user_shutdown);
    }
};

placement_service::placement_service(caf::actor_system& system, std::vector<placement_loop> loops,
                                     asio::any_io_executor main, db::pool& background,
                                     const config& cfg, placement_metrics& metrics)
    : impl_(std::make_shared<impl>()) {
    FULLTIME_ASSERT(cfg.placement.actors > 0 && !loops.empty());
    impl_->system = &system;
    impl_->loops = std::move(loops);
    impl_->by_loop.resize(impl_->loops.size());
    impl_->main = main;
    impl_->request_timeout = std::chrono::milliseconds(cfg.actors.request_timeout_ms);
    impl_->metrics = &metrics;
    // Every placement is answered within request_timeout: a request still queued when it passes is
    // answered busy, and a group's database call is cut at its earliest member's deadline.
    for (std::size_t i = 0; i < cfg.placement.actors; ++i) {
        const std::size_t l = i % impl_->loops.size();
        const placement_loop& loop = impl_->loops[l];
        auto w = std::make_shared<detail::placement_worker>();
        w->pool = loop.pool;
        w->lock_timeout_ms = cfg.placement.lock_timeout_ms;
        w->lock_retries_max = cfg.placement.lock_retries_max;
        w->query_timeout = std::chrono::milliseconds(cfg.database.query_timeout_ms);
        w->shard_hint = static_cast<std::int32_t>(i);
        // With remote_apply the commit itself waited for the standby to apply it.
        w->read_commit_lsn = !cfg.database.read_url.empty() && cfg.read.read_your_writes &&
                             cfg.placement.synchronous_commit != "remote_apply";
        w->metrics = &metrics;
        w->connect_timeout = std::chrono::milliseconds(cfg.database.connect_timeout_ms);
        w->opened_count = impl_->opened_count;
        auto actor = std::make_shared<placement_actor>(loop.context->get_executor(), w,
                                                       cfg.placement.group_bets_max);
        impl_->by_loop[l].actors.push_back(actor);
        impl_->all.push_back(actor);
        asio::co_spawn(loop.context->get_executor(), detail::warm(w), asio::detached);
    }
    for (auto& mine : impl_->by_loop) {
        if (!mine.actors.empty()) {
            mine.router.emplace(mine.actors.size(),
                                std::chrono::milliseconds(limits::placement_account_linger_ms));
        }
    }
    auto p = std::make_shared<detail::purge_worker>();
    p->pool = &background;
    p->retention_s = cfg.placement.idempotency_retention_s;
    p->batch_max = cfg.placement.purge_batch_max;
    p->lock_timeout_ms = cfg.placement.purge_lock_timeout_ms;
    p->statement_timeout_ms = cfg.database.statement_timeout_ms;
    p->metrics = &metrics;
    impl_->purge_worker = p;
    impl_->purger = detail::spawn_idempotency_purge_actor(
        system, p, main, std::chrono::milliseconds(cfg.placement.purge_interval_ms));
}

bool placement_service::opened() const noexcept {
    return impl_->opened_count->load(std::memory_order_acquire) == impl_->all.size();
}

placement_service::~placement_service() {
    if (!impl_->stopped) {
        impl_->stop_all();
    }
}

asio::awaitable<bets::place_result> placement_service::place(bets::place_request request,
                                                             std::string fingerprint,
                                                             steady::time_point* answered_at) {
    std::shared_ptr<impl> st = impl_;
    const auto start = steady::now();
    bets::place_result result;
    steady::time_point answered = start;
    std::size_t routed = impl::no_loop;
    if (st->stopped) {
        result = detail::busy_result(std::string(detail::shutting_down_message));
    } else {
        // An active account's placements go to one actor of the loop (detail::account_router).
        // Correctness does not depend on it (the database decides), but it keeps an account's
        // placements out of each other's way: they queue together and commit as one group,
        // instead of several actors' groups waiting on the same balance row lock.
        const std::int64_t account = request.account_id;
        std::shared_ptr<placement_actor> target = st->actor_for(account, routed).shared_from_this();
        const auto deadline = start + st->request_timeout;
        auto initiation = [&](auto handler) {
            reply_ptr sink =
                std::make_shared<detail::handler_sink<decltype(handler)>>(std::move(handler));
            detail::pending_placement p{
                std::move(request), std::move(fingerprint), std::move(sink), start, deadline, {}};
            // At once on the actor's own loop (the usual case); else one hop there.
            asio::dispatch(target->executor(),
                           [target, p = std::move(p)]() mutable { target->submit(std::move(p)); });
        };
        std::tie(result, answered) =
            co_await asio::async_initiate<decltype(asio::use_awaitable),
                                          void(bets::place_result, steady::time_point)>(
                std::move(initiation), asio::use_awaitable);
        if (routed != impl::no_loop) {
            // Back on the loop actor_for ran on: its router's thread.
            FULLTIME_DEBUG_ASSERT(
                st->loops[routed].context->get_executor().running_in_this_thread());
            st->by_loop[routed].router->answered(account, steady::now());
        }
    }
    if (answered_at != nullptr) {
        *answered_at = answered;
    }
    st->metrics->record(
        result, std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - start));
    co_return result;
}

asio::awaitable<std::optional<std::int64_t>> placement_service::purge_now() {
    std::shared_ptr<impl> st = impl_;
    auto reply = co_await ask<std::int64_t>(*st->system, st->purger, st->request_timeout,
                                            detail::purge_atom::value);
    if (!reply) {
        co_return std::nullopt;
    }
    co_return *reply;
}

std::size_t placement_service::actor_count() const noexcept { return impl_->all.size(); }

void placement_service::stop() {
    if (impl_->stopped.exchange(true)) {
        return;
    }
    impl_->stop_all();
}

}  // namespace fulltime::actors
