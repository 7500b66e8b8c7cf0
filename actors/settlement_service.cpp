// The settlement service: it owns the coordinator (actors/settlement_coordinator.cpp), which
// owns the market actors (actors/settlement_market_actor.cpp). See settlement.hpp for the shape
// and the threading model.

#include "actors/settlement_coordinator.hpp"
#include "actors/settlement_detail.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/core/assert.hpp"

#include <caf/all.hpp>

namespace fulltime::actors {

namespace asio = boost::asio;

struct settlement_service::impl {
    caf::actor coordinator;
    std::shared_ptr<detail::settlement_worker> worker;
    bool stopped = false;
};

settlement_service::settlement_service(caf::actor_system& system, asio::any_io_executor io,
                                       db::pool& settlement, db::pool& background,
                                       const config& cfg, settlement_metrics& metrics)
    : impl_(std::make_shared<impl>()) {
    FULLTIME_ASSERT(cfg.settlement.batches_in_flight > 0);
    auto w = std::make_shared<detail::settlement_worker>();
    w->settlement = &settlement;
    w->background = &background;
    w->batch_bets_max = static_cast<std::int64_t>(cfg.settlement.batch_bets_max);
    w->lock_timeout_ms = cfg.settlement.lock_timeout_ms;
    w->query_timeout = std::chrono::milliseconds(cfg.database.query_timeout_ms);
    w->metrics = &metrics;
    impl_->worker = w;
    detail::settlement_actor_settings s;
    s.worker = w;
    s.io = std::move(io);
    s.retry_delay = std::chrono::milliseconds(cfg.settlement.retry_delay_ms);
    s.poll_interval = std::chrono::milliseconds(cfg.settlement.poll_interval_ms);
    s.duty_percent = static_cast<int>(cfg.settlement.duty_percent);
    s.metrics = &metrics;
    impl_->coordinator = detail::spawn_settlement_coordinator(system, std::move(s),
                                                              cfg.settlement.batches_in_flight);
}

settlement_service::~settlement_service() {
    if (!impl_->stopped) {
        caf::anon_send_exit(impl_->coordinator, caf::exit_reason::user_shutdown);
    }
}

void settlement_service::notify(std::int64_t market_id) {
    if (!impl_->stopped) {
        caf::anon_send(impl_->coordinator, detail::wake_atom::value, market_id);
    }
}

void settlement_service::stop() {
    if (impl_->stopped) {
        return;
    }
    impl_->stopped = true;
    impl_->worker->closed = true;
    caf::anon_send_exit(impl_->coordinator, caf::exit_reason::user_shutdown);
}

}  // namespace fulltime::actors
