#pragma once
/// State shared by the server handle, its accept loop and its sessions. Sessions hold it by
/// shared_ptr so that nothing they touch dies before they do.

#include "fulltime/config/config.hpp"
#include "fulltime/net/account_writes.hpp"
#include "fulltime/net/server.hpp"
#include "net/admission.hpp"
#include "net/gateway_metrics.hpp"
#include "net/readiness_probe.hpp"
#include "net/report_throttle.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fulltime::net::detail {

/// Is told about shutdown; implemented by HTTP and WebSocket sessions. Both calls may come from
/// any thread and post onto the session's own executor.
class tracked_connection {
public:
    virtual ~tracked_connection() = default;
    /// Finishes in-flight work, then closes (WebSocket: 1001; idle HTTP: at once).
    virtual void begin_shutdown() = 0;
    /// Closes the socket now and cancels in-flight handlers.
    virtual void force_close() = 0;
};

/// Names the listener that accepted a connection. With admin_listen unset there is one, `all`,
/// serving every route; with it set the bettors' (`listen`) serves the bettor WebSocket and the
/// health checks, and the operators' (`admin_listen`) everything but the bettor WebSocket.
enum class listener : std::uint8_t { all, bettors, operators };

/// Returns whether `l` serves `route`.
bool serves_route(listener l, const http_route& route) noexcept;

/// Holds everything the gateway shares between coroutines.
struct server_state : std::enable_shared_from_this<server_state> {
    server_state(boost::asio::io_context& io, services s);

    boost::asio::io_context& ioc;
    services svc;
    gateway_settings settings;
    std::unique_ptr<metrics::registry> own_metrics;  ///< when svc.metrics is null
    metrics::registry& registry;
    gateway_metrics metrics;
    connection_registry connections;
    account_writes writes;  ///< each account's newest write, for its sessions' reads
    http_routes routes;     ///< built-in routes, then svc.routes
    boost::asio::ip::tcp::acceptor acceptor;  ///< `listen`
    std::uint16_t port = 0;
    boost::asio::ip::tcp::acceptor admin_acceptor;  ///< `admin_listen`, when set
    std::uint16_t admin_port = 0;

    std::atomic<bool> stopping{false};
    std::atomic<std::size_t> open_connections{0};
    std::atomic<std::size_t> rejecting{0};  ///< 503 responses being written
    /// Bytes queued for writing on all WebSocket sessions (settings.write_queue_bytes_total_max).
    std::atomic<std::size_t> ws_queued_bytes{0};
    /// When memory was last returned to the system (steady clock, ms): trim_memory() throttles.
    std::atomic<std::int64_t> last_trim_ms{0};
    share_table address_shares;  ///< connections by source address (address_key)
    share_table refusal_shares;  ///< refusals being written, by source address
    share_table session_shares;  ///< WebSocket sessions by account or producer
    /// Null without services::readiness_conninfo: /readyz then answers "database unreachable".
    std::shared_ptr<readiness_probe> readiness;
    // The gate (Seastar's): every session, accept loop and detached request coroutine holds an
    // entry; shutdown completes when it is empty.
    std::atomic<std::size_t> gate{0};
    std::atomic<std::uint64_t> next_connection_id{1};
    std::atomic<std::size_t> next_loop{0};

    /// Returns the loop for the next accepted connection (round robin over svc.loops).
    boost::asio::io_context& pick_loop() noexcept;
    /// Returns whether the calling thread runs the main loop (ioc).
    bool on_main_loop() const noexcept { return ioc.get_executor().running_in_this_thread(); }

    /// Returns freed heap memory to the system (malloc_trim), unless it was done less than
    /// limits::memory_trim_interval_ms ago. For after a session that held a large queue ends.
    void trim_memory() noexcept;

    /// Records a live connection for shutdown; a later call with the same id replaces it (an
    /// HTTP session that became a WebSocket session).
    void track(std::uint64_t id, std::weak_ptr<tracked_connection> c);
    /// Forgets a connection.
    void untrack(std::uint64_t id);
    /// Returns the live connections.
    std::vector<std::shared_ptr<tracked_connection>> live() const;

    /// Counts a connection refused for `why` in the metrics, and logs it when its reason has not
    /// been logged for limits::refusal_log_interval_ms (with the refusals since the last line);
    /// `who` names the address, account or producer.
    void note_refusal(refusal why, std::string_view who);

    /// Counts a failed accept and logs it as note_refusal does.
    void note_accept_failure(const boost::system::error_code& ec);

private:
    mutable std::mutex mutex_;
    std::unordered_map<std::uint64_t, std::weak_ptr<tracked_connection>> live_;
    report_throttle connections_reports_;
    report_throttle address_reports_;
    report_throttle account_reports_;
    report_throttle accept_failure_reports_;
};

/// Holds one gate entry for its lifetime. Taken before a coroutine is spawned and moved into
/// it, so that the gate never reads empty between spawn and start.
class gate_entry {
public:
    explicit gate_entry(server_state& s) noexcept : state_(&s) { state_->gate.fetch_add(1); }
    gate_entry(gate_entry&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
    gate_entry& operator=(gate_entry&& other) noexcept {
        if (this != &other) {
            leave();
            state_ = std::exchange(other.state_, nullptr);
        }
        return *this;
    }
    ~gate_entry() { leave(); }
    gate_entry(const gate_entry&) = delete;
    gate_entry& operator=(const gate_entry&) = delete;

private:
    void leave() noexcept {
        if (state_ != nullptr) {
            state_->gate.fetch_sub(1);
            state_ = nullptr;
        }
    }
    server_state* state_;
};

/// Returns the built-in routes (/healthz, /readyz, /metrics). They refer to `state`, which owns
/// them.
http_routes builtin_routes(server_state& state);

/// Returns the answer of a health check, /healthz or /readyz (from the newest readiness check),
/// when `path` is one; nullopt otherwise. The routes answer with it, and so do refusals, so
/// that a health check is answered even when every connection slot is taken.
std::optional<http_response> health_check(server_state& state, std::string_view path);

}  // namespace fulltime::net::detail
