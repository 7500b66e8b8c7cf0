#pragma once
/// The per-connection HTTP loop (keep-alive, routes, WebSocket upgrade) and the short refusal
/// of connections over connections_max.

#include "net/server_state.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <memory>

namespace fulltime::net::detail {

/// Serves one accepted connection on the socket's executor until it closes, with the routes
/// of the listener `which` that accepted it. The caller has counted it in open_connections; the
/// session uncounts it.
void start_http_session(std::shared_ptr<server_state> state, boost::asio::ip::tcp::socket socket,
                        listener which);

/// Reads one request from a connection over the limit, answers 503 and closes, within a short
/// deadline.
void start_refusal(std::shared_ptr<server_state> state, boost::asio::ip::tcp::socket socket);

}  // namespace fulltime::net::detail
