// `fulltime bench-placement`: a WebSocket load generator for the placement path, used by
// scripts/bench-placement. It speaks the public protocol only, so it measures what a client
// sees: N connections, each on one of M accounts (connection i uses account first + i % M),
// placing bets with fresh keys and, at a given ratio, repeating an earlier key (a retry).
//
// Two modes: closed loop (each connection keeps `inflight` requests outstanding: the maximum
// throughput) and open loop (`--rate R` requests/s in total, sent on schedule whatever the
// replies; latency is measured from the scheduled time, so a stall is not hidden by the client
// waiting — no coordinated omission).

#include "app/commands/commands.hpp"
#include "app/commands/secret.hpp"

#include "fulltime/core/token.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace fulltime::app {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using clock_type = std::chrono::steady_clock;
using asio::ip::tcp;

struct bench_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;
    std::size_t connections = 16;
    std::int64_t accounts = 16;
    std::int64_t first_account = 1;
    std::int64_t selection = 1;
    std::string stake = "1.00";
    std::string odds = "2.00";
    double duration_s = 10;
    double rate = 0;            // requests/s in total; 0: closed loop
    std::size_t inflight = 4;   // per connection, closed loop
    double repeat_ratio = 0.1;  // share of requests that repeat an earlier key
    std::string key_prefix = "bench";
};

struct stats {
    std::vector<double> latencies_ms;
    std::map<std::string, std::uint64_t> outcomes;
    std::uint64_t sent = 0;
    std::uint64_t errors = 0;
};

struct connection_state {
    bench_options opt;
    std::size_t index = 0;
    std::int64_t account = 0;
    std::string token;
    stats* totals = nullptr;
    clock_type::time_point end;
    std::unordered_map<std::string, clock_type::time_point> pending;  // id -> start
    std::vector<std::string> used_keys;
    std::uint64_t next = 0;
    bool done_sending = false;
    std::mt19937_64 rng;
};

std::string make_request(connection_state& c) {
    const std::string id = std::to_string(c.index) + "-" + std::to_string(c.next);
    std::string key;
    std::uniform_real_distribution<double> coin(0, 1);
    if (!c.used_keys.empty() && coin(c.rng) < c.opt.repeat_ratio) {
        std::uniform_int_distribution<std::size_t> pick(0, c.used_keys.size() - 1);
        key = c.used_keys[pick(c.rng)];
    } else {
        key = c.opt.key_prefix + "-" + std::to_string(c.index) + "-" + std::to_string(c.next);
        if (c.used_keys.size() < 10'000) {
            c.used_keys.push_back(key);
        }
    }
    ++c.next;
    nlohmann::json j = {{"type", "place"},        {"id", id},
                        {"idempotency_key", key}, {"selection_id", c.opt.selection},
                        {"stake", c.opt.stake},   {"odds", c.opt.odds},
                        {"accept", "any"}};
    return j.dump();
}

asio::awaitable<void> reader(websocket::stream<beast::tcp_stream>& ws, connection_state& c,
                             asio::steady_timer& wake) {
    beast::flat_buffer buffer;
    for (;;) {
        buffer.clear();
        auto [ec, n] = co_await ws.async_read(buffer, asio::as_tuple(asio::use_awaitable));
        if (ec) {
            break;
        }
        const auto now = clock_type::now();
        auto reply = nlohmann::json::parse(beast::buffers_to_string(buffer.data()), nullptr, false);
        if (!reply.is_object() || !reply.contains("id") || !reply["id"].is_string()) {
            ++c.totals->errors;
            continue;
        }
        auto it = c.pending.find(reply["id"].get<std::string>());
        if (it == c.pending.end()) {
            continue;
        }
        c.totals->latencies_ms.push_back(
            std::chrono::duration<double, std::milli>(now - it->second).count());
        c.pending.erase(it);
        std::string outcome = reply.value("type", "?");
        if (outcome == "placed" && reply.value("replayed", false)) {
            outcome = "placed (replayed)";
        } else if (outcome == "rejected") {
            outcome += " " + reply.value("code", "?");
        }
        ++c.totals->outcomes[outcome];
        wake.cancel();
        if (c.done_sending && c.pending.empty()) {
            break;
        }
    }
}

asio::awaitable<void> writer(websocket::stream<beast::tcp_stream>& ws, connection_state& c,
                             asio::steady_timer& wake) {
    // The open loop paces on its own timer: replies cancel `wake` (to refill the closed loop's
    // window), which must not make an open-loop request leave before its scheduled time.
    asio::steady_timer pace(co_await asio::this_coro::executor);
    const bool open_loop = c.opt.rate > 0;
    const auto interval =
        open_loop ? std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(
                        static_cast<double>(c.opt.connections) / c.opt.rate))
                  : clock_type::duration::zero();
    // Spread the connections' schedules over one interval.
    auto scheduled =
        clock_type::now() + interval * static_cast<long>(c.index) /
                                static_cast<long>(std::max<std::size_t>(1, c.opt.connections));
    while (clock_type::now() < c.end) {
        if (open_loop) {
            pace.expires_at(scheduled);
            co_await pace.async_wait(asio::as_tuple(asio::use_awaitable));
        } else if (c.pending.size() >= c.opt.inflight) {
            wake.expires_after(std::chrono::milliseconds(50));
            co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        const std::string text = make_request(c);
        const auto id = std::to_string(c.index) + "-" + std::to_string(c.next - 1);
        c.pending.emplace(id, open_loop ? scheduled : clock_type::now());
        ++c.totals->sent;
        auto [ec, n] =
            co_await ws.async_write(asio::buffer(text), asio::as_tuple(asio::use_awaitable));
        if (ec) {
            ++c.totals->errors;
            break;
        }
        scheduled += interval;
    }
    c.done_sending = true;
    // Give outstanding replies a bounded time, then close.
    wake.expires_after(std::chrono::seconds(10));
    while (!c.pending.empty() && clock_type::now() < c.end + std::chrono::seconds(10)) {
        wake.expires_after(std::chrono::milliseconds(20));
        co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    c.totals->errors += c.pending.size();
    beast::get_lowest_layer(ws).close();
}

asio::awaitable<void> run_connection(connection_state& c) {
    auto ex = co_await asio::this_coro::executor;
    websocket::stream<beast::tcp_stream> ws(ex);
    tcp::endpoint endpoint(asio::ip::make_address(c.opt.host), c.opt.port);
    auto [ec] = co_await beast::get_lowest_layer(ws).async_connect(
        endpoint, asio::as_tuple(asio::use_awaitable));
    if (!ec) {
        beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true));
        auto [hec] = co_await ws.async_handshake(c.opt.host, "/v1/bets?token=" + c.token,
                                                 asio::as_tuple(asio::use_awaitable));
        ec = hec;
    }
    if (ec) {
        std::fprintf(stderr, "connection %zu: %s\n", c.index, ec.message().c_str());
        ++c.totals->errors;
        co_return;
    }
    asio::steady_timer wake(ex);
    co_spawn(ex, reader(ws, c, wake), asio::detached);
    co_await writer(ws, c, wake);
}

double percentile(std::vector<double>& sorted, double p) {
    if (sorted.empty()) {
        return 0;
    }
    const auto rank = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1));
    return sorted[rank];
}

template <class T>
T parse_number(const std::string& text, const std::string& name) {
    T v{};
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size()) {
        throw std::invalid_argument(name + ": not a number: '" + text + "'");
    }
    return v;
}

bench_options parse_options(const std::vector<std::string>& args) {
    bench_options o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (i + 1 >= args.size()) {
            throw std::invalid_argument(a + " needs a value");
        }
        const std::string& v = args[++i];
        if (a == "--port") {
            o.port = parse_number<std::uint16_t>(v, a);
        } else if (a == "--host") {
            o.host = v;
        } else if (a == "--connections") {
            o.connections = parse_number<std::size_t>(v, a);
        } else if (a == "--accounts") {
            o.accounts = parse_number<std::int64_t>(v, a);
        } else if (a == "--first-account") {
            o.first_account = parse_number<std::int64_t>(v, a);
        } else if (a == "--selection") {
            o.selection = parse_number<std::int64_t>(v, a);
        } else if (a == "--stake") {
            o.stake = v;
        } else if (a == "--odds") {
            o.odds = v;
        } else if (a == "--duration-s") {
            o.duration_s = parse_number<double>(v, a);
        } else if (a == "--rate") {
            o.rate = parse_number<double>(v, a);
        } else if (a == "--inflight") {
            o.inflight = parse_number<std::size_t>(v, a);
        } else if (a == "--repeat-ratio") {
            o.repeat_ratio = parse_number<double>(v, a);
        } else if (a == "--key-prefix") {
            o.key_prefix = v;
        } else {
            throw std::invalid_argument("unknown option " + a);
        }
    }
    if (o.connections == 0 || o.accounts <= 0 || o.inflight == 0 || o.duration_s <= 0) {
        throw std::invalid_argument("connections, accounts, inflight and duration must be > 0");
    }
    return o;
}

}  // namespace

int bench_command(const config& cfg, const std::vector<std::string>& args) {
    const bench_options opt = parse_options(args);
    const std::string secret = load_or_create_token_secret(cfg);
    const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    stats totals;
    std::deque<connection_state> conns;
    const auto start = clock_type::now();
    const auto end = start + std::chrono::duration_cast<clock_type::duration>(
                                 std::chrono::duration<double>(opt.duration_s));
    for (std::size_t i = 0; i < opt.connections; ++i) {
        auto& c = conns.emplace_back();
        c.opt = opt;
        c.index = i;
        c.account = opt.first_account + static_cast<std::int64_t>(i) % opt.accounts;
        token::claims claims;
        claims.kind = token::kind::account;
        claims.account_id = c.account;
        claims.expires_at_s = now_s + 3600;
        c.token = token::sign(claims, secret);
        c.totals = &totals;
        c.end = end;
        c.rng.seed(1000 + i);
    }
    asio::io_context ioc{1};
    for (auto& c : conns) {
        co_spawn(ioc, run_connection(c), asio::detached);
    }
    ioc.run();
    const double elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();

    auto& lat = totals.latencies_ms;
    std::sort(lat.begin(), lat.end());
    const double measured_s = std::min(elapsed_s, opt.duration_s);
    nlohmann::json out = {
        {"mode", opt.rate > 0 ? "open" : "closed"},
        {"target_rate", opt.rate},
        {"connections", opt.connections},
        {"accounts", opt.accounts},
        {"duration_s", measured_s},
        {"sent", totals.sent},
        {"replies", lat.size()},
        {"errors", totals.errors},
        {"replies_per_s", static_cast<double>(lat.size()) / measured_s},
        {"latency_ms",
         {{"p50", percentile(lat, 0.50)},
          {"p99", percentile(lat, 0.99)},
          {"p999", percentile(lat, 0.999)},
          {"max", lat.empty() ? 0.0 : lat.back()}}},
        {"outcomes", totals.outcomes},
    };
    std::printf("%s\n", out.dump().c_str());
    return totals.errors == 0 ? 0 : 1;
}

}  // namespace fulltime::app
