#pragma once
/// What a WebSocket endpoint (/v1/bets, /v1/feed) does with a well-formed message: one handler per
/// message "type", registered by the engine before the gateway starts.

#include "fulltime/core/token.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace fulltime::net {

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
};

/// Handles one message whose "type" it was registered for and returns the reply, which the
/// gateway sends as is (the handler echoes "id"). The context reference stays valid until the
/// returned awaitable completes. A handler that throws gets an "internal" error reply; the
/// connection stays open. A handler must bound its own waits (actor requests have deadlines); at
/// shutdown's deadline the gateway cancels it (terminal cancellation) and drops its reply.
using message_handler = std::function<boost::asio::awaitable<nlohmann::json>(
    const request_context& context, nlohmann::json message)>;

/// Maps a message type to its handler; a type absent here is refused as unknown.
using endpoint_handlers = std::map<std::string, message_handler, std::less<>>;

}  // namespace fulltime::net
