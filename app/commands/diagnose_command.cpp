// `fulltime diagnose`: asks a running engine for GET /v1/diagnostics, with an admin token signed
// here from the engine's token secret, and prints the verdict, its evidence and the newest
// samples in a terminal. Exit status 0 quiet, 1 a mechanism named; the engine that does not
// answer is this command's "database unreachable" (3: ask again later), an engine that answers
// with an error (a refused token, not JSON) is a failure (4).

#include "app/commands/commands.hpp"
#include "app/commands/exit_status.hpp"
#include "app/commands/secret.hpp"

#include "fulltime/core/token.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace fulltime::app {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;

constexpr std::int64_t token_ttl_s = 60;
constexpr auto request_timeout = std::chrono::seconds(10);

// GET target from host:port with a bearer token; returns (status, body). Throws on I/O errors.
std::pair<unsigned, std::string> get(const engine_address& o, const std::string& target,
                                     const std::string& bearer) {
    asio::io_context ioc;
    asio::ip::tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(request_timeout);
    stream.connect(resolver.resolve(o.host, o.port));
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, o.host);
    req.set(http::field::authorization, "Bearer " + bearer);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    return {res.result_int(), res.body()};
}

std::string number(const json& v, const char* format) {
    if (!v.is_number()) {
        return "-";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, format, v.get<double>());
    return buf;
}

json at(const json& series, const char* key, std::size_t i) {
    const auto it = series.find(key);
    return it != series.end() && it->is_array() && i < it->size() ? (*it)[i] : json(nullptr);
}

// Sum of a family of named series at index i (dead tuples over the hot tables), or null.
json sum_at(const json& series, const char* key, std::size_t i) {
    const auto it = series.find(key);
    if (it == series.end() || !it->is_object()) {
        return nullptr;
    }
    double total = 0;
    bool any = false;
    for (const auto& [name, values] : it->items()) {
        if (i < values.size() && values[i].is_number()) {
            total += values[i].get<double>();
            any = true;
        }
    }
    return any ? json(total) : json(nullptr);
}

std::string clock_of(std::int64_t t_ms) {
    const std::time_t t = static_cast<std::time_t>(t_ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[16];
    std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    return buf;
}

// The session a finding names, when it names one.
void print_culprit(const json& finding) {
    if (!finding.contains("culprit")) {
        return;
    }
    const json& c = finding["culprit"];
    std::printf("  look at: pid %d (%s), %s, transaction open %lld ms\n", c.value("pid", 0),
                c.value("application_name", std::string()).c_str(),
                c.value("state", std::string()).c_str(),
                static_cast<long long>(c.value("age_ms", std::int64_t{0})));
}

void print(const json& d, std::size_t samples) {
    const json& v = d.value("verdict", json::object());
    std::printf("verdict: %s\n  %s\n", v.value("code", std::string("?")).c_str(),
                v.value("summary", std::string()).c_str());
    for (const auto& e : v.value("evidence", json::array())) {
        std::printf("  - %s\n", e.get<std::string>().c_str());
    }
    print_culprit(v);
    for (const auto& f : v.value("findings", json::array())) {
        if (f.value("code", std::string()) != v.value("code", std::string())) {
            std::printf("also: %s: %s\n", f.value("code", std::string()).c_str(),
                        f.value("summary", std::string()).c_str());
            print_culprit(f);
        }
    }
    const json& s = d.value("series", json::object());
    const json t = s.value("t_ms", json::array());
    std::printf("\n%-8s %9s %8s %8s %8s %9s %9s %6s %8s %9s %7s\n", "UTC", "placed/s", "p50 ms",
                "p99 ms", "queue ms", "settled/s", "backlog s", "locks", "oldest s", "dead tup",
                "queued");
    const std::size_t from = t.size() > samples ? t.size() - samples : 0;
    for (std::size_t i = from; i < t.size(); ++i) {
        const json backlog = at(s, "settlement_backlog_age_ms", i);
        const json oldest = at(s, "oldest_transaction_ms", i);
        std::printf(
            "%-8s %9s %8s %8s %8s %9s %9s %6s %8s %9s %7s\n",
            clock_of(t[i].get<std::int64_t>()).c_str(),
            number(at(s, "placements_per_s", i), "%.0f").c_str(),
            number(at(s, "placement_p50_ms", i), "%.1f").c_str(),
            number(at(s, "placement_p99_ms", i), "%.1f").c_str(),
            number(at(s, "placement_queue_p99_ms", i), "%.1f").c_str(),
            number(at(s, "settled_bets_per_s", i), "%.0f").c_str(),
            number(backlog.is_number() ? json(backlog.get<double>() / 1000) : backlog, "%.1f")
                .c_str(),
            number(at(s, "lock_waiters", i), "%.0f").c_str(),
            number(oldest.is_number() ? json(oldest.get<double>() / 1000) : oldest, "%.0f").c_str(),
            number(sum_at(s, "dead_tuples", i), "%.0f").c_str(),
            number(at(s, "placement_queued", i), "%.0f").c_str());
    }
    const json& sampler = d.value("sampler", json::object());
    std::printf("\nsampler: every %lld ms, %lld samples kept, %lld failed reads%s%s\n",
                static_cast<long long>(sampler.value("interval_ms", std::int64_t{0})),
                static_cast<long long>(sampler.value("samples", std::int64_t{0})),
                static_cast<long long>(sampler.value("failures_total", std::int64_t{0})),
                sampler.value("last_error", std::string()).empty() ? "" : "; last: ",
                sampler.value("last_error", std::string()).c_str());
}

}  // namespace

engine_address parse_engine_url(const std::string& url) {
    const std::string scheme = "http://";
    if (url.rfind(scheme, 0) != 0) {
        throw std::invalid_argument("--url must start with http://, got '" + url + "'");
    }
    std::string rest = url.substr(scheme.size());
    if (const auto slash = rest.find('/'); slash != std::string::npos) {
        rest.resize(slash);
    }
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
        throw std::invalid_argument("--url needs a host and a port, e.g. http://127.0.0.1:8080");
    }
    return {rest.substr(0, colon), rest.substr(colon + 1)};
}

int diagnose_command(const config& cfg, const diagnose_options& opt) {
    engine_address o;
    if (opt.url) {
        o = parse_engine_url(*opt.url);
    } else {
        // /v1/diagnostics is an operators' route: on admin_listen when that is set.
        o.host = cfg.gateway.admin_host.value_or(cfg.gateway.host);
        o.port = std::to_string(cfg.gateway.admin_host ? cfg.gateway.admin_port : cfg.gateway.port);
        if (o.port == "0") {
            throw std::invalid_argument(
                "the configured listen port is 0 (chosen at start): give the engine's address "
                "with --url http://HOST:PORT");
        }
    }
    token::claims claims;
    claims.kind = token::kind::admin;
    claims.operator_name = "fulltime-diagnose";
    claims.expires_at_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count() +
                          token_ttl_s;
    const std::string bearer = token::sign(claims, load_or_create_token_secret(cfg));
    std::pair<unsigned, std::string> reply;
    try {
        reply = get(o, "/v1/diagnostics", bearer);
    } catch (const std::exception& e) {
        throw unreachable("cannot reach the engine at " + o.host + ":" + o.port + ": " + e.what());
    }
    const auto& [status, body] = reply;
    if (status != 200) {
        throw std::runtime_error("GET /v1/diagnostics answered " + std::to_string(status) + ": " +
                                 body);
    }
    const json d = json::parse(body, nullptr, false);
    if (!d.is_object()) {
        throw std::runtime_error("the engine's answer to GET /v1/diagnostics is not JSON");
    }
    if (opt.json) {
        std::printf("%s\n", d.dump(2).c_str());
    } else {
        print(d, static_cast<std::size_t>(opt.samples));
    }
    const std::string code = d.value("verdict", json::object()).value("code", std::string());
    return code == "quiet" || code == "no_data" ? 0 : 1;
}

}  // namespace fulltime::app
