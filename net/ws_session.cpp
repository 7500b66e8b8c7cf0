#include "net/ws_session.hpp"

#include "fulltime/core/latency_histogram.hpp"
#include "fulltime/core/log.hpp"
#include "fulltime/limits.hpp"
#include "net/ws_message.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <deque>
#include <map>
#include <optional>

namespace fulltime::net::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

using namespace std::chrono_literals;

/// The close code of a session whose token expired (docs/protocol.md): in the range RFC 6455
/// leaves to applications, so that a client can tell it from any other close and reconnect
/// with a new token.
constexpr auto token_expired_close = static_cast<websocket::close_code>(4001);

// One WebSocket connection. Everything here runs on executor_ (the connection's strand): the
// read loop, the writer, the request coroutines and the callbacks posted by shutdown and push.
// Beast allows one outstanding write, so only the writer writes; everyone else enqueues.
/// Holds one message waiting for the writer, and for a timed reply what to record once written.
struct outgoing {
    std::string text;
    std::chrono::steady_clock::time_point queued;
    std::chrono::steady_clock::time_point received;
    const endpoint_handler* timed = nullptr;  ///< its handler, when it times its replies
};

class ws_session final : public tracked_connection,
                         public push_target,
                         public std::enable_shared_from_this<ws_session> {
public:
    ws_session(std::shared_ptr<server_state> state, beast::tcp_stream stream, ws_endpoint endpoint,
               token::claims claims, std::uint64_t id)
        : state_(std::move(state)),
          executor_(stream.get_executor()),
          ws_(std::move(stream)),
          wake_(executor_),
          close_deadline_(executor_),
          expiry_(executor_),
          endpoint_(endpoint),
          claims_(std::move(claims)),
          id_(id),
          handlers_(endpoint == ws_endpoint::bets ? &state_->svc.bets : &state_->svc.feed),
          inflight_max_(state_->settings.inflight_per_connection_max) {}

    static asio::awaitable<void> run(std::shared_ptr<ws_session> self,
                                     http::request<http::string_body> request) {
        using namespace asio::experimental::awaitable_operators;
        server_state& st = *self->state_;
        const auto& settings = st.settings;
        websocket::stream_base::timeout timeouts{};
        timeouts.handshake_timeout = std::chrono::milliseconds(settings.handshake_timeout_ms);
        timeouts.idle_timeout = std::chrono::milliseconds(settings.idle_timeout_ms);
        // Pings at half the idle timeout keep a quiet but live client connected and find a dead
        // one within the idle timeout.
        timeouts.keep_alive_pings = true;
        self->ws_.set_option(timeouts);
        // Beast fails a read over this size with message_too_big and closes with 1009.
        self->ws_.read_message_max(settings.frame_bytes_max);
        self->ws_.set_option(websocket::stream_base::decorator(
            [](websocket::response_type& res) { res.set(http::field::server, "fulltime"); }));
        auto [ec] = co_await self->ws_.async_accept(request, asio::as_tuple(asio::use_awaitable));
        if (ec) {
            log::info("connection " + std::to_string(self->id_) +
                      ": websocket accept failed: " + ec.message());
            co_return;
        }
        st.track(self->id_, self);
        st.metrics.websocket_sessions(self->endpoint_).add(1);
        if (self->endpoint_ == ws_endpoint::bets) {
            st.connections.add(self->claims_.account_id, self->id_, self);
        }
        // As in the HTTP session: a shutdown that began before track() is seen here.
        if (st.stopping.load()) {
            self->start_draining();
        }
        self->watch_expiry();
        co_await (self->read_loop() && self->write_loop());
        if (self->endpoint_ == ws_endpoint::bets) {
            st.connections.remove(self->claims_.account_id, self->id_);
        }
        st.metrics.websocket_sessions(self->endpoint_).add(-1);
        self->finished_ = true;
        self->close_deadline_.cancel();
        self->expiry_.cancel();
        if (self->queued_peak_ >= limits::write_queue_trim_bytes) {
            st.trim_memory();
        }
    }

    void begin_shutdown() override {
        asio::post(executor_, [self = shared_from_this()] { self->start_draining(); });
    }

    void force_close() override {
        asio::post(executor_, [self = shared_from_this()] { self->close_now(); });
    }

    void push(std::string text, std::uint64_t xid) override {
        // Before the message can reach the client: the account's next read then waits for the
        // projector.
        state_->writes.note(claims_.account_id, xid, 0);
        asio::post(executor_, [self = shared_from_this(), text = std::move(text)]() mutable {
            self->enqueue(std::move(text));
        });
    }

private:
    asio::awaitable<void> read_loop() {
        beast::flat_buffer buffer;
        for (;;) {
            buffer.clear();
            auto [ec, bytes] = co_await ws_.async_read(buffer, asio::as_tuple(asio::use_awaitable));
            const auto received = std::chrono::steady_clock::now();
            if (ec) {
                if (ec == websocket::error::message_too_big) {
                    state_->metrics.frames_too_big.inc();
                    log::info("connection " + std::to_string(id_) +
                              ": message over frame_bytes_max, closed with 1009");
                }
                break;
            }
            state_->metrics.ws_messages(endpoint_).inc();
            if (close_code_) {
                // The session is closing; a late message gets no answer.
                continue;
            }
            if (!ws_.got_text()) {
                enqueue(to_wire(error_reply(nullptr, "invalid_request",
                                            "binary frames are not accepted: send JSON text")));
                continue;
            }
            const std::string_view text(static_cast<const char*>(buffer.data().data()),
                                        buffer.size());
            auto parsed = parse_message(text, *handlers_, endpoint_ == ws_endpoint::bets);
            if (auto* reply = std::get_if<nlohmann::json>(&parsed)) {
                enqueue(to_wire(*reply));
                continue;
            }
            auto& message = std::get<inbound_message>(parsed);
            if (!expired_ && token_expired()) {
                on_token_expired();
            }
            if (expired_) {
                enqueue(to_wire(error_reply(std::move(message.id), "unauthorized",
                                            "the token has expired: reconnect with a new one")));
                continue;
            }
            if (stopping_) {
                enqueue(to_wire(busy_reply(std::move(message.id), "the server is shutting down")));
                continue;
            }
            if (inflight_ >= inflight_max_) {
                // Refused at once and never queued, so memory stays bounded by the limit.
                state_->metrics.busy.inc();
                enqueue(to_wire(busy_reply(std::move(message.id), "too many requests in flight")));
                continue;
            }
            start_request(std::move(message), received);
        }
        reading_done_ = true;
        wake_.cancel();
        if (!writer_done_) {
            // The peer is gone or broke the protocol: a write to it may never complete.
            close_socket();
        }
    }

    asio::awaitable<void> write_loop() {
        for (;;) {
            if (reading_done_ || closed_now_) {
                break;
            }
            if (!queue_.empty()) {
                // Several replies waiting (a group answered several of this connection's
                // requests): cork the socket so that they leave in as few segments as the
                // kernel can make, each costing a transmit here and a receive at the client.
                if (queue_.size() > 1 && !corked_) {
                    corked_ = set_cork(true);
                }
                // It stays counted in queued_bytes_ until written: the write holds it.
                outgoing next = std::move(queue_.front());
                queue_.pop_front();
                ws_.text(true);
                auto [ec, bytes] = co_await ws_.async_write(asio::buffer(next.text),
                                                            asio::as_tuple(asio::use_awaitable));
                release(next.text.size());
                if (ec) {
                    // Nothing more can reach this client, so the connection ends here: closing
                    // the socket ends the read loop too. Left open, the session would go on
                    // taking requests and dropping their replies (enqueue() does once the
                    // writer is done), and a client still waiting on it would never learn to
                    // reconnect.
                    close_socket();
                    break;
                }
                if (corked_ && queue_.empty()) {
                    corked_ = !set_cork(false);
                }
                if (next.timed != nullptr) {
                    record_written(next);
                }
                continue;
            }
            if (close_code_) {
                // The read loop ends when the client answers the close (error::closed), or when
                // the close deadline closes the socket.
                co_await ws_.async_close(close_reason(), asio::as_tuple(asio::use_awaitable));
                break;
            }
            wake_.expires_at(asio::steady_timer::time_point::max());
            co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        writer_done_ = true;
        drop_queue();
    }

    // Sets TCP_CORK; returns whether it took. Uncorking sends what the cork held at once.
    bool set_cork(bool on) {
        const int value = on ? 1 : 0;
        auto& socket = beast::get_lowest_layer(ws_).socket();
        return ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_CORK, &value, sizeof value) ==
               0;
    }

    static void record_written(const outgoing& o) {
        using std::chrono::duration_cast;
        using std::chrono::microseconds;
        const auto now = std::chrono::steady_clock::now();
        if (o.timed->write_time != nullptr) {
            o.timed->write_time->record(duration_cast<microseconds>(now - o.queued));
        }
        if (o.timed->total_time != nullptr) {
            o.timed->total_time->record(duration_cast<microseconds>(now - o.received));
        }
    }

    void enqueue(std::string text) { enqueue(outgoing{std::move(text), {}, {}, nullptr}); }

    void enqueue(outgoing o) {
        if (writer_done_ || close_code_ || closed_now_) {
            return;
        }
        if (const char* why = over_bound(o.text.size())) {
            state_->metrics.slow_consumers.inc();
            log::warn("connection " + std::to_string(id_) +
                      ": client does not read its messages (" + std::to_string(queue_.size()) +
                      " messages, " + std::to_string(queued_bytes_) + " bytes queued; " + why +
                      "), closing");
            drop_queue();
            request_close(websocket::close_code::policy_error);
            return;
        }
        const std::size_t size = o.text.size();
        queue_.push_back(std::move(o));
        queued_bytes_ += size;
        queued_peak_ = std::max(queued_peak_, queued_bytes_);
        state_->ws_queued_bytes.fetch_add(size, std::memory_order_relaxed);
        state_->metrics.queued_bytes.add(static_cast<std::int64_t>(size));
        wake_.cancel();
    }

    // Returns why one more message of `size` bytes would take this session past a bound, or
    // null when it may be queued. A message always fits an empty queue: the bounds are on what
    // a client leaves unread, never on one reply.
    const char* over_bound(std::size_t size) const {
        if (queue_.empty()) {
            return nullptr;
        }
        if (queue_.size() >= limits::ws_write_queue_max) {
            return "the message count bound";
        }
        if (queued_bytes_ + size > state_->settings.write_queue_bytes_max) {
            return "gateway.write_queue_bytes_max";
        }
        // The process bound closes those that hold more than a reply or two; a session that
        // reads its replies as they come keeps getting them.
        if (queued_bytes_ > limits::write_queue_share_floor_bytes &&
            state_->ws_queued_bytes.load(std::memory_order_relaxed) + size >
                state_->settings.write_queue_bytes_total_max) {
            return "gateway.write_queue_bytes_total_max";
        }
        return nullptr;
    }

    // Forgets `size` bytes that were written or dropped.
    void release(std::size_t size) {
        queued_bytes_ -= size;
        state_->ws_queued_bytes.fetch_sub(size, std::memory_order_relaxed);
        state_->metrics.queued_bytes.add(-static_cast<std::int64_t>(size));
    }

    void drop_queue() {
        for (const auto& o : queue_) {
            release(o.text.size());
        }
        queue_.clear();
        // Gives the deque's blocks back too: a session closed for its queue keeps nothing.
        queue_.shrink_to_fit();
    }

    websocket::close_reason close_reason() const {
        if (close_code_ == token_expired_close) {
            return websocket::close_reason(token_expired_close, "token expired");
        }
        return websocket::close_reason(*close_code_);
    }

    bool token_expired() const {
        return claims_.expires_at_s > 0 &&
               std::chrono::system_clock::now() >= std::chrono::system_clock::time_point(
                                                       std::chrono::seconds(claims_.expires_at_s));
    }

    // Closes the session when its token expires: a session lives no longer than the token it
    // was opened with.
    void watch_expiry() {
        if (claims_.expires_at_s <= 0) {
            return;
        }
        const auto at =
            std::chrono::system_clock::time_point(std::chrono::seconds(claims_.expires_at_s));
        const auto left = at - std::chrono::system_clock::now();
        expiry_.expires_after(std::max<std::chrono::steady_clock::duration>(
            std::chrono::steady_clock::duration::zero(),
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(left)));
        expiry_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
            auto self = weak.lock();
            if (!ec && self && !self->finished_) {
                self->on_token_expired();
            }
        });
    }

    // Takes no more requests; those in flight finish and are answered, then the session closes
    // with token_expired_close.
    void on_token_expired() {
        if (expired_) {
            return;
        }
        expired_ = true;
        state_->metrics.sessions_expired.inc();
        if (inflight_ == 0) {
            request_close(token_expired_close);
        }
    }

    // Schedules the close frame after what is already queued, with a deadline for the client
    // to answer (or to drain its queue when the writer is stuck).
    void request_close(websocket::close_code code) {
        if (close_code_ || closed_now_) {
            return;
        }
        close_code_ = code;
        wake_.cancel();
        close_deadline_.expires_after(
            std::chrono::milliseconds(state_->settings.handshake_timeout_ms));
        close_deadline_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
            auto self = weak.lock();
            if (!ec && self && !self->finished_) {
                self->close_now();
            }
        });
    }

    void start_draining() {
        stopping_ = true;
        if (inflight_ == 0) {
            request_close(draining_close());
        }
    }

    // The close a draining session sends once its requests are answered.
    websocket::close_code draining_close() const {
        return expired_ ? token_expired_close : websocket::close_code::going_away;
    }

    void close_now() {
        closed_now_ = true;
        for (auto& [rid, signal] : signals_) {
            signal.emit(asio::cancellation_type::terminal);
        }
        close_socket();
        wake_.cancel();
    }

    void close_socket() {
        boost::system::error_code ignored;
        beast::get_lowest_layer(ws_).socket().close(ignored);
    }

    void start_request(inbound_message message, std::chrono::steady_clock::time_point received) {
        ++inflight_;
        const std::uint64_t rid = next_request_id_++;
        auto& signal = signals_[rid];
        asio::co_spawn(
            executor_,
            handle(shared_from_this(), gate_entry(*state_), std::move(message), received),
            asio::bind_cancellation_slot(
                signal.slot(), [self = shared_from_this(), rid](std::exception_ptr) {
                    // The signal must outlive the coroutine's use of it; erase it
                    // only after the spawned thread has fully unwound.
                    asio::post(self->executor_, [self, rid] { self->signals_.erase(rid); });
                }));
    }

    static asio::awaitable<void> handle(std::shared_ptr<ws_session> self,
                                        [[maybe_unused]] gate_entry entry, inbound_message message,
                                        std::chrono::steady_clock::time_point received) {
        nlohmann::json reply;
        bool failed = false;
        const endpoint_handler& handler = self->handlers_->find(message.type)->second;
        try {
            const request_context context{self->claims_,   self->id_, self->endpoint_,
                                          self->executor_, received,  &self->state_->writes};
            if (handler.on_connection_loop || self->state_->on_main_loop()) {
                reply = co_await handler.run(context, std::move(message.body));
            } else {
                // The main loop owns what this handler uses: it runs there, and this coroutine
                // resumes here with its reply. The session's cancellation is not forwarded to
                // it: Asio (1.81) delivers that by posting to the main loop a call on the
                // spawned coroutine's state, which the coroutine may have freed by then
                // (a crash when a slow consumer with requests in flight was force-closed).
                // Such a handler ends within its own database deadlines; a closed session
                // drops its reply.
                reply = co_await asio::co_spawn(
                    self->state_->ioc, handler.run(context, std::move(message.body)),
                    asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
            }
        } catch (const std::exception& e) {
            log::error("connection " + std::to_string(self->id_) + ": handler of \"" +
                       message.type + "\" failed: " + e.what());
            failed = true;
        } catch (...) {
            log::error("connection " + std::to_string(self->id_) + ": handler of \"" +
                       message.type + "\" failed");
            failed = true;
        }
        if (failed) {
            self->state_->metrics.handler_errors.inc();
            reply = error_reply(std::move(message.id), "internal", "internal error");
        }
        --self->inflight_;
        const bool timed = handler.write_time != nullptr || handler.total_time != nullptr;
        self->enqueue(outgoing{
            to_wire(reply),
            timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{},
            received, timed ? &handler : nullptr});
        if ((self->stopping_ || self->expired_) && self->inflight_ == 0) {
            self->request_close(self->draining_close());
        }
    }

    std::shared_ptr<server_state> state_;
    asio::any_io_executor executor_;
    websocket::stream<beast::tcp_stream> ws_;
    asio::steady_timer wake_;            ///< the writer sleeps on it; cancel() wakes it
    asio::steady_timer close_deadline_;  ///< bounds the closing handshake
    asio::steady_timer expiry_;          ///< fires when the session's token expires
    ws_endpoint endpoint_;
    token::claims claims_;
    std::uint64_t id_;
    const endpoint_handlers* handlers_;
    std::size_t inflight_max_;

    std::deque<outgoing> queue_;    ///< at most limits::ws_write_queue_max
    std::size_t queued_bytes_ = 0;  ///< queue_'s texts and the one being written
    std::size_t queued_peak_ = 0;   ///< the most queued_bytes_ has been
    std::size_t inflight_ = 0;      ///< at most inflight_max_
    std::uint64_t next_request_id_ = 1;
    std::map<std::uint64_t, asio::cancellation_signal> signals_;  ///< one per in-flight request
    std::optional<websocket::close_code> close_code_;             ///< set once: the close to send
    bool stopping_ = false;  ///< shutdown began: finish in-flight requests, take no more
    bool expired_ = false;   ///< the token expired: finish in-flight requests, take no more
    bool reading_done_ = false;
    bool writer_done_ = false;
    bool closed_now_ = false;  ///< socket closed without a handshake
    bool corked_ = false;      ///< TCP_CORK is set while a burst of replies is written
    bool finished_ = false;
};

}  // namespace

asio::awaitable<void> run_websocket_session(std::shared_ptr<server_state> state,
                                            beast::tcp_stream stream,
                                            http::request<http::string_body> request,
                                            ws_endpoint endpoint, token::claims claims,
                                            std::uint64_t connection_id) {
    auto session = std::make_shared<ws_session>(std::move(state), std::move(stream), endpoint,
                                                std::move(claims), connection_id);
    co_await ws_session::run(std::move(session), std::move(request));
}

}  // namespace fulltime::net::detail
