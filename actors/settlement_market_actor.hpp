#pragma once
/// One market actor: applies its market's events in seq order, one step at a time, each step in
/// a slot granted by the coordinator. Private to actors/; it pulls in CAF's headers.

#include "actors/settlement_messages.hpp"

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>

#include <cstdint>

namespace fulltime::actors::detail {

/// Spawns the actor of `market_id` from `coordinator`, to which it sends its slot requests and
/// its idle notice. It starts idle: a wake_atom starts it.
caf::actor spawn_market_actor(caf::event_based_actor* coordinator, std::int64_t market_id,
                              const settlement_actor_settings& settings);

}  // namespace fulltime::actors::detail
