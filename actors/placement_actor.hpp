#pragma once
/// One placement actor: a FIFO of place requests, run in groups on its worker's connection.
/// Private to actors/; it pulls in CAF's headers. See placement.hpp for the threading model.

#include "actors/placement_detail.hpp"
#include "actors/reply_sink.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include <memory>

// Placement messages never leave the process, so they need no serialization: CAF 0.17 accepts
// such types in messages once they are declared unsafe-but-allowed.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::bets::place_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(fulltime::actors::detail::reply_ptr)

namespace fulltime::actors::detail {

/// Asks a placement actor to run one placement:
/// `(place_atom, place_request, fingerprint, reply_ptr, deadline in steady_clock ticks)`.
/// No reply message: the answer goes to the reply sink.
using place_atom = caf::atom_constant<caf::atom("ft_place")>;

/// Spawns a placement actor that runs its groups on `worker` (on `io`). An exit answers every
/// queued placement busy; a running group answers its own when its call ends.
caf::actor spawn_placement_actor(caf::actor_system& system,
                                 std::shared_ptr<placement_worker> worker,
                                 boost::asio::any_io_executor io, placement_metrics* metrics);

}  // namespace fulltime::actors::detail
