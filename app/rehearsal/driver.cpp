#include "app/rehearsal/driver.hpp"

#include "fulltime/core/token.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

namespace fulltime::app::rehearsal {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;
using nlohmann::json;

constexpr auto tuple_token = asio::as_tuple(asio::use_awaitable);
constexpr auto io_timeout = std::chrono::seconds(10);
constexpr auto reconnect_pause = std::chrono::milliseconds(100);
constexpr auto retry_pause = std::chrono::milliseconds(100);
// A bettor's connection that has requests waiting and has said nothing for this long is closed
// and opened again: longer than the engine's own deadline on a placement (5 s by default).
constexpr auto silence_max = std::chrono::seconds(10);
constexpr std::int64_t token_ttl_s = 24 * 3600;
// Requests one preload connection keeps in flight: enough to keep the engine's placement
// actors fed, few enough that a refusal is noticed before many more are sent.
constexpr std::size_t preload_inflight_max = 8;
constexpr std::size_t preload_workers_max = 32;

std::int64_t epoch_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

asio::awaitable<void> pause(std::chrono::steady_clock::duration d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(tuple_token);
}

// One keep-alive HTTP connection, opened again after any failure.
struct http_connection {
    std::optional<beast::tcp_stream> stream;
    beast::flat_buffer buffer;
};

asio::awaitable<http_reply> http_once(http_connection& c, std::uint16_t port, http::verb verb,
                                      std::string target, std::string bearer, std::string body) {
    http_reply out;
    auto ex = co_await asio::this_coro::executor;
    if (!c.stream) {
        c.stream.emplace(ex);
        c.buffer.clear();
        c.stream->expires_after(io_timeout);
        auto [ec] = co_await c.stream->async_connect(
            tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), tuple_token);
        if (ec) {
            c.stream.reset();
            out.error = "connect: " + ec.message();
            co_return out;
        }
        beast::error_code ignored;
        c.stream->socket().set_option(tcp::no_delay(true), ignored);
    }
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::authorization, "Bearer " + bearer);
    req.keep_alive(true);
    if (verb == http::verb::post) {
        req.set(http::field::content_type, "application/json");
        req.body() = std::move(body);
        req.prepare_payload();
    }
    c.stream->expires_after(io_timeout);
    auto [wec, wn] = co_await http::async_write(*c.stream, req, tuple_token);
    if (wec) {
        c.stream.reset();
        out.error = "write: " + wec.message();
        co_return out;
    }
    http::response<http::string_body> res;
    auto [rec, rn] = co_await http::async_read(*c.stream, c.buffer, res, tuple_token);
    if (rec) {
        c.stream.reset();
        out.error = "read: " + rec.message();
        co_return out;
    }
    out.status = res.result_int();
    out.body = std::move(res.body());
    if (!res.keep_alive()) {
        c.stream.reset();
    }
    co_return out;
}

// Waits for a set of coroutines on one thread: each calls done() when it ends.
struct latch {
    explicit latch(asio::any_io_executor ex, std::size_t n)
        : pending(n), timer(ex, clock_type::time_point::max()) {}
    void done() {
        if (--pending == 0) {
            timer.cancel();
        }
    }
    asio::awaitable<void> wait() {
        while (pending > 0) {
            co_await timer.async_wait(tuple_token);
        }
    }
    std::size_t pending;
    asio::steady_timer timer;
};

using ws_stream = websocket::stream<beast::tcp_stream>;

asio::awaitable<std::unique_ptr<ws_stream>> open_ws(std::uint16_t port, std::string token) {
    auto ws = std::make_unique<ws_stream>(co_await asio::this_coro::executor);
    auto& tcp_layer = beast::get_lowest_layer(*ws);
    tcp_layer.expires_after(io_timeout);
    auto [ec] = co_await tcp_layer.async_connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), tuple_token);
    if (ec) {
        co_return nullptr;
    }
    beast::error_code ignored;
    tcp_layer.socket().set_option(tcp::no_delay(true), ignored);
    auto [hec] = co_await ws->async_handshake("127.0.0.1", "/v1/bets?token=" + token, tuple_token);
    if (hec) {
        co_return nullptr;
    }
    tcp_layer.expires_never();
    co_return ws;
}

std::string place_text(const std::string& id, const std::string& key, std::int64_t selection,
                       const std::string& stake) {
    return json{
        {"type", "place"}, {"id", id},       {"idempotency_key", key}, {"selection_id", selection},
        {"stake", stake},  {"odds", "1.01"}, {"accept", "any"}}
        .dump();
}

std::string account_json(std::int64_t id) {
    return json{{"account_id", id}, {"currency", rehearsal_currency}}.dump();
}

std::string deposit_json(const std::string& amount) {
    return json{{"amount", amount}, {"key", "rehearsal"}}.dump();
}

// The completion of every coroutine the driver spawns: an exception ends the coroutine, so it
// is said loudly (a bettor that silently stopped would read as an engine that stopped answering).
struct report_exception {
    const char* what;
    void operator()(std::exception_ptr e) const {
        if (!e) {
            return;
        }
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            std::fprintf(stderr, "rehearse: %s stopped on an exception: %s\n", what, ex.what());
        }
    }
};

/// Holds what one reply to a place says.
struct place_reply {
    std::string id;
    enum class kind { placed, refused, retry, other } what = kind::other;
    std::int64_t bet_id = 0;
    std::string outcome;
};

std::optional<place_reply> read_place_reply(const std::string& text) {
    const auto j = json::parse(text, nullptr, false);
    if (!j.is_object()) {
        return std::nullopt;
    }
    const auto id = j.find("id");
    if (id == j.end() || !id->is_string()) {
        return std::nullopt;  // a push (bet_settled) or an error with no id
    }
    place_reply r;
    r.id = id->get<std::string>();
    const std::string type = j.value("type", "");
    const std::string code = j.value("code", "");
    if (type == "placed") {
        r.what = place_reply::kind::placed;
        r.outcome = "placed";
        if (const auto bet = j.find("bet"); bet != j.end() && bet->is_object()) {
            r.bet_id = bet->value("bet_id", std::int64_t{0});
        }
    } else if ((type == "rejected" && code == "busy") || (type == "error" && code == "internal")) {
        // Not the key's result: the request may or may not have run. Sent again with its key.
        r.what = place_reply::kind::retry;
    } else if (type == "rejected") {
        r.what = place_reply::kind::refused;
        r.outcome = "rejected " + code;
    } else {
        r.what = place_reply::kind::other;
        r.outcome = type + " " + code;
    }
    return r;
}

/// Holds one live bettor: its account's connection, the requests it waits on, and those to
/// send (again) once connected.
struct bettor {
    std::size_t index = 0;
    std::int64_t account = 0;
    std::string token;
    std::unique_ptr<ws_stream> ws;
    bool connected = false;
    bool writing = false;
    std::map<std::string, std::size_t> pending;  ///< request id -> index into requests
    std::deque<std::size_t> unsent;
    std::optional<asio::steady_timer> wake;
    std::mt19937_64 rng;
    clock_type::time_point heard;  ///< the connection's last reply (or its opening)
};

}  // namespace

struct driver::impl {
    asio::io_context ioc;
    asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
    std::thread thread;
    std::uint16_t port;
    std::string secret;
    std::string admin_token;
    std::string producer_token;
    clock_type::time_point t0 = clock_type::now();

    // The live bettors (touched on the io thread only, but for the summary after they end).
    bettor_settings live;
    std::vector<std::unique_ptr<bettor>> bettors;
    std::vector<acknowledgement> requests;
    std::vector<answered> replies;
    std::uint64_t reconnects = 0;
    std::uint64_t retries = 0;
    std::uint64_t silent_connections = 0;
    bool stopping = false;
    std::size_t sessions_running = 0;

    // The sampler.
    bool sampling = false;
    bool sampler_running = false;
    std::vector<backlog_reading> backlog;
    std::vector<diagnosis_seen> verdicts;
    std::vector<std::int64_t> watched;  ///< markets whose event watched_seq is not seen applied
    std::int64_t watched_seq = 0;
    std::optional<double> applied_s;

    double now_s() const { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

    std::string account_token(std::int64_t account) const {
        token::claims c;
        c.kind = token::kind::account;
        c.account_id = account;
        c.expires_at_s = epoch_s() + token_ttl_s;
        return token::sign(c, secret);
    }

    template <class T>
    T run(asio::awaitable<T> work_item) {
        return asio::co_spawn(ioc, std::move(work_item), asio::use_future).get();
    }

    // One request, sent again after a failed connection or a 503 until `deadline`.
    asio::awaitable<http_reply> call(http_connection& c, http::verb verb, std::string target,
                                     std::string body, clock_type::time_point deadline) {
        const std::string& bearer = target.rfind("/v1/feed", 0) == 0 ? producer_token : admin_token;
        for (;;) {
            auto r = co_await http_once(c, port, verb, target, bearer, body);
            if ((r.status != 0 && r.status != 503) || clock_type::now() >= deadline) {
                co_return r;
            }
            co_await pause(retry_pause);
        }
    }

    // --- accounts --------------------------------------------------------------------------

    asio::awaitable<void> account_worker(std::int64_t& next, std::int64_t last, std::string deposit,
                                         std::string& failure, latch& l) {
        http_connection c;
        while (next <= last && failure.empty()) {
            const std::int64_t id = next++;
            const auto deadline = clock_type::now() + std::chrono::seconds(60);
            // The bodies are built before the co_await: GCC 12 miscompiles a braced JSON
            // temporary in a co_await's arguments.
            std::string account_body = account_json(id);
            std::string deposit_body = deposit_json(deposit);
            auto created = co_await call(c, http::verb::post, "/v1/accounts",
                                         std::move(account_body), deadline);
            if (created.status != 200 && created.status != 201) {
                failure = "account " + std::to_string(id) + ": " + std::to_string(created.status) +
                          " " + created.body + created.error;
                break;
            }
            auto deposited = co_await call(c, http::verb::post,
                                           "/v1/accounts/" + std::to_string(id) + "/deposits",
                                           std::move(deposit_body), deadline);
            if (deposited.status != 200 && deposited.status != 201) {
                failure = "deposit to account " + std::to_string(id) + ": " +
                          std::to_string(deposited.status) + " " + deposited.body + deposited.error;
                break;
            }
        }
        l.done();
    }

    asio::awaitable<std::string> create_accounts(std::int64_t first, std::int64_t count,
                                                 std::string deposit, std::size_t workers) {
        std::int64_t next = first;
        std::string failure;
        latch l(co_await asio::this_coro::executor, workers);
        for (std::size_t w = 0; w < workers; ++w) {
            asio::co_spawn(ioc, account_worker(next, first + count - 1, deposit, failure, l),
                           report_exception{"an account worker"});
        }
        co_await l.wait();
        co_return failure;
    }

    // --- preload ---------------------------------------------------------------------------

    // Places `bets` bets for one account over one connection, at most preload_inflight_max in
    // flight, paced by `gap` per bet. A busy reply or a lost connection sends again with the
    // same key. Returns "" or the first refusal.
    asio::awaitable<std::string> preload_account(std::int64_t account, std::int64_t bets,
                                                 std::vector<std::int64_t> selections,
                                                 std::string stake, std::string prefix,
                                                 clock_type::duration gap,
                                                 clock_type::time_point& next_send) {
        const std::string tok = account_token(account);
        std::deque<std::int64_t> todo;
        for (std::int64_t i = 0; i < bets; ++i) {
            todo.push_back(i);
        }
        const auto give_up = clock_type::now() + std::chrono::seconds(60);
        while (!todo.empty()) {
            auto ws = co_await open_ws(port, tok);
            if (!ws) {
                if (clock_type::now() > give_up) {
                    co_return "account " + std::to_string(account) +
                        ": the engine did not accept a connection for 60 s";
                }
                co_await pause(reconnect_pause);
                continue;
            }
            std::map<std::string, std::int64_t> inflight;
            beast::flat_buffer buffer;
            bool broken = false;
            while ((!todo.empty() || !inflight.empty()) && !broken) {
                while (!todo.empty() && inflight.size() < preload_inflight_max) {
                    if (clock_type::now() < next_send) {
                        co_await pause(next_send - clock_type::now());
                    }
                    next_send += gap;
                    const std::int64_t i = todo.front();
                    todo.pop_front();
                    const std::string key =
                        prefix + std::to_string(account) + "-" + std::to_string(i);
                    const std::string id = std::to_string(i);
                    inflight.emplace(id, i);
                    const auto sel = selections[static_cast<std::size_t>(
                        (account + i) % static_cast<std::int64_t>(selections.size()))];
                    auto [wec, wn] = co_await ws->async_write(
                        asio::buffer(place_text(id, key, sel, stake)), tuple_token);
                    if (wec) {
                        broken = true;
                        break;
                    }
                }
                if (broken || inflight.empty()) {
                    break;
                }
                buffer.clear();
                auto [rec, rn] = co_await ws->async_read(buffer, tuple_token);
                if (rec) {
                    broken = true;
                    break;
                }
                const auto r = read_place_reply(beast::buffers_to_string(buffer.data()));
                if (!r) {
                    continue;
                }
                const auto it = inflight.find(r->id);
                if (it == inflight.end()) {
                    continue;
                }
                const std::int64_t i = it->second;
                inflight.erase(it);
                if (r->what == place_reply::kind::retry) {
                    todo.push_back(i);
                } else if (r->what != place_reply::kind::placed) {
                    co_return "preload bet " + std::to_string(i) + " of account " +
                        std::to_string(account) + " was refused: " + r->outcome;
                }
            }
            for (const auto& [id, i] : inflight) {
                todo.push_back(i);
            }
            beast::error_code ignored;
            beast::get_lowest_layer(*ws).socket().close(ignored);
        }
        co_return std::string{};
    }

    asio::awaitable<void> preload_worker(std::vector<std::int64_t> accounts,
                                         std::vector<std::int64_t> bets_of,
                                         std::vector<std::int64_t> selections, std::string stake,
                                         std::string prefix, clock_type::duration gap,
                                         std::string& failure, latch& l) {
        auto next_send = clock_type::now();
        for (std::size_t k = 0; k < accounts.size() && failure.empty(); ++k) {
            if (bets_of[k] == 0) {
                continue;
            }
            auto f = co_await preload_account(accounts[k], bets_of[k], selections, stake, prefix,
                                              gap, next_send);
            if (!f.empty() && failure.empty()) {
                failure = std::move(f);
            }
        }
        l.done();
    }

    asio::awaitable<std::string> preload(std::vector<std::int64_t> accounts,
                                         std::vector<std::int64_t> selections, std::string stake,
                                         std::int64_t bets, double rate_per_s, std::string prefix) {
        const std::size_t workers = std::min(preload_workers_max, accounts.size());
        const auto gap = std::chrono::duration_cast<clock_type::duration>(
            std::chrono::duration<double>(static_cast<double>(workers) / rate_per_s));
        const auto n = static_cast<std::int64_t>(accounts.size());
        std::string failure;
        latch l(co_await asio::this_coro::executor, workers);
        for (std::size_t w = 0; w < workers; ++w) {
            std::vector<std::int64_t> mine;
            std::vector<std::int64_t> counts;
            for (std::size_t k = w; k < accounts.size(); k += workers) {
                mine.push_back(accounts[k]);
                const auto idx = static_cast<std::int64_t>(k);
                counts.push_back(bets / n + (idx < bets % n ? 1 : 0));
            }
            asio::co_spawn(ioc,
                           preload_worker(std::move(mine), std::move(counts), selections, stake,
                                          prefix, gap, failure, l),
                           report_exception{"a preload worker"});
        }
        co_await l.wait();
        co_return failure;
    }

    // --- live bettors ----------------------------------------------------------------------

    void wake(bettor& b) {
        if (b.wake) {
            b.wake->cancel();
        }
    }

    asio::awaitable<void> send_later(bettor* b, std::size_t idx) {
        co_await pause(retry_pause);
        if (!stopping) {
            b->unsent.push_back(idx);
            wake(*b);
        }
    }

    void on_reply(bettor& b, const place_reply& r) {
        const auto it = b.pending.find(r.id);
        if (it == b.pending.end()) {
            return;
        }
        const std::size_t idx = it->second;
        b.pending.erase(it);
        auto& req = requests[idx];
        if (r.what == place_reply::kind::retry) {
            // As a client should: a pause before the same request again, not a tight loop
            // against an account whose row stays locked.
            ++retries;
            asio::co_spawn(ioc, send_later(&b, idx), report_exception{"a retry"});
            return;
        }
        if (r.what == place_reply::kind::placed && req.bet_id != 0 && req.bet_id != r.bet_id) {
            req.conflicting = true;
        }
        if (!req.answered) {
            req.answered = true;
            req.outcome = r.outcome;
            req.bet_id = r.bet_id;
            replies.push_back(answered{req.scheduled_s, (now_s() - req.scheduled_s) * 1000.0});
        } else if (req.outcome != r.outcome) {
            req.conflicting = true;
        }
    }

    // Keeps a bettor connected: opens its connection, reads replies until it breaks, then puts
    // what waited for a reply back in front of what is to be sent, and opens it again.
    asio::awaitable<void> bettor_session(bettor* b) {
        ++sessions_running;
        bool first = true;
        while (!stopping) {
            auto ws = co_await open_ws(port, b->token);
            if (!ws) {
                co_await pause(reconnect_pause);
                continue;
            }
            if (!first) {
                ++reconnects;
            }
            first = false;
            b->ws = std::move(ws);
            b->connected = true;
            b->heard = clock_type::now();
            wake(*b);
            beast::flat_buffer buffer;
            for (;;) {
                buffer.clear();
                auto [ec, n] = co_await b->ws->async_read(buffer, tuple_token);
                if (ec) {
                    break;
                }
                b->heard = clock_type::now();
                if (auto r = read_place_reply(beast::buffers_to_string(buffer.data()))) {
                    on_reply(*b, *r);
                    wake(*b);
                }
            }
            b->connected = false;
            beast::error_code ignored;
            beast::get_lowest_layer(*b->ws).socket().close(ignored);
            while (b->writing) {
                co_await pause(std::chrono::milliseconds(5));
            }
            b->ws.reset();
            // Sent but unanswered: sent again, in order, once connected.
            std::vector<std::size_t> again;
            for (const auto& [id, idx] : b->pending) {
                again.push_back(idx);
            }
            std::sort(again.begin(), again.end());
            for (auto it = again.rbegin(); it != again.rend(); ++it) {
                b->unsent.push_front(*it);
            }
            retries += again.size();
            b->pending.clear();
        }
        --sessions_running;
    }

    asio::awaitable<void> bettor_writer(bettor* b) {
        b->wake.emplace(co_await asio::this_coro::executor);
        std::bernoulli_distribution drop(live.retry_ratio);
        while (!stopping) {
            if (!b->connected || b->unsent.empty()) {
                b->wake->expires_after(std::chrono::milliseconds(50));
                co_await b->wake->async_wait(tuple_token);
                continue;
            }
            const std::size_t idx = b->unsent.front();
            b->unsent.pop_front();
            auto& req = requests[idx];
            ++req.sends;
            const std::string id = std::to_string(idx) + "." + std::to_string(req.sends);
            b->pending.emplace(id, idx);
            const auto sel = live.selections[idx % live.selections.size()];
            const std::string text = place_text(id, req.key, sel, live.stake);
            b->writing = true;
            auto [ec, n] = co_await b->ws->async_write(asio::buffer(text), tuple_token);
            b->writing = false;
            if (!ec && drop(b->rng)) {
                // A bettor whose connection drops before the reply: the session reconnects
                // and sends this request again with its key.
                beast::error_code ignored;
                beast::get_lowest_layer(*b->ws).socket().close(ignored);
            }
        }
    }

    // As a client should: a connection that has requests waiting and answers nothing for
    // silence_max is given up; what waited on it is sent again on a new one, with the same keys.
    // (Its own coroutine: a writer blocked on a connection the engine stopped reading could not
    // notice.)
    asio::awaitable<void> watchdog() {
        while (!stopping) {
            co_await pause(std::chrono::seconds(1));
            const auto now = clock_type::now();
            for (auto& b : bettors) {
                if (b->connected && b->ws && !b->pending.empty() && now - b->heard > silence_max) {
                    ++silent_connections;
                    b->heard = now;
                    beast::error_code ignored;
                    beast::get_lowest_layer(*b->ws).socket().close(ignored);
                }
            }
        }
    }

    asio::awaitable<void> bettor_schedule(bettor* b) {
        const double share = live.rate_per_s / static_cast<double>(bettors.size());
        const double gap_s = 1.0 / share;
        // Connections' schedules spread over one gap, so the total is even.
        double at = gap_s * static_cast<double>(b->index) / static_cast<double>(bettors.size());
        std::uint64_t n = 0;
        asio::steady_timer timer(co_await asio::this_coro::executor);
        while (!stopping && at < live.duration_s) {
            timer.expires_at(t0 + std::chrono::duration_cast<clock_type::duration>(
                                      std::chrono::duration<double>(at)));
            co_await timer.async_wait(tuple_token);
            acknowledgement req;
            req.key = live.key_prefix + std::to_string(b->index) + "-" + std::to_string(n++);
            req.scheduled_s = at;
            requests.push_back(std::move(req));
            b->unsent.push_back(requests.size() - 1);
            wake(*b);
            at += gap_s;
        }
    }

    bool all_answered() const {
        return std::all_of(requests.begin(), requests.end(),
                           [](const acknowledgement& r) { return r.answered; });
    }

    asio::awaitable<bettor_results> finish_bettors(double drain_s) {
        while (now_s() < live.duration_s ||
               (!all_answered() && now_s() < live.duration_s + drain_s)) {
            co_await pause(std::chrono::milliseconds(50));
        }
        stopping = true;
        for (auto& b : bettors) {
            if (b->ws) {
                beast::error_code ignored;
                beast::get_lowest_layer(*b->ws).socket().close(ignored);
            }
            wake(*b);
        }
        while (sessions_running > 0) {
            co_await pause(std::chrono::milliseconds(10));
        }
        bettor_results out;
        out.replies = replies;
        out.requests = requests;
        out.reconnects = reconnects;
        out.retries = retries;
        out.silent_connections = silent_connections;
        co_return out;
    }

    // --- sampling --------------------------------------------------------------------------

    // Drops from `watched` the markets whose event watched_seq has been applied.
    asio::awaitable<void> read_applied(http_connection& c) {
        std::vector<std::int64_t> still;
        for (const auto market : watched) {
            auto r = co_await http_once(c, port, http::verb::get,
                                        "/v1/feed/markets/" + std::to_string(market) + "/events",
                                        producer_token, "");
            bool applied = false;
            if (r.status == 200) {
                const auto j = json::parse(r.body, nullptr, false);
                const auto events = j.is_object() ? j.find("events") : j.end();
                if (j.is_object() && events != j.end() && events->is_array()) {
                    for (const auto& e : *events) {
                        if (e.is_object() && e.value("seq", std::int64_t{0}) == watched_seq) {
                            const auto at = e.find("applied_at");
                            applied = at != e.end() && !at->is_null();
                        }
                    }
                }
            }
            if (!applied) {
                still.push_back(market);
            }
        }
        watched = std::move(still);
    }

    asio::awaitable<void> sampler() {
        sampler_running = true;
        http_connection metrics_conn;
        http_connection diag_conn;
        std::string last_code;
        for (std::uint64_t tick = 0; sampling; ++tick) {
            const double at = now_s();
            auto m = co_await http_once(metrics_conn, port, http::verb::get, "/metrics",
                                        admin_token, "");
            if (m.status == 200) {
                const std::string name = "fulltime_settlement_backlog_age_seconds ";
                for (std::size_t pos = m.body.find(name); pos != std::string::npos;
                     pos = m.body.find(name, pos + 1)) {
                    if (pos == 0 || m.body[pos - 1] == '\n') {
                        // The series is in seconds; the timeline keeps milliseconds.
                        backlog.push_back(backlog_reading{
                            at, 1000.0 * std::atof(m.body.c_str() + pos + name.size())});
                        break;
                    }
                }
            }
            if (!watched.empty()) {
                co_await read_applied(diag_conn);
                if (watched.empty()) {
                    applied_s = now_s();
                }
            }
            if (tick % 4 == 0) {
                // since_ms in the future: the verdict and no series, a small answer.
                const auto future_ms = (epoch_s() + 3600) * 1000;
                auto d = co_await http_once(diag_conn, port, http::verb::get,
                                            "/v1/diagnostics?since_ms=" + std::to_string(future_ms),
                                            admin_token, "");
                if (d.status == 200) {
                    const auto j = json::parse(d.body, nullptr, false);
                    const auto v = j.is_object() ? j.find("verdict") : j.end();
                    if (j.is_object() && v != j.end() && v->is_object()) {
                        const std::string code = v->value("code", "");
                        if (code != last_code) {
                            verdicts.push_back(diagnosis_seen{at, code, v->value("summary", "")});
                            last_code = code;
                        }
                    }
                }
            }
            co_await pause(std::chrono::milliseconds(500));
        }
        sampler_running = false;
    }
};

driver::driver(std::uint16_t port, std::string secret) : impl_(std::make_unique<impl>()) {
    impl_->port = port;
    impl_->secret = std::move(secret);
    token::claims admin;
    admin.kind = token::kind::admin;
    admin.operator_name = "fulltime-rehearse";
    admin.expires_at_s = epoch_s() + token_ttl_s;
    impl_->admin_token = token::sign(admin, impl_->secret);
    token::claims producer;
    producer.kind = token::kind::producer;
    producer.producer = "rehearsal";
    producer.expires_at_s = epoch_s() + token_ttl_s;
    impl_->producer_token = token::sign(producer, impl_->secret);
    impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

driver::~driver() {
    impl_->stopping = true;
    impl_->sampling = false;
    impl_->work.reset();
    impl_->ioc.stop();
    if (impl_->thread.joinable()) {
        impl_->thread.join();
    }
}

void driver::start_clock() { impl_->t0 = clock_type::now(); }

double driver::now_s() const { return impl_->now_s(); }

http_reply driver::call(const std::string& method, const std::string& target,
                        const std::string& body, std::chrono::milliseconds deadline) {
    const auto verb = method == "POST" ? http::verb::post : http::verb::get;
    auto& d = *impl_;
    return d.run([](impl& self, http::verb v, std::string t, std::string b,
                    clock_type::time_point until) -> asio::awaitable<http_reply> {
        http_connection c;
        co_return co_await self.call(c, v, std::move(t), std::move(b), until);
    }(d, verb, target, body, clock_type::now() + deadline));
}

void driver::create_accounts(std::int64_t first_id, std::int64_t count, const std::string& deposit,
                             std::size_t workers) {
    const auto failure = impl_->run(impl_->create_accounts(first_id, count, deposit, workers));
    if (!failure.empty()) {
        throw std::runtime_error("creating accounts: " + failure);
    }
}

void driver::preload(const std::vector<std::int64_t>& accounts,
                     const std::vector<std::int64_t>& selections, const std::string& stake,
                     std::int64_t bets, double rate_per_s, const std::string& key_prefix) {
    const auto failure =
        impl_->run(impl_->preload(accounts, selections, stake, bets, rate_per_s, key_prefix));
    if (!failure.empty()) {
        throw std::runtime_error("preload: " + failure);
    }
}

void driver::start_bettors(bettor_settings settings) {
    asio::post(impl_->ioc, [&d = *impl_, s = std::move(settings)]() mutable {
        d.live = std::move(s);
        for (std::size_t i = 0; i < d.live.accounts.size(); ++i) {
            auto b = std::make_unique<bettor>();
            b->index = i;
            b->account = d.live.accounts[i];
            b->token = d.account_token(b->account);
            b->rng.seed(0x5eed + i);
            d.bettors.push_back(std::move(b));
        }
        for (auto& b : d.bettors) {
            asio::co_spawn(d.ioc, d.bettor_session(b.get()),
                           report_exception{"a bettor's session"});
            asio::co_spawn(d.ioc, d.bettor_writer(b.get()), report_exception{"a bettor's writer"});
            asio::co_spawn(d.ioc, d.bettor_schedule(b.get()),
                           report_exception{"a bettor's schedule"});
        }
        asio::co_spawn(d.ioc, d.watchdog(), report_exception{"the bettors' watchdog"});
    });
}

void driver::drop_connections() {
    asio::post(impl_->ioc, [&d = *impl_] {
        for (auto& b : d.bettors) {
            if (b->ws) {
                beast::error_code ignored;
                beast::get_lowest_layer(*b->ws).socket().close(ignored);
            }
        }
    });
}

bettor_results driver::finish_bettors(double drain_s) {
    return impl_->run(impl_->finish_bettors(drain_s));
}

void driver::start_sampling() {
    asio::post(impl_->ioc, [&d = *impl_] {
        d.sampling = true;
        asio::co_spawn(d.ioc, d.sampler(), report_exception{"the sampler"});
    });
}

void driver::watch_applied(std::vector<std::int64_t> market_ids, std::int64_t seq) {
    asio::post(impl_->ioc, [&d = *impl_, ids = std::move(market_ids), seq]() mutable {
        d.watched = std::move(ids);
        d.watched_seq = seq;
        if (d.watched.empty()) {
            d.applied_s = d.now_s();  // nothing to apply
        }
    });
}

driver::samples driver::finish_sampling() {
    return impl_->run([](impl& d) -> asio::awaitable<samples> {
        d.sampling = false;
        while (d.sampler_running) {
            co_await pause(std::chrono::milliseconds(20));
        }
        co_return samples{d.backlog, d.verdicts, d.applied_s};
    }(*impl_));
}

}  // namespace fulltime::app::rehearsal
