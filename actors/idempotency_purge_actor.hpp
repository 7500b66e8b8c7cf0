#pragma once
/// The actor that purges expired idempotency keys, every interval and on demand. Private to
/// actors/; it pulls in CAF's headers.

#include "actors/placement_detail.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>

#include <chrono>
#include <memory>

namespace fulltime::actors::detail {

/// Asks the purge actor for a round now; the reply is the keys it deleted (`std::int64_t`), or
/// an error when a batch failed.
using purge_atom = caf::atom_constant<caf::atom("ft_purge")>;

/// Spawns the purge actor: a round (purge_round on `worker`, on `io`) every `interval`, and on
/// request. Requests that arrive during a round are answered by that round.
caf::actor spawn_idempotency_purge_actor(caf::actor_system& system,
                                         std::shared_ptr<purge_worker> worker,
                                         boost::asio::any_io_executor io,
                                         std::chrono::milliseconds interval);

}  // namespace fulltime::actors::detail
