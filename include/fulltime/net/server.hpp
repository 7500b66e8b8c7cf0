#pragma once
/// The gateway: one port serving HTTP (health, readiness, metrics, routes added by features) and
/// the WebSocket endpoints /v1/bets and /v1/feed (docs/protocol.md).
///
/// Beast stays out of this header: the server is a handle on state shared with its sessions.
/// The io_context given to the server is the main loop: it accepts, and HTTP routes and the
/// message handlers not marked on_connection_loop run there. Connections are spread over
/// services::loops (each run by one thread), each on its own strand of its loop.

#include "fulltime/core/resources.hpp"
#include "fulltime/net/connection_registry.hpp"
#include "fulltime/net/endpoint_handlers.hpp"
#include "fulltime/net/http_route.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace fulltime {
struct config;
namespace db {
struct pools;
}  // namespace db
namespace metrics {
class registry;
}  // namespace metrics
}  // namespace fulltime

namespace fulltime::net {

/// Holds what the gateway needs from the engine. The pointers must outlive the server's
/// shutdown(); the gateway settings are copied at construction.
struct services {
    const fulltime::config* cfg = nullptr;  ///< gateway settings (required)
    db::pools* pools = nullptr;             ///< for the pool metrics
    /// The executor `pools` was made with (a pool is single-executor), which the readiness
    /// check's connection uses too; empty: the io_context's.
    boost::asio::any_io_executor db_executor;
    /// The database /readyz reports on, checked once a second on a connection of the gateway's
    /// own, never one of the pools' (net/readiness_probe.hpp); empty: /readyz is always 503
    /// "database unreachable".
    std::string readiness_conninfo;
    /// Whether the placement actors have opened their connections (actors::placement_service::
    /// opened), which /readyz also requires; empty: not asked. Called on any loop.
    std::function<bool()> placement_opened;
    metrics::registry* metrics = nullptr;  ///< null: the server keeps a private registry
    token::keyring token_keys;             ///< what tokens are verified against (core/token.hpp)
    std::vector<resources::migration_source> migrations;  ///< what /readyz expects applied
    endpoint_handlers bets;                               ///< message handlers of /v1/bets, by type
    endpoint_handlers feed;                               ///< message handlers of /v1/feed, by type
    http_routes routes;  ///< extra HTTP routes; may not reuse the built-in paths
    /// The event loops new connections are spread over, round robin, each run by one thread;
    /// empty: the main loop only. The main loop may be one of them.
    std::vector<boost::asio::io_context*> loops;
};

namespace detail {
struct server_state;
}  // namespace detail

/// Serves HTTP and WebSocket on cfg->gateway.host:port, and the operators' routes on
/// cfg->gateway.admin_host:admin_port instead when admin_listen is set.
class server {
public:
    /// Creates the server and registers its metrics; nothing listens until start().
    server(boost::asio::io_context& ioc, services s);
    /// Releases the server's reference; call shutdown() first (sessions hold the state).
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    /// Binds and listens, then accepts on the io_context. Throws std::runtime_error with one
    /// line, e.g. "cannot listen on 127.0.0.1:8080: Address already in use".
    void start();

    /// Returns the bound port (an ephemeral one when the configured port is 0).
    std::uint16_t port() const noexcept;

    /// Returns the port the operators' listener is bound to (admin_listen), none when it is not
    /// set (the operators' routes are then on port()).
    std::optional<std::uint16_t> admin_port() const noexcept;

    /// Stops accepting and the readiness checks at once, lets in-flight requests finish until
    /// `deadline` from now, then closes WebSockets with 1001 and HTTP connections; force-closes
    /// whatever remains at the deadline. Completes when every session is gone (or a short grace
    /// after the deadline).
    boost::asio::awaitable<void> shutdown(std::chrono::milliseconds deadline);

    /// Returns the number of open client connections (HTTP and WebSocket).
    std::size_t open_connections() const noexcept;

    /// Returns the registry of /v1/bets sessions by account, for pushed messages.
    connection_registry& connections() noexcept;

private:
    std::shared_ptr<detail::server_state> state_;
};

}  // namespace fulltime::net
