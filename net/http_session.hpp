#pragma once
/// The per-connection HTTP loop (keep-alive, routes, WebSocket upgrade) and the short refusal
/// of connections over connections_max.

#include "net/server_state.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <string>

namespace fulltime::net::detail {

/// Serves one accepted connection on the socket's executor until it closes, with the routes
/// of the listener `which` that accepted it. The caller has counted it in open_connections; the
/// session uncounts it, and gives `slot` (its source address's share) back.
void start_http_session(std::shared_ptr<server_state> state, boost::asio::ip::tcp::socket socket,
                        listener which, share slot);

/// Reads one request from a connection refused for `why`, answers 503 (a health check gets its
/// usual answer) and closes, within a short deadline; closes it at once when refusals are at
/// their bounds, in all or for its source address `who` (address_key).
void start_refusal(std::shared_ptr<server_state> state, boost::asio::ip::tcp::socket socket,
                   std::string who, refusal why);

}  // namespace fulltime::net::detail
