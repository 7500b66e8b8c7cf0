#pragma once
/// The settlement coordinator: the market actors, the step slots, and the periodic backlog
/// scan. Private to actors/; it pulls in CAF's headers.

#include "actors/settlement_messages.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <cstddef>

namespace fulltime::actors::detail {

/// Spawns the coordinator with `slots` step slots (settlement.batches_in_flight). It scans for
/// markets with events at once and every settings.poll_interval; `(wake_atom, market_id)` wakes
/// one market. An exit stops every market actor with it.
caf::actor spawn_settlement_coordinator(caf::actor_system& system,
                                        settlement_actor_settings settings, std::size_t slots);

}  // namespace fulltime::actors::detail
