#pragma once
/// What the settlement actors share: the messages they exchange and the settings every one of
/// them holds. Private to actors/settlement_*.cpp; it pulls in CAF's headers.

#include "actors/settlement_detail.hpp"
#include "fulltime/core/latency_window.hpp"
#include "fulltime/core/settlement_governor.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include <chrono>
#include <memory>

// Settlement messages never leave the process: no serialization needed.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::detail::step_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::detail::backlog)

namespace fulltime::actors::detail {

/// To the coordinator `(wake_atom, market_id)`: an event was stored for the market. To a market
/// actor `(wake_atom, wake count)`: look for events (the count tells the coordinator, when the
/// actor goes idle, whether a wake came in meanwhile).
using wake_atom = caf::atom_constant<caf::atom("st_wake")>;
/// A market actor asks the coordinator for a slot.
using slot_atom = caf::atom_constant<caf::atom("st_slot")>;
/// The coordinator grants the asking market actor a slot.
using granted_atom = caf::atom_constant<caf::atom("st_grant")>;
/// A market actor gives its slot back.
using release_atom = caf::atom_constant<caf::atom("st_free")>;
/// `(idle_atom, market_id, wake count seen)`: a market actor found nothing to apply.
using idle_atom = caf::atom_constant<caf::atom("st_idle")>;
/// `(batched_atom, bets, microseconds)`: a market actor's step settled a batch of that many bets
/// in that time (the governor's cost per bet).
using batched_atom = caf::atom_constant<caf::atom("st_batch")>;

/// Holds what every settlement actor needs; copied into each.
struct settlement_actor_settings {
    std::shared_ptr<settlement_worker> worker;
    boost::asio::any_io_executor io;
    std::chrono::milliseconds retry_delay{0};
    std::chrono::milliseconds poll_interval{0};
    int duty_percent = 100;  ///< share of time a market's steps may run back to back
    settlement_metrics* metrics = nullptr;
    /// The governor's settings (budget 0: off) and what it steers by: the engine's placement
    /// latency (nullptr: none in this process, the governor stays off).
    settlement::governor_settings governor;
    /// Quiet placement time the baseline p99 covers (settlement.placement_baseline_ms).
    std::chrono::milliseconds baseline_span{60'000};
    const metrics::latency_window* placement_latency = nullptr;
    std::shared_ptr<settlement_pacing> pacing;
};

}  // namespace fulltime::actors::detail
