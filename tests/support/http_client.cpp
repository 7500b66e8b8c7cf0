#include "support/http_client.hpp"

#include <nlohmann/json.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/stream.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace fulltime::test {

nlohmann::json problem_json(unsigned status, std::string_view title, std::string_view code,
                            std::string_view detail) {
    return nlohmann::json{{"type", "about:blank"},
                          {"title", title},
                          {"status", status},
                          {"code", code},
                          {"detail", detail}};
}

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

// Starts one asynchronous operation, runs the private io_context until it completes or
// `timeout` passes. On timeout the socket is closed (so the operation completes with an error)
// and nullopt is returned.
template <class Start>
std::optional<error_code> run_op(asio::io_context& ioc, tcp::socket& socket,
                                 std::chrono::milliseconds timeout, Start start) {
    std::optional<error_code> result;
    start([&result](error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run_for(timeout);
    if (!result) {
        error_code ignored;
        socket.close(ignored);
        ioc.restart();
        ioc.run_for(std::chrono::milliseconds(1000));
        return std::nullopt;
    }
    return result;
}

error_code must_complete(std::optional<error_code> r, const char* what) {
    if (!r) {
        throw std::runtime_error(std::string(what) + ": timed out");
    }
    return *r;
}

void connect(asio::io_context& ioc, tcp::socket& socket, std::uint16_t port) {
    const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
    const auto ec =
        must_complete(run_op(ioc, socket, std::chrono::milliseconds(5000),
                             [&](auto handler) { socket.async_connect(ep, std::move(handler)); }),
                      "connect");
    if (ec) {
        throw std::runtime_error("connect: " + ec.message());
    }
}

template <class Fields>
header_list to_list(const Fields& fields) {
    header_list out;
    for (const auto& f : fields) {
        out.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    return out;
}

http_reply exchange(asio::io_context& ioc, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                    http::request<http::string_body>& req, std::chrono::milliseconds timeout) {
    auto ec = must_complete(
        run_op(ioc, stream.socket(), timeout,
               [&](auto handler) { http::async_write(stream, req, std::move(handler)); }),
        "http write");
    if (ec) {
        throw std::runtime_error("http write: " + ec.message());
    }
    http::response<http::string_body> res;
    ec = must_complete(
        run_op(ioc, stream.socket(), timeout,
               [&](auto handler) { http::async_read(stream, buffer, res, std::move(handler)); }),
        "http read");
    if (ec) {
        throw std::runtime_error("http read: " + ec.message());
    }
    return http_reply{res.result_int(), res.body(), to_list(res.base())};
}

}  // namespace

std::string http_reply::header(std::string_view name) const {
    const auto same = [](std::string_view a, std::string_view b) {
        return a.size() == b.size() &&
               std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
                   return std::tolower(static_cast<unsigned char>(x)) ==
                          std::tolower(static_cast<unsigned char>(y));
               });
    };
    for (const auto& [k, v] : headers) {
        if (same(k, name)) {
            return v;
        }
    }
    return {};
}

http_reply http_call(std::uint16_t port, const std::string& method, const std::string& target,
                     const std::string& body, const header_list& headers,
                     std::chrono::milliseconds timeout) {
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    connect(ioc, stream.socket(), port);
    http::request<http::string_body> req;
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) {
        req.set(k, v);
    }
    req.keep_alive(false);
    req.body() = body;
    req.prepare_payload();
    beast::flat_buffer buffer;
    return exchange(ioc, stream, buffer, req, timeout);
}

struct http_connection::impl {
    asio::io_context ioc;
    beast::tcp_stream stream{ioc};
    beast::flat_buffer buffer;
};

http_connection::http_connection(std::uint16_t port) : impl_(std::make_unique<impl>()) {
    connect(impl_->ioc, impl_->stream.socket(), port);
}

http_connection::~http_connection() = default;

http_reply http_connection::get(const std::string& target, std::chrono::milliseconds timeout) {
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(true);
    return exchange(impl_->ioc, impl_->stream, impl_->buffer, req, timeout);
}

bool http_connection::closed_by_peer(std::chrono::milliseconds timeout) {
    char byte = 0;
    auto& socket = impl_->stream.socket();
    const auto r = run_op(impl_->ioc, socket, timeout, [&](auto handler) {
        socket.async_read_some(asio::buffer(&byte, 1), std::move(handler));
    });
    // A completed read on an idle connection can only be end of stream or an error.
    return r.has_value() && r->failed();
}

struct ws_client::impl {
    asio::io_context ioc;
    websocket::stream<beast::tcp_stream> ws{ioc};
    std::uint16_t port = 0;

    tcp::socket& socket() { return beast::get_lowest_layer(ws).socket(); }
};

ws_client::ws_client(std::uint16_t port) : impl_(std::make_unique<impl>()) {
    impl_->port = port;
    connect(impl_->ioc, impl_->socket(), port);
}

ws_client::~ws_client() {
    if (impl_) {
        error_code ignored;
        impl_->socket().close(ignored);
    }
}

ws_client::ws_client(ws_client&&) noexcept = default;
ws_client& ws_client::operator=(ws_client&&) noexcept = default;

http_reply ws_client::upgrade(const std::string& target, const header_list& headers,
                              std::chrono::milliseconds timeout) {
    auto& ws = impl_->ws;
    ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
        for (const auto& [k, v] : headers) {
            req.set(k, v);
        }
    }));
    websocket::response_type res;
    const auto host = "127.0.0.1:" + std::to_string(impl_->port);
    const auto ec = must_complete(
        run_op(impl_->ioc, impl_->socket(), timeout,
               [&](auto handler) { ws.async_handshake(res, host, target, std::move(handler)); }),
        "websocket handshake");
    if (ec && ec != websocket::error::upgrade_declined) {
        throw std::runtime_error("websocket handshake: " + ec.message());
    }
    return http_reply{res.result_int(), res.body(), to_list(res.base())};
}

void ws_client::send_text(const std::string& text, std::chrono::milliseconds timeout) {
    auto& ws = impl_->ws;
    ws.text(true);
    const auto ec = must_complete(
        run_op(impl_->ioc, impl_->socket(), timeout,
               [&](auto handler) { ws.async_write(asio::buffer(text), std::move(handler)); }),
        "websocket write");
    if (ec) {
        throw std::runtime_error("websocket write: " + ec.message());
    }
}

void ws_client::send_binary(const std::string& data, std::chrono::milliseconds timeout) {
    auto& ws = impl_->ws;
    ws.binary(true);
    const auto ec = must_complete(
        run_op(impl_->ioc, impl_->socket(), timeout,
               [&](auto handler) { ws.async_write(asio::buffer(data), std::move(handler)); }),
        "websocket write");
    ws.text(true);
    if (ec) {
        throw std::runtime_error("websocket write: " + ec.message());
    }
}

ws_read ws_client::read(std::chrono::milliseconds timeout) {
    auto& ws = impl_->ws;
    beast::flat_buffer buffer;
    const auto ec =
        must_complete(run_op(impl_->ioc, impl_->socket(), timeout,
                             [&](auto handler) { ws.async_read(buffer, std::move(handler)); }),
                      "websocket read");
    ws_read out;
    if (ec) {
        // The close frame's code is kept even when the closing handshake then fails (the server
        // may tear the connection down right after its close frame).
        out.close_code = static_cast<int>(ws.reason().code);
        out.closed = ec == websocket::error::closed;
        if (!out.closed) {
            out.error = ec.message();
        }
    } else {
        out.text = beast::buffers_to_string(buffer.data());
    }
    return out;
}

void ws_client::close() {
    auto& ws = impl_->ws;
    if (!ws.is_open()) {
        return;
    }
    run_op(impl_->ioc, impl_->socket(), std::chrono::milliseconds(2000), [&](auto handler) {
        ws.async_close(websocket::close_code::normal, std::move(handler));
    });
}

}  // namespace fulltime::test
