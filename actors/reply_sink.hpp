#pragma once
/// Where one placement's answer goes. Private to the placement path (actors/placement_*.cpp).
/// No CAF here.

#include "fulltime/core/bets_protocol.hpp"

#include <chrono>
#include <memory>
#include <string_view>

namespace fulltime::actors::detail {

/// Tells the client why a placement was answered busy because the engine is stopping.
inline constexpr std::string_view shutting_down_message =
    "the server is shutting down: retry with the same idempotency_key";

/// Delivers one placement's answer to the waiting session's coroutine. A place request carries
/// its sink to its placement actor, and the group that runs it delivers straight to the asker's
/// executor. The answer is delivered exactly once; a sink dropped unanswered (an actor stopped
/// with it queued) answers busy from its destructor, so no session ever waits for a reply that
/// cannot come.
class reply_sink {
public:
    virtual ~reply_sink() = default;
    /// Delivers `result` to the asker, unless an answer was already delivered.
    virtual void deliver(bets::place_result result) = 0;
};

using reply_ptr = std::shared_ptr<reply_sink>;

}  // namespace fulltime::actors::detail
