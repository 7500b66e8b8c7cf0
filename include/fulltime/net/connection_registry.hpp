#pragma once
/// Finds the open /v1/bets sessions of an account so that the engine can push messages to them
/// (bet_settled). Thread-safe: push may be called from any thread or actor.

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fulltime::net {

/// Receives pushed messages; implemented by a WebSocket session.
class push_target {
public:
    virtual ~push_target() = default;
    /// Queues one text message for the client without blocking, on the session's own executor.
    /// A session whose write queue is full closes as too slow (1008) instead. `xid`, when not 0,
    /// is the transaction that wrote what the message tells: the session's later reads of the
    /// read model wait for the projector to pass it, as for its own placements, so a bettor told
    /// of a settlement sees it in `bets` (docs/architecture.md, "Reads").
    virtual void push(std::string text, std::uint64_t xid) = 0;
};

/// Holds weak references to sessions by account id. Bounded by the gateway's connections_max.
class connection_registry {
public:
    /// Records that `connection_id` is an open session of `account_id`.
    void add(std::int64_t account_id, std::uint64_t connection_id,
             std::weak_ptr<push_target> target);
    /// Forgets a session.
    void remove(std::int64_t account_id, std::uint64_t connection_id);
    /// Queues `message` on every open session of `account_id` (with push_target::push's `xid`);
    /// returns how many it reached.
    std::size_t push(std::int64_t account_id, const nlohmann::json& message, std::uint64_t xid = 0);
    /// Returns the number of open sessions of `account_id`.
    std::size_t sessions(std::int64_t account_id) const;

private:
    mutable std::mutex mutex_;
    std::multimap<std::int64_t, std::pair<std::uint64_t, std::weak_ptr<push_target>>> targets_;
};

}  // namespace fulltime::net
