#pragma once
/// What a WebSocket endpoint (/v1/bets, /v1/feed) does with a well-formed message: one handler per
/// message "type", registered by the engine before the gateway starts.

#include "fulltime/core/token.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>

namespace fulltime::metrics {
class latency_histogram;
}  // namespace fulltime::metrics

namespace fulltime::net {

class account_writes;

/// Names the WebSocket endpoints of the gateway.
enum class ws_endpoint { bets = 1, feed };

/// Returns the endpoint's path ("/v1/bets" or "/v1/feed").
std::string_view path_of(ws_endpoint e) noexcept;

/// Describes who sent a message and where it arrived.
struct request_context {
    token::claims claims;             ///< verified: an account token on bets, producer on feed
    std::uint64_t connection_id = 0;  ///< unique per gateway instance, for logs
    ws_endpoint endpoint = ws_endpoint::bets;
    boost::asio::any_io_executor executor;  ///< the connection's own executor (a strand)
    std::chrono::steady_clock::time_point received_at;  ///< when the frame was read
    /// The engine's writes by account, for read-your-writes; lives as long as the gateway.
    account_writes* writes = nullptr;
};

/// Handles one message whose "type" it was registered for and returns the reply, which the
/// gateway sends as is (the handler echoes "id"). The context reference stays valid until the
/// returned awaitable completes. A handler that throws gets an "internal" error reply; the
/// connection stays open. A handler must bound its own waits (actor requests have deadlines); at
/// shutdown's deadline the gateway cancels it (terminal cancellation) and drops its reply.
using message_handler = std::function<boost::asio::awaitable<nlohmann::json>(
    const request_context& context, nlohmann::json message)>;

/// Holds one message type's handler, where it runs, and what the gateway times for it.
struct endpoint_handler {
    endpoint_handler() = default;
    /// Wraps a handler that runs on the main loop (implicit, so that `handlers["x"] = lambda`
    /// registers one).
    template <class F>
    requires(std::is_constructible_v<message_handler, F> &&
             !std::is_same_v<std::decay_t<F>, endpoint_handler>) endpoint_handler(F f)
        : run(std::move(f)) {}  // NOLINT(google-explicit-constructor)

    message_handler run;
    /// Where `run` runs. false: on the engine's main loop (loop 0), which owns the settlement,
    /// read and background pools and every service but placement; a connection on another loop
    /// hops there and back. true: on the connection's own loop; the handler then touches only
    /// what is safe from any loop (the placement service, atomics).
    bool on_connection_loop = false;
    /// When set, the gateway records there how long the reply took from queued to written on
    /// the socket, and from the frame read to written.
    metrics::latency_histogram* write_time = nullptr;
    metrics::latency_histogram* total_time = nullptr;
};

/// Maps a message type to its handler; a type absent here is refused as unknown.
using endpoint_handlers = std::map<std::string, endpoint_handler, std::less<>>;

}  // namespace fulltime::net
