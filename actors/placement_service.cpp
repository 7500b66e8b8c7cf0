// The placement service: it owns the placement actors, the purge actor and their io-side
// workers. See placement.hpp for the threading model; the actors live in
// actors/placement_actor.cpp and actors/idempotency_purge_actor.cpp.

#include "actors/handler_sink.hpp"
#include "actors/idempotency_purge_actor.hpp"
#include "actors/placement_actor.hpp"
#include "actors/placement_detail.hpp"
#include "fulltime/actors/bridge.hpp"
#include "fulltime/actors/placement.hpp"
#include "fulltime/core/assert.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <caf/all.hpp>

#include <vector>

namespace fulltime::actors {

namespace asio = boost::asio;
using detail::reply_ptr;
using detail::steady;

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
        impl_->actors.push_back(detail::spawn_placement_actor(system, w, io, &metrics));
        asio::co_spawn(io, detail::warm(w), asio::detached);
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
        system, p, io, std::chrono::milliseconds(cfg.placement.purge_interval_ms));
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
        result = detail::busy_result(std::string(detail::shutting_down_message));
    } else {
        // An account's placements go to one actor (by account id). Correctness does not depend
        // on it (the database decides), but it keeps an account's placements out of each
        // other's way: they queue in one mailbox and commit together as one group, instead of
        // several actors' groups waiting on the same balance row lock.
        caf::actor target =
            st->actors[static_cast<std::uint64_t>(request.account_id) % st->actors.size()];
        const auto deadline = (start + st->request_timeout).time_since_epoch().count();
        auto initiation = [&](auto handler) {
            reply_ptr sink =
                std::make_shared<detail::handler_sink<decltype(handler)>>(std::move(handler));
            // A message to an actor already gone is dropped with its sink, which answers busy.
            caf::anon_send(target, detail::place_atom::value, std::move(request),
                           std::move(fingerprint), std::move(sink), deadline);
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
    auto reply = co_await ask<std::int64_t>(*st->system, st->purger, st->request_timeout,
                                            detail::purge_atom::value);
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
