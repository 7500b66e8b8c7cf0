#include "net/http_session.hpp"

#include "fulltime/core/log.hpp"
#include "fulltime/limits.hpp"
#include "net/authorize.hpp"
#include "net/http_framing.hpp"
#include "net/router.hpp"
#include "net/token_extraction.hpp"
#include "net/ws_session.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <algorithm>
#include <array>
#include <optional>

namespace fulltime::net::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Closing a socket with unread input makes the kernel send a reset, which can destroy the
// response before the client reads it. After an early answer (413, 431, 400, 503) the client may
// still be sending its body: stop sending, discard its input within a bound, then let the
// caller close.
asio::awaitable<void> linger(beast::tcp_stream& stream) {
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    std::array<char, limits::linger_read_bytes> sink{};
    std::size_t drained_bytes = 0;
    stream.expires_after(std::chrono::milliseconds(limits::linger_timeout_ms));
    while (drained_bytes <= limits::linger_bytes_max) {
        auto [ec, bytes] = co_await stream.async_read_some(asio::buffer(sink),
                                                           asio::as_tuple(asio::use_awaitable));
        if (ec) {
            break;
        }
        drained_bytes += bytes;
    }
}

// Writes `res`, or for a HEAD request its header alone: the same fields, Content-Length
// included, and no body (RFC 9110 9.3.2).
asio::awaitable<bool> write_response(beast::tcp_stream& stream,
                                     http::response<http::string_body> res, bool head_only) {
    if (head_only) {
        http::response<http::empty_body> header(std::move(res.base()));
        auto [ec, bytes] =
            co_await http::async_write(stream, header, asio::as_tuple(asio::use_awaitable));
        co_return !ec;
    }
    auto [ec, bytes] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    co_return !ec;
}

// Returns the route label of a WebSocket endpoint in fulltime_http_requests_total.
std::string_view ws_route_name(ws_endpoint e) {
    return e == ws_endpoint::bets ? "ws_bets" : "ws_feed";
}

std::optional<ws_endpoint> endpoint_at(std::string_view path) {
    if (path == path_of(ws_endpoint::bets)) {
        return ws_endpoint::bets;
    }
    if (path == path_of(ws_endpoint::feed)) {
        return ws_endpoint::feed;
    }
    return std::nullopt;
}

// Holds a response together with what metrics and framing need to know about it.
struct routed_response {
    std::string_view route;  ///< route label; points into the route table or a literal
    http_response response;
    std::string allow;  ///< Allow header of a 405
};

http::response<http::string_body> to_beast(const http_response& r, unsigned version,
                                           bool keep_alive, std::string_view allow = {}) {
    http::response<http::string_body> res;
    res.version(version);
    res.result(r.status);
    res.set(http::field::content_type, r.content_type);
    res.set(http::field::cache_control, "no-store");
    if (!allow.empty()) {
        res.set(http::field::allow, allow);
    }
    // Every 503 says when to come back, whoever built it (/readyz's not_ready included).
    if (const unsigned s = r.status == 503 ? std::max(r.retry_after_s, 1U) : r.retry_after_s;
        s > 0) {
        res.set(http::field::retry_after, std::to_string(s));
    }
    res.body() = r.body;
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

// Serves one accepted connection: a keep-alive loop of requests, until the peer closes, an
// error, a response that closes, shutdown, or an upgrade that hands the socket to a WebSocket
// session.
class http_session final : public tracked_connection,
                           public std::enable_shared_from_this<http_session> {
public:
    http_session(std::shared_ptr<server_state> state, tcp::socket socket, std::uint64_t id,
                 listener which, share slot)
        : state_(std::move(state)),
          entry_(*state_),
          slot_(std::move(slot)),
          executor_(socket.get_executor()),
          stream_(std::move(socket)),
          id_(id),
          listener_(which) {}

    ~http_session() override {
        state_->open_connections.fetch_sub(1);
        state_->metrics.open_connections.add(-1);
    }

    const asio::any_io_executor& executor() const noexcept { return executor_; }

    void begin_shutdown() override {
        asio::post(executor_, [self = shared_from_this()] {
            self->stopping_ = true;
            // A connection waiting for its next request has nothing in flight: close it now.
            if (self->awaiting_request_ && !self->upgraded_) {
                self->stream_.cancel();
            }
        });
    }

    void force_close() override {
        asio::post(executor_, [self = shared_from_this()] {
            self->stopping_ = true;
            if (!self->upgraded_) {
                self->stream_.close();
            }
        });
    }

    static asio::awaitable<void> run(std::shared_ptr<http_session> self) {
        server_state& st = *self->state_;
        st.track(self->id_, self);
        // Read after tracking: a shutdown that began before this line either saw this session
        // in its snapshot or set the flag read here.
        if (st.stopping.load()) {
            self->stopping_ = true;
        }
        try {
            co_await self->serve();
        } catch (const std::exception& e) {
            log::error("connection " + std::to_string(self->id_) + ": " + e.what());
        }
        if (!self->upgraded_) {
            boost::system::error_code ignored;
            self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
            self->stream_.close();
        }
        st.untrack(self->id_);
    }

private:
    asio::awaitable<void> serve() {
        const auto request_timeout =
            std::chrono::milliseconds(state_->settings.handshake_timeout_ms);
        const auto header_timeout = std::chrono::milliseconds(state_->settings.header_timeout_ms);
        beast::flat_buffer buffer;
        for (bool first = true;; first = false) {
            if (stopping_) {
                co_return;
            }
            http::request_parser<http::string_body> parser;
            parser.header_limit(static_cast<std::uint32_t>(limits::http_header_bytes_max));
            parser.body_limit(limits::http_body_bytes_max);
            awaiting_request_ = true;
            if (!first && buffer.size() == 0) {
                // Kept alive between requests: the next may take handshake_timeout_ms to begin.
                stream_.expires_after(request_timeout);
                auto [ec, bytes] =
                    co_await stream_.async_read_some(buffer.prepare(limits::http_header_read_bytes),
                                                     asio::as_tuple(asio::use_awaitable));
                if (ec) {
                    co_return;
                }
                buffer.commit(bytes);
            }
            // The header must be whole within header_timeout_ms of the accept (of its first
            // byte on a kept-alive connection), so that a client that sends half a request and
            // waits holds its connection slot that long, not handshake_timeout_ms.
            stream_.expires_after(header_timeout);
            const header_read head = co_await read_header_block(buffer);
            boost::system::error_code ec = head.ec;
            if (!ec) {
                auto [parse_ec, parsed] = co_await http::async_read_header(
                    stream_, buffer, parser, asio::as_tuple(asio::use_awaitable));
                ec = parse_ec;
            }
            if (ec) {
                awaiting_request_ = false;
                co_await refuse_unreadable(ec);
                co_return;
            }
            const auto violation = head.folded ? std::optional<std::string_view>(
                                                     "a header line starts with a space or a tab "
                                                     "(obs-fold): send each header on one line")
                                               : framing_violation(parser.get());
            if (violation) {
                awaiting_request_ = false;
                co_await refuse_request(problem(400, "bad_request", *violation));
                co_return;
            }
            if (!parser.is_done()) {
                stream_.expires_after(request_timeout);
                auto [body_ec, body_bytes] = co_await http::async_read(
                    stream_, buffer, parser, asio::as_tuple(asio::use_awaitable));
                if (body_ec) {
                    awaiting_request_ = false;
                    co_await refuse_unreadable(body_ec);
                    co_return;
                }
            }
            awaiting_request_ = false;
            auto req = parser.release();
            if (beast::websocket::is_upgrade(req)) {
                co_await upgrade(std::move(req));
                co_return;
            }
            const bool keep_alive_wanted = req.keep_alive();
            const unsigned version = req.version();
            const bool head_only = req.method() == http::verb::head;
            // A Beast verb's name: a fixed set, so a bounded label even for odd methods.
            const std::string_view method = http::to_string(req.method());
            const auto started = std::chrono::steady_clock::now();
            routed_response r = co_await dispatch(std::move(req));
            state_->metrics.count_request(r.route, r.response.status);
            const bool keep_alive = keep_alive_wanted && !stopping_ && !state_->stopping.load();
            const bool written =
                co_await write(to_beast(r.response, version, keep_alive, r.allow), head_only);
            state_->metrics.observe_request(r.route, method, r.response.status,
                                            std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::steady_clock::now() - started));
            if (!written || !keep_alive) {
                co_return;
            }
        }
    }

    // What reading a request's header block found: a read error, or whether a line of it is
    // folded.
    struct header_read {
        boost::system::error_code ec;
        bool folded = false;
    };

    // Reads until `buffer` holds a whole header block (or more than a header may be: Beast's
    // parser then answers 431), and looks for folded lines in it. Beast's parser joins a folded
    // line to the one before without a trace, so only the raw bytes show one.
    asio::awaitable<header_read> read_header_block(beast::flat_buffer& buffer) {
        for (;;) {
            const std::string_view bytes(static_cast<const char*>(buffer.data().data()),
                                         buffer.size());
            if (const auto n = header_block_length(bytes); n != std::string_view::npos) {
                co_return header_read{{}, has_folded_line(bytes.substr(0, n))};
            }
            if (bytes.size() > limits::http_header_bytes_max) {
                co_return header_read{};
            }
            auto [ec, got] =
                co_await stream_.async_read_some(buffer.prepare(limits::http_header_read_bytes),
                                                 asio::as_tuple(asio::use_awaitable));
            if (ec) {
                co_return header_read{ec, false};
            }
            buffer.commit(got);
        }
    }

    // Answers a request that could not be read when an answer helps the client; a timeout, a
    // reset or a closed connection gets none.
    asio::awaitable<void> refuse_unreadable(const boost::system::error_code& ec) {
        http_response r;
        if (ec == http::error::body_limit) {
            r = problem(413, "payload_too_large", "request body is too large");
        } else if (ec == http::error::header_limit) {
            r = problem(431, "headers_too_large", "request headers are too large");
        } else if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
                   ec != http::error::end_of_stream && ec != http::error::partial_message) {
            r = problem(400, "bad_request", "malformed HTTP request");
        } else {
            co_return;
        }
        co_await refuse_request(std::move(r));
    }

    // Answers a request that is refused before it is read whole, and closes: what follows its
    // header cannot be trusted to be where the client meant the next request to start.
    asio::awaitable<void> refuse_request(http_response r) {
        state_->metrics.count_request("unmatched", r.status);
        const bool written = co_await write(to_beast(r, 11, false));
        if (written) {
            co_await linger(stream_);
        }
    }

    asio::awaitable<bool> write(http::response<http::string_body> res, bool head_only = false) {
        stream_.expires_after(std::chrono::milliseconds(state_->settings.handshake_timeout_ms));
        co_return co_await write_response(stream_, std::move(res), head_only);
    }

    asio::awaitable<routed_response> dispatch(http::request<http::string_body> req) {
        server_state& st = *state_;
        const auto [path, query] = split(req.target());
        const std::string method(req.method_string());
        route_match m = match_route(st.routes, method, path);
        if (m.kind != match_kind::not_found && !serves_route(listener_, *m.route)) {
            // Another listener's route (admin_listen): as if it did not exist here.
            m = route_match{};
        }
        if (m.kind == match_kind::not_found) {
            if (auto ep = endpoint_at(path); ep && serves_endpoint(*ep)) {
                co_return routed_response{
                    ws_route_name(*ep),
                    problem(426, "upgrade_required", "this endpoint speaks WebSocket"),
                    {}};
            }
            co_return routed_response{
                "unmatched", problem(404, "not_found", "no such resource"), {}};
        }
        if (m.kind == match_kind::method_not_allowed) {
            co_return routed_response{
                m.route->name,
                problem(405, "method_not_allowed", "method not allowed on this resource"), m.allow};
        }
        const http_route& route = *m.route;
        http_request hreq;
        if (route.auth != route_auth::none) {
            const auto kind =
                route.auth == route_auth::admin ? token::kind::admin : token::kind::producer;
            auto claims = authorize(extract_token(req[http::field::authorization], query),
                                    st.svc.token_keys, unix_now_s(), kind, st.metrics);
            if (!claims) {
                co_return routed_response{
                    route.name, problem(401, "unauthorized", claims.error()), {}};
            }
            hreq.claims = std::move(*claims);
        }
        hreq.method = method;
        hreq.path = std::string(path);
        hreq.query = std::string(query);
        hreq.content_type = std::string(req[http::field::content_type]);
        if (const auto key = req.find("Idempotency-Key"); key != req.end()) {
            hreq.idempotency_key = std::string(key->value());
        }
        hreq.body = std::move(req.body());
        // With GCC 12, a co_await inside this braced initializer crashed (a string freed twice);
        // awaiting into a local first does not.
        routed_response out{route.name, {}, {}};
        bool failed = false;
        try {
            if (st.on_main_loop()) {
                out.response = co_await route.handler(std::move(hreq));
            } else {
                // Routes use the main loop's pools and services: the route runs there, and this
                // connection resumes on its own loop with the response.
                out.response = co_await asio::co_spawn(st.ioc, route.handler(std::move(hreq)),
                                                       asio::use_awaitable);
            }
        } catch (const std::exception& e) {
            log::error("route " + route.name + ": " + e.what());
            failed = true;
        }
        if (failed) {
            out.response = problem(500, "internal", "internal error");
        }
        co_return out;
    }

    asio::awaitable<void> upgrade(http::request<http::string_body> req) {
        server_state& st = *state_;
        const auto [path, query] = split(req.target());
        const auto ep = endpoint_at(path);
        const unsigned version = req.version();
        if (!ep || !serves_endpoint(*ep)) {
            const auto r = problem(404, "not_found", "no WebSocket endpoint here");
            st.metrics.count_request("unmatched", r.status);
            co_await write(to_beast(r, version, false));
            co_return;
        }
        if (stopping_ || st.stopping.load()) {
            const auto r = problem(503, "shutting_down", "the server is shutting down");
            st.metrics.count_request(ws_route_name(*ep), r.status);
            co_await write(to_beast(r, version, false));
            co_return;
        }
        const auto required =
            *ep == ws_endpoint::bets ? token::kind::account : token::kind::producer;
        auto claims = authorize(extract_token(req[http::field::authorization], query),
                                st.svc.token_keys, unix_now_s(), required, st.metrics);
        if (!claims) {
            const auto r = problem(401, "unauthorized", claims.error());
            st.metrics.count_request(ws_route_name(*ep), r.status);
            co_await write(to_beast(r, version, false));
            co_return;
        }
        // One account's (or producer's) share of the sessions, held until the session ends, so
        // that one token cannot take every connection slot.
        std::string holder = *ep == ws_endpoint::bets
                                 ? "account:" + std::to_string(claims->account_id)
                                 : "producer:" + claims->producer;
        share session_slot = st.session_shares.take(holder);
        if (!session_slot) {
            st.note_refusal(refusal::account, holder);
            const auto r =
                problem(503, "unavailable",
                        "too many WebSocket sessions for this " +
                            std::string(*ep == ws_endpoint::bets ? "account" : "producer") +
                            ": close one, or retry later");
            st.metrics.count_request(ws_route_name(*ep), r.status);
            co_await write(to_beast(r, version, false));
            co_return;
        }
        st.metrics.count_request(ws_route_name(*ep), 101);
        upgraded_ = true;
        // The WebSocket stream runs its own handshake and idle timers.
        stream_.expires_never();
        co_await run_websocket_session(state_, std::move(stream_), std::move(req), *ep,
                                       std::move(*claims), id_);
    }

    // Whether this connection's listener serves the WebSocket endpoint `ep`: the bettors' on
    // the bettors' listener, the feed on the operators'; both when there is one listener.
    bool serves_endpoint(ws_endpoint ep) const noexcept {
        switch (listener_) {
            case listener::all:
                return true;
            case listener::bettors:
                return ep == ws_endpoint::bets;
            case listener::operators:
                return ep != ws_endpoint::bets;
        }
        return false;
    }

    std::shared_ptr<server_state> state_;
    gate_entry entry_;
    share slot_;  ///< of the source address's connections; given back when the session ends
    asio::any_io_executor executor_;
    beast::tcp_stream stream_;
    std::uint64_t id_;
    listener listener_;
    bool stopping_ = false;
    bool awaiting_request_ = false;
    bool upgraded_ = false;  ///< stream_ was moved into a WebSocket session
};

asio::awaitable<void> refuse(std::shared_ptr<server_state> state, tcp::socket socket, refusal why,
                             [[maybe_unused]] share slot, [[maybe_unused]] gate_entry entry) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    // Read the request's header before answering so that closing does not reset a connection
    // with unread data, which would lose the 503 on its way to the client.
    http::request_parser<http::empty_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits::http_header_bytes_max));
    stream.expires_after(std::chrono::milliseconds(limits::refusal_timeout_ms));
    auto [read_ec, read_bytes] = co_await http::async_read_header(
        stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    if (!read_ec) {
        // A health check is answered even here: it costs no more than the 503, and a load
        // balancer must not take "every slot is taken" for "the process is dead".
        const auto& req = parser.get();
        const bool head_only = req.method() == http::verb::head;
        std::optional<http_response> health;
        if (head_only || req.method() == http::verb::get) {
            health = health_check(*state, split(req.target()).path);
        }
        std::string_view route = "refused";
        http_response answer;
        if (health) {
            route = split(req.target()).path.substr(1);
            answer = std::move(*health);
        } else {
            answer = problem(503, "unavailable",
                             why == refusal::address ? "too many connections from this address"
                                                     : "too many connections");
        }
        state->metrics.count_request(route, answer.status);
        const bool written =
            co_await write_response(stream, to_beast(answer, 11, false), head_only);
        if (written) {
            co_await linger(stream);
        }
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream.close();
    state->rejecting.fetch_sub(1);
}

void log_exception(std::exception_ptr e) {
    if (!e) {
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        log::error(std::string("session: ") + ex.what());
    } catch (...) {
        log::error("session: unknown exception");
    }
}

}  // namespace

void start_http_session(std::shared_ptr<server_state> state, tcp::socket socket, listener which,
                        share slot) {
    const auto id = state->next_connection_id.fetch_add(1);
    auto session = std::make_shared<http_session>(std::move(state), std::move(socket), id, which,
                                                  std::move(slot));
    auto ex = session->executor();
    asio::co_spawn(ex, http_session::run(std::move(session)), log_exception);
}

void start_refusal(std::shared_ptr<server_state> state, tcp::socket socket, std::string who,
                   refusal why) {
    // Refusals are bounded in all and by address: beyond either bound the connection is closed
    // without a word, so that a flood cannot grow these coroutines, and one address cannot take
    // the refusals (the health checks' answers among them) that the others need.
    share slot;
    if (state->rejecting.load() < limits::refusals_max) {
        slot = state->refusal_shares.take(std::move(who));
    }
    if (!slot) {
        boost::system::error_code ignored;
        socket.close(ignored);
        return;
    }
    state->rejecting.fetch_add(1);
    auto ex = socket.get_executor();
    gate_entry entry(*state);
    asio::co_spawn(
        ex, refuse(std::move(state), std::move(socket), why, std::move(slot), std::move(entry)),
        log_exception);
}

}  // namespace fulltime::net::detail
