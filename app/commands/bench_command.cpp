// `fulltime bench-placement`: a WebSocket load generator for the placement path, used by
// scripts/bench-placement and scripts/bench-settlement. It speaks the public protocol only, so
// it measures what a client sees: N connections, each on one of M accounts (connection i uses
// account first + i % M), placing bets with fresh keys and, at a given ratio, repeating an
// earlier request of the connection exactly (a retry: same key, selection and stake).
//
// The bets' mix: `--selections ID:W,...` picks each bet's selection with weight W (or
// `--selection ID` for one), `--stakes AMOUNT:W,...` its stake (or `--stake AMOUNT`), so a run
// can put a share of its bets on one hot market and send some stakes the engine must refuse.
// Replies are counted by outcome ("placed", "placed (replayed)", "rejected CODE", ...).
//
// Two modes: closed loop (each connection keeps `inflight` requests outstanding: the maximum
// throughput) and open loop (`--rate R` requests/s in total, sent on schedule whatever the
// replies; latency is measured from the scheduled time, so a stall is not hidden by the client
// waiting — no coordinated omission). The open loop's schedule is evenly spaced
// (`--arrivals uniform`, the default) or a Poisson process (`--arrivals poisson`: exponential
// gaps, as `pgbench --rate` schedules its transactions). `--warmup-s W` leaves requests
// scheduled (open loop) or sent (closed loop) in the first W seconds out of the latency and
// rate figures. It reports its own CPU time, so a run can tell whether the generator itself
// was the bottleneck, and how late its writes left against their schedule (send lag).
//
// `--samples-out FILE` writes each measured reply as a line (its scheduled or send time in Unix
// seconds, its latency in ms, its send lag in ms, its outcome), so that one long run can be cut
// into windows by time afterwards: scripts/bench-settlement places across a settlement with one
// run, whose connections are open and warm in every window. SIGINT or SIGTERM ends a run as its
// duration would: no new requests, the outstanding ones get their replies, and the figures are
// printed.

#include "app/commands/commands.hpp"
#include "app/commands/secret.hpp"

#include "fulltime/core/token.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <deque>
#include <fstream>
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

/// Values picked with weights: `--selections 11:10,12:10,21:2` or `--stakes 2.00:97,6000000:2`.
template <class T>
struct weighted {
    std::vector<T> values;
    std::vector<double> weights;
};

struct bench_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;
    std::size_t connections = 16;
    std::int64_t accounts = 16;
    std::int64_t first_account = 1;
    weighted<std::int64_t> selections{{1}, {1}};
    weighted<std::string> stakes{{"1.00"}, {1}};
    std::string odds = "2.00";
    double duration_s = 10;
    double warmup_s = 0;        // leading seconds left out of latency and rate
    double rate = 0;            // requests/s in total; 0: closed loop
    bool poisson = false;       // open loop: exponential gaps instead of even ones
    std::size_t inflight = 4;   // per connection, closed loop
    double repeat_ratio = 0.1;  // share of requests that repeat an earlier request
    std::string key_prefix = "bench";
    std::string samples_out;
};

struct reply_sample {
    clock_type::time_point start;
    double latency_ms = 0;
    double send_lag_ms = 0;  // open loop: write start - scheduled time; closed loop: 0
    std::string outcome;
};

struct stats {
    std::vector<double> latencies_ms;  // replies to requests after the warm-up
    std::vector<double> send_lag_ms;   // open loop: write start - scheduled time, after warm-up
    std::map<std::string, std::uint64_t> outcomes;  // every reply
    std::uint64_t sent = 0;
    std::uint64_t replies = 0;  // every reply, warm-up included
    std::uint64_t pushes = 0;   // messages with no id and a type: settlements pushed to the account
    std::uint64_t errors = 0;
    std::vector<reply_sample> samples;  // with --samples-out: the measured replies
};

struct pending_request {
    clock_type::time_point start;  // scheduled time (open loop) or send time (closed loop)
    bool counted = false;          // after the warm-up
    double send_lag_ms = 0;        // open loop: write start - scheduled time; closed loop: 0
};

/// A request as first sent, so that a repeat is an exact retry (same key and parameters).
struct sent_request {
    std::string key;
    std::size_t selection = 0;  // index into the options' selections
    std::size_t stake = 0;      // index into the options' stakes
};

struct connection_state {
    const bench_options* opt = nullptr;
    std::size_t index = 0;
    std::int64_t account = 0;
    std::string token;
    stats* totals = nullptr;
    clock_type::time_point measure_from;
    clock_type::time_point end;
    std::unordered_map<std::string, pending_request> pending;  // id -> start
    std::vector<sent_request> used;
    std::uint64_t next = 0;
    bool done_sending = false;
    std::mt19937_64 rng;
    std::discrete_distribution<std::size_t> pick_selection;
    std::discrete_distribution<std::size_t> pick_stake;
};

std::string make_request(connection_state& c, const std::string& id) {
    std::uniform_real_distribution<double> coin(0, 1);
    sent_request r;
    if (!c.used.empty() && coin(c.rng) < c.opt->repeat_ratio) {
        std::uniform_int_distribution<std::size_t> pick(0, c.used.size() - 1);
        r = c.used[pick(c.rng)];
    } else {
        r.key = c.opt->key_prefix + "-" + std::to_string(c.index) + "-" + std::to_string(c.next);
        r.selection = c.pick_selection(c.rng);
        r.stake = c.pick_stake(c.rng);
        if (c.used.size() < 10'000) {
            c.used.push_back(r);
        }
    }
    ++c.next;
    nlohmann::json j = {{"type", "place"},
                        {"id", id},
                        {"idempotency_key", r.key},
                        {"selection_id", c.opt->selections.values[r.selection]},
                        {"stake", c.opt->stakes.values[r.stake]},
                        {"odds", c.opt->odds},
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
        if (reply.is_object() && !reply.contains("id") && reply.contains("type") &&
            reply["type"].is_string()) {
            // A push (docs/protocol.md, "Pushed"): the load's accounts may hold bets on a market
            // that settles meanwhile. Not a reply, and not an error.
            ++c.totals->pushes;
            continue;
        }
        if (!reply.is_object() || !reply.contains("id") || !reply["id"].is_string()) {
            ++c.totals->errors;
            continue;
        }
        auto it = c.pending.find(reply["id"].get<std::string>());
        if (it == c.pending.end()) {
            continue;
        }
        ++c.totals->replies;
        const pending_request request = it->second;
        const double latency_ms =
            std::chrono::duration<double, std::milli>(now - request.start).count();
        if (request.counted) {
            c.totals->latencies_ms.push_back(latency_ms);
        }
        c.pending.erase(it);
        std::string outcome = reply.value("type", "?");
        if (outcome == "placed" && reply.value("replayed", false)) {
            outcome = "placed (replayed)";
        } else if (outcome == "rejected" || outcome == "error") {
            outcome += " " + reply.value("code", "?");
            if (reply.value("replayed", false)) {
                outcome += " (replayed)";
            }
        }
        ++c.totals->outcomes[outcome];
        if (request.counted && !c.opt->samples_out.empty()) {
            c.totals->samples.push_back({request.start, latency_ms, request.send_lag_ms, outcome});
        }
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
    const bench_options& opt = *c.opt;
    const bool open_loop = opt.rate > 0;
    // Each connection's share of the rate: a Poisson process of rate R / N (their sum is one of
    // rate R, as pgbench's clients), or one request every N / R seconds.
    const double share = open_loop ? opt.rate / static_cast<double>(opt.connections) : 1.0;
    std::exponential_distribution<double> gap_s(share);
    const auto even_gap = open_loop ? std::chrono::duration_cast<clock_type::duration>(
                                          std::chrono::duration<double>(1.0 / share))
                                    : clock_type::duration::zero();
    auto next_gap = [&] {
        return opt.poisson ? std::chrono::duration_cast<clock_type::duration>(
                                 std::chrono::duration<double>(gap_s(c.rng)))
                           : even_gap;
    };
    // Spread the connections' even schedules over one interval; a Poisson schedule starts
    // with a gap of its own.
    auto scheduled =
        clock_type::now() +
        (opt.poisson ? next_gap()
                     : even_gap * static_cast<long>(c.index) /
                           static_cast<long>(std::max<std::size_t>(1, opt.connections)));
    for (;;) {
        if (open_loop) {
            if (scheduled >= c.end) {
                break;
            }
            pace.expires_at(scheduled);
            co_await pace.async_wait(asio::as_tuple(asio::use_awaitable));
        } else {
            if (clock_type::now() >= c.end) {
                break;
            }
            if (c.pending.size() >= opt.inflight) {
                wake.expires_after(std::chrono::milliseconds(50));
                co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
                continue;
            }
        }
        const auto id = std::to_string(c.index) + "-" + std::to_string(c.next);
        const std::string text = make_request(c, id);
        const auto now = clock_type::now();
        const auto start = open_loop ? scheduled : now;
        const bool counted = start >= c.measure_from;
        const double lag_ms =
            open_loop ? std::chrono::duration<double, std::milli>(now - scheduled).count() : 0.0;
        c.pending.emplace(id, pending_request{start, counted, lag_ms});
        if (open_loop && counted) {
            c.totals->send_lag_ms.push_back(lag_ms);
        }
        ++c.totals->sent;
        auto [ec, n] =
            co_await ws.async_write(asio::buffer(text), asio::as_tuple(asio::use_awaitable));
        if (ec) {
            ++c.totals->errors;
            break;
        }
        if (open_loop) {
            scheduled += next_gap();
        }
    }
    c.done_sending = true;
    // Give outstanding replies a bounded time, then close.
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
    tcp::endpoint endpoint(asio::ip::make_address(c.opt->host), c.opt->port);
    auto [ec] = co_await beast::get_lowest_layer(ws).async_connect(
        endpoint, asio::as_tuple(asio::use_awaitable));
    if (!ec) {
        beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true));
        auto [hec] = co_await ws.async_handshake(c.opt->host, "/v1/bets?token=" + c.token,
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

double percentile(const std::vector<double>& sorted, double p) {
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

/// "V:W,V:W,..." (a missing ":W" is weight 1); `parse` turns each V into a value.
template <class T, class Parse>
weighted<T> parse_weighted(const std::string& text, const std::string& name, Parse parse) {
    weighted<T> out;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const auto comma = std::min(text.find(',', pos), text.size());
        const std::string item = text.substr(pos, comma - pos);
        const auto colon = item.find(':');
        out.values.push_back(parse(item.substr(0, colon)));
        const double w =
            colon == std::string::npos ? 1.0 : parse_number<double>(item.substr(colon + 1), name);
        if (!(w > 0)) {
            throw std::invalid_argument(name + ": weights must be > 0");
        }
        out.weights.push_back(w);
        pos = comma + 1;
    }
    return out;
}

bench_options parse_options(const bench_arguments& a) {
    bench_options o;
    o.host = a.host;
    o.port = a.port;
    o.connections = a.connections;
    o.accounts = a.accounts;
    o.first_account = a.first_account;
    o.selections = parse_weighted<std::int64_t>(
        a.selections, "--selections",
        [](const std::string& s) { return parse_number<std::int64_t>(s, "--selections"); });
    o.stakes = parse_weighted<std::string>(a.stakes, "--stakes", [](const std::string& s) {
        if (s.empty()) {
            throw std::invalid_argument("--stakes: empty stake");
        }
        return s;
    });
    o.odds = a.odds;
    o.duration_s = a.duration_s;
    o.warmup_s = a.warmup_s;
    o.rate = a.rate;
    if (a.arrivals != "uniform" && a.arrivals != "poisson") {
        throw std::invalid_argument("--arrivals must be uniform or poisson");
    }
    o.poisson = a.arrivals == "poisson";
    o.inflight = a.inflight;
    o.repeat_ratio = a.repeat_ratio;
    o.key_prefix = a.key_prefix;
    o.samples_out = a.samples_out;
    if (o.connections == 0 || o.accounts <= 0 || o.inflight == 0 || o.duration_s <= 0) {
        throw std::invalid_argument("connections, accounts, inflight and duration must be > 0");
    }
    if (o.warmup_s < 0 || o.warmup_s >= o.duration_s) {
        throw std::invalid_argument("--warmup-s must be >= 0 and below --duration-s");
    }
    return o;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return s(u.ru_utime) + s(u.ru_stime);
}

/// One line per measured reply, in the order the replies came: "UNIX_S LATENCY_MS LAG_MS OUTCOME"
/// (the outcome is the rest of the line: it may hold spaces, "rejected market_closed").
void write_samples(const std::string& path, const std::vector<reply_sample>& samples) {
    // The steady clock's times as Unix time: both clocks read once, side by side.
    const auto steady0 = clock_type::now();
    const double unix0 =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::ofstream out(path);
    if (!out) {
        throw std::runtime_error("--samples-out: cannot write " + path);
    }
    char line[160];
    for (const auto& r : samples) {
        const double t = unix0 + std::chrono::duration<double>(r.start - steady0).count();
        std::snprintf(line, sizeof line, "%.4f %.3f %.3f ", t, r.latency_ms, r.send_lag_ms);
        out << line << r.outcome << '\n';
    }
    if (!out.flush()) {
        throw std::runtime_error("--samples-out: cannot write " + path);
    }
}

clock_type::time_point after(clock_type::time_point start, double s) {
    return start +
           std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

// One connection per --connections, each with its account (FIRST + i % M), a token for it valid
// an hour from `now_s`, and its own seed.
std::deque<connection_state> make_connections(const bench_options& opt, const std::string& secret,
                                              std::int64_t now_s, stats& totals,
                                              clock_type::time_point start) {
    std::deque<connection_state> conns;
    const auto end = after(start, opt.duration_s);
    for (std::size_t i = 0; i < opt.connections; ++i) {
        auto& c = conns.emplace_back();
        c.opt = &opt;
        c.index = i;
        c.account = opt.first_account + static_cast<std::int64_t>(i) % opt.accounts;
        token::claims claims;
        claims.kind = token::kind::account;
        claims.account_id = c.account;
        claims.expires_at_s = now_s + 3600;
        c.token = token::sign(claims, secret);
        c.totals = &totals;
        c.measure_from = after(start, opt.warmup_s);
        c.end = end;
        c.rng.seed(1000 + i);
        c.pick_selection = std::discrete_distribution<std::size_t>(opt.selections.weights.begin(),
                                                                   opt.selections.weights.end());
        c.pick_stake = std::discrete_distribution<std::size_t>(opt.stakes.weights.begin(),
                                                               opt.stakes.weights.end());
    }
    return conns;
}

// Runs every connection to its end on one event loop.
void run_connections(std::deque<connection_state>& conns) {
    asio::io_context ioc{1};
    // A signal brings every connection's end forward to now; the wait is cancelled once the
    // last connection has finished, so that it keeps no work in the context.
    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec) {
            const auto now = clock_type::now();
            for (auto& c : conns) {
                c.end = std::min(c.end, now);
            }
        }
    });
    std::size_t live = conns.size();
    for (auto& c : conns) {
        co_spawn(ioc, run_connection(c), [&](const std::exception_ptr&) {
            if (--live == 0) {
                signals.cancel();
            }
        });
    }
    ioc.run();
}

// The run's figures, printed as one JSON line; `totals`' latencies and lags are sorted by then.
nlohmann::json summary_json(const bench_options& opt, const stats& totals, double measured_s,
                            double cpu_s) {
    const auto& lat = totals.latencies_ms;
    const auto& lag = totals.send_lag_ms;
    return {
        {"mode", opt.rate > 0 ? "open" : "closed"},
        {"arrivals", opt.rate > 0 ? (opt.poisson ? "poisson" : "uniform") : "closed"},
        {"target_rate", opt.rate},
        {"connections", opt.connections},
        {"inflight", opt.rate > 0 ? 0 : opt.inflight},
        {"accounts", opt.accounts},
        {"duration_s", measured_s},
        {"warmup_s", opt.warmup_s},
        {"sent", totals.sent},
        {"replies", lat.size()},
        {"replies_total", totals.replies},
        {"pushes", totals.pushes},
        {"errors", totals.errors},
        {"replies_per_s", static_cast<double>(lat.size()) / measured_s},
        {"latency_ms",
         {{"p50", percentile(lat, 0.50)},
          {"p99", percentile(lat, 0.99)},
          {"p999", percentile(lat, 0.999)},
          {"max", lat.empty() ? 0.0 : lat.back()}}},
        {"send_lag_ms",
         {{"p50", percentile(lag, 0.50)},
          {"p99", percentile(lag, 0.99)},
          {"max", lag.empty() ? 0.0 : lag.back()}}},
        {"outcomes", totals.outcomes},
        {"cpu_s", cpu_s},
        {"cpu_us_per_request",
         totals.replies == 0 ? 0.0 : cpu_s * 1e6 / static_cast<double>(totals.replies)},
    };
}

}  // namespace

int bench_command(const config& cfg, const bench_arguments& args) {
    const bench_options opt = parse_options(args);
    const std::string secret = load_or_create_token_secret(cfg);
    const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    const double cpu_before = cpu_seconds();
    stats totals;
    const auto start = clock_type::now();
    std::deque<connection_state> conns = make_connections(opt, secret, now_s, totals, start);
    run_connections(conns);
    const double elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();
    const double cpu_s = cpu_seconds() - cpu_before;

    std::sort(totals.latencies_ms.begin(), totals.latencies_ms.end());
    std::sort(totals.send_lag_ms.begin(), totals.send_lag_ms.end());
    const double measured_s = std::min(elapsed_s, opt.duration_s) - opt.warmup_s;
    if (!opt.samples_out.empty()) {
        write_samples(opt.samples_out, totals.samples);
    }
    std::printf("%s\n", summary_json(opt, totals, measured_s, cpu_s).dump().c_str());
    return totals.errors == 0 ? 0 : 1;
}

}  // namespace fulltime::app
