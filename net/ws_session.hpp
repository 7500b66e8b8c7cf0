#pragma once
/// The WebSocket session: accept, read loop, bounded write queue, concurrent request handling.
/// Private to net/: only http_session.cpp hands connections over.

#include "fulltime/core/token.hpp"
#include "fulltime/net/endpoint_handlers.hpp"
#include "net/server_state.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstdint>
#include <memory>

namespace fulltime::net::detail {

/// Completes the upgrade of `stream` with `request` and serves the session until it closes.
/// The caller has verified the token: `claims` are the session's for its lifetime.
boost::asio::awaitable<void> run_websocket_session(
    std::shared_ptr<server_state> state, boost::beast::tcp_stream stream,
    boost::beast::http::request<boost::beast::http::string_body> request, ws_endpoint endpoint,
    token::claims claims, std::uint64_t connection_id);

}  // namespace fulltime::net::detail
