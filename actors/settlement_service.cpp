// The settlement service: it owns the coordinator (actors/settlement_coordinator.cpp), which
// owns the market actors (actors/settlement_market_actor.cpp). See settlement.hpp for the shape
// and the threading model.

#include "actors/settlement_coordinator.hpp"
#include "actors/settlement_detail.hpp"
#include "fulltime/actors/settlement.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/limits.hpp"

#include <algorithm>

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
                                       const config& cfg, settlement_metrics& metrics,
                                       const metrics::latency_window* placement_latency)
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
    const auto& st = cfg.settlement;
    settlement::governor_settings g;
    if (placement_latency != nullptr) {
        g.budget = std::chrono::milliseconds(st.placement_p99_budget_ms);
        g.budget_percent = st.placement_p99_budget_percent;
    }
    g.batch_max = static_cast<std::int64_t>(st.batch_bets_max);
    g.batch_min =
        std::max<std::int64_t>(1, g.batch_max / limits::settlement_governor_batch_divisor);
    g.min_bets_per_s = static_cast<double>(st.min_bets_per_s);
    g.window = std::chrono::milliseconds(st.placement_window_ms);
    g.pause_max = std::chrono::milliseconds(limits::settlement_governor_pause_ms_max);
    g.pause_step = std::chrono::milliseconds(limits::settlement_governor_pause_step_ms);
    if (g.any_budget()) {
        w->pacing = std::make_shared<detail::settlement_pacing>();
        w->pacing->batch_bets = g.batch_max;
    }
    // The governor paces one chain of batches per market (its cost per bet, its floor): lanes
    // only when it does not steer. An event started in lanes still finishes in them.
    w->lanes = g.any_budget() ? 1 : std::max<std::int64_t>(1, st.lanes);
    detail::settlement_actor_settings s;
    s.worker = w;
    s.io = std::move(io);
    s.retry_delay = std::chrono::milliseconds(cfg.settlement.retry_delay_ms);
    s.poll_interval = std::chrono::milliseconds(cfg.settlement.poll_interval_ms);
    s.duty_percent = static_cast<int>(cfg.settlement.duty_percent);
    s.metrics = &metrics;
    s.governor = g;
    s.baseline_span = std::chrono::milliseconds(st.placement_baseline_ms);
    s.placement_latency = placement_latency;
    s.pacing = w->pacing;
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
