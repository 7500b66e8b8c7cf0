#pragma once
/// A small blocking HTTP and WebSocket client for tests (blocking is fine in tests only). Every
/// call has a deadline and throws std::runtime_error when it passes, so a test fails instead of
/// hanging. Beast stays in http_client.cpp.

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fulltime::test {

using header_list = std::vector<std::pair<std::string, std::string>>;

/// Holds one HTTP response.
struct http_reply {
    unsigned status = 0;
    std::string body;
    header_list headers;

    /// Returns the value of header `name` (case-insensitive), or "" when absent.
    std::string header(std::string_view name) const;
};

/// Returns the problem body (application/problem+json) the gateway answers an error with:
/// {"type":"about:blank","title":title,"status":status,"code":code,"detail":detail}. The title
/// is spelt out by the caller, so a test still states the reason phrase it expects.
nlohmann::json problem_json(unsigned status, std::string_view title, std::string_view code,
                            std::string_view detail);

/// Sends one request on a new connection (Connection: close) and returns the response.
http_reply http_call(std::uint16_t port, const std::string& method, const std::string& target,
                     const std::string& body = {}, const header_list& headers = {},
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

/// Sends GET `target` on a new connection.
inline http_reply http_get(std::uint16_t port, const std::string& target,
                           const header_list& headers = {}) {
    return http_call(port, "GET", target, {}, headers);
}

/// Keeps one HTTP/1.1 connection open across requests (keep-alive).
class http_connection {
public:
    /// Connects to 127.0.0.1:port.
    explicit http_connection(std::uint16_t port);
    ~http_connection();
    /// Sends GET `target` with keep-alive and returns the response.
    http_reply get(const std::string& target,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
    /// Returns whether the server closed the connection within `timeout`.
    bool closed_by_peer(std::chrono::milliseconds timeout);

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

/// Holds the result of one WebSocket read.
struct ws_read {
    std::optional<std::string> text;  ///< set when a message arrived
    bool closed = false;              ///< the closing handshake completed
    int close_code = 0;               ///< code of the server's close frame; 0 when none came
    std::string error;                ///< any other failure (reset, eof), empty otherwise
};

/// One WebSocket client connection.
class ws_client {
public:
    /// Connects to 127.0.0.1:port (no upgrade yet).
    explicit ws_client(std::uint16_t port);
    ~ws_client();
    ws_client(ws_client&&) noexcept;
    ws_client& operator=(ws_client&&) noexcept;

    /// Sends the upgrade request for `target`; returns 101 when upgraded, else the HTTP
    /// response the server sent instead.
    http_reply upgrade(const std::string& target, const header_list& headers = {},
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
    /// Sends one text message.
    void send_text(const std::string& text,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
    /// Sends one binary message.
    void send_binary(const std::string& data,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
    /// Reads one message; a deadline that passes throws.
    ws_read read(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
    /// Closes the connection with 1000 (best effort) and waits for the server's answer.
    void close();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace fulltime::test
