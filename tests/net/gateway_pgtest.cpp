// The gateway in-process on an ephemeral port, with real pools on a scratch database, driven by
// the blocking test client from this thread while the io_context runs on another.

#include "fulltime/config/config.hpp"
#include "fulltime/core/token.hpp"
#include "fulltime/db/migrations.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/net/server.hpp"
#include "support/engine_fixture.hpp"
#include "support/test_config.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <set>
#include <stdexcept>
#include <thread>

namespace {

namespace asio = boost::asio;
namespace net = fulltime::net;
namespace token = fulltime::token;
using fulltime::test::bearer;
using fulltime::test::contains;
using fulltime::test::http_call;
using fulltime::test::http_get;
using fulltime::test::ws_client;
using nlohmann::json;
using namespace std::chrono_literals;

std::string account_token(std::int64_t account_id = 42, std::int64_t ttl_s = 3600,
                          const std::string& key = fulltime::test::token_secret) {
    return fulltime::test::sign_token(token::kind::account, account_id, {}, ttl_s, key);
}

std::string producer_token() { return fulltime::test::sign_token(token::kind::producer); }

// Counts concurrent executions of the slow test handler.
struct probe {
    std::atomic<int> running{0};
    std::atomic<int> running_max{0};
    std::atomic<int> done{0};
};

asio::awaitable<json> slow_reply(std::shared_ptr<probe> p, json message,
                                 std::chrono::milliseconds delay) {
    const int now = ++p->running;
    int seen = p->running_max.load();
    while (now > seen && !p->running_max.compare_exchange_weak(seen, now)) {
    }
    asio::steady_timer timer(co_await asio::this_coro::executor, delay);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    --p->running;
    ++p->done;
    co_return json{{"type", "slow_done"}, {"id", message["id"]}};
}

asio::awaitable<json> echo_reply(std::int64_t account_id, std::uint64_t connection_id,
                                 json message) {
    co_return json{{"type", "echoed"},
                   {"id", message["id"]},
                   {"account_id", account_id},
                   {"connection_id", connection_id}};
}

asio::awaitable<json> throwing_reply(json) {
    throw std::runtime_error("test handler failure");
    co_return json{};
}

asio::awaitable<net::http_response> describe_request(net::http_request request) {
    if (request.body == "throw") {
        throw std::runtime_error("test route failure");
    }
    net::http_response r;
    r.status = 201;
    r.body = json{{"path", request.path},
                  {"query", request.query},
                  {"body", request.body},
                  {"admin", request.claims && request.claims->kind == token::kind::admin}}
                 .dump();
    co_return r;
}

std::string admin_token() { return fulltime::test::sign_token(token::kind::admin); }

asio::awaitable<bool> apply_migrations(fulltime::db::pool* pool,
                                       std::vector<fulltime::resources::migration_source> m) {
    auto conn = co_await pool->acquire();
    if (!conn) {
        co_return false;
    }
    auto report = co_await fulltime::db::migrate(**conn, std::move(m));
    co_return report.has_value();
}

const std::vector<fulltime::resources::migration_source> probe_migrations = {
    {"0001_gateway_probe.sql", "CREATE TABLE gateway_probe (id integer PRIMARY KEY)"}};

struct gateway_options {
    bool pools = true;
    std::string pools_url;  ///< empty: the scratch database
    std::chrono::milliseconds slow_delay = 400ms;
    std::function<void(fulltime::config&)> configure;
    net::http_routes routes;
    std::string previous_token_secret;  ///< empty: no rollover
    /// What the gateway is told of the placement connections (services::placement_opened);
    /// null: nothing (as without placement).
    std::shared_ptr<std::atomic<bool>> placement_opened;
};

gateway_options without_pools(std::chrono::milliseconds slow_delay = 400ms) {
    gateway_options o;
    o.pools = false;
    o.slow_delay = slow_delay;
    return o;
}

// This file's gateway limits and pools, over the defaults of tests/support/test_config.hpp.
void gateway_config(fulltime::config& cfg) {
    cfg.gateway.connections_max = 16;
    cfg.gateway.frame_bytes_max = 1024;
    cfg.gateway.inflight_per_connection_max = 4;
    cfg.database.connect_timeout_ms = 1000;
    cfg.database.statement_timeout_ms = 2000;
    cfg.database.query_timeout_ms = 2000;
    fulltime::test::set_pools(cfg, fulltime::pool_settings{2, 16, 1000});
}

// The gateway alone with this file's test handlers and routes, and the probe migration instead
// of the engine's (applied by migrate(), where a test asks).
fulltime::test::engine_parts gateway_parts(const gateway_options& options,
                                           const std::shared_ptr<probe>& p) {
    fulltime::test::engine_parts parts;
    parts.gateway = true;
    parts.pools = options.pools;
    parts.pools_url = options.pools_url;
    parts.migrate = false;
    parts.add_services = [p, delay = options.slow_delay, routes = options.routes,
                          previous = options.previous_token_secret,
                          opened = options.placement_opened](net::services& s) {
        s.migrations = probe_migrations;
        if (opened) {
            s.placement_opened = [opened] { return opened->load(); };
        }
        s.token_keys.previous = previous;
        s.bets["slow"] = [p, delay](const net::request_context&, json m) {
            return slow_reply(p, std::move(m), delay);
        };
        s.bets["echo"] = [](const net::request_context& ctx, json m) {
            return echo_reply(ctx.claims.account_id, ctx.connection_id, std::move(m));
        };
        s.bets["boom"] = [](const net::request_context&, json m) {
            return throwing_reply(std::move(m));
        };
        s.feed["echo"] = s.bets["echo"];
        s.routes = routes;
    };
    return parts;
}

// The in-process gateway of tests/support/engine_fixture.hpp with this file's handlers.
class gateway : public fulltime::test::engine {
public:
    explicit gateway(const gateway_options& options = {})
        : gateway(options, std::make_shared<probe>()) {}

    probe& slow_probe() { return *probe_; }

    bool migrate() { return on_loop(apply_migrations(pools().background.get(), probe_migrations)); }

    std::string metrics() { return http_get(port(), "/metrics").body; }

private:
    gateway(const gateway_options& options, std::shared_ptr<probe> p)
        : fulltime::test::engine(gateway_parts(options, p), gateway_config, options.configure),
          probe_(std::move(p)) {}

    std::shared_ptr<probe> probe_;
};

// Polls `condition` until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 3s) {
    return fulltime::test::eventually(condition, timeout);
}

ws_client open_bets(std::uint16_t port, const std::string& t) {
    return fulltime::test::open_ws(port, "/v1/bets", bearer(t));
}

json read_json(ws_client& c) {
    const auto r = c.read();
    REQUIRE_MESSAGE(r.text.has_value(), "no message: closed=" << r.closed << " code="
                                                              << r.close_code << " " << r.error);
    return json::parse(*r.text);
}

}  // namespace

TEST_CASE("healthz answers without the database, unknown paths and methods answer JSON") {
    gateway g(without_pools());
    auto r = http_get(g.port(), "/healthz");
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == json{{"status", "ok"}});
    CHECK(r.header("Content-Type") == "application/json");

    r = http_get(g.port(), "/nope");
    CHECK(r.status == 404);
    CHECK(json::parse(r.body)["code"] == "not_found");

    r = http_call(g.port(), "POST", "/healthz");
    CHECK(r.status == 405);
    CHECK(r.header("Allow") == "GET, HEAD");
    CHECK(json::parse(r.body)["code"] == "method_not_allowed");

    r = http_get(g.port(), "/v1/bets");
    CHECK(r.status == 426);
    CHECK(json::parse(r.body)["code"] == "upgrade_required");
}

TEST_CASE("readyz is 503 until the migrations are applied, then 200") {
    gateway g;
    // /readyz answers from the newest readiness check, made once a second: the first one is
    // under way when the gateway starts.
    REQUIRE(eventually([&] {
        return json::parse(http_get(g.port(), "/readyz").body).value("reason", "") ==
               "migrations pending";
    }));
    auto r = http_get(g.port(), "/readyz");
    CHECK(r.status == 503);
    CHECK(json::parse(r.body) == json{{"status", "not_ready"}, {"reason", "migrations pending"}});
    REQUIRE(g.migrate());
    CHECK(eventually([&] { return http_get(g.port(), "/readyz").status == 200; }));
    r = http_get(g.port(), "/readyz");
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == json{{"status", "ready"}});
}

TEST_CASE("readyz waits for the placement connections after the database") {
    gateway_options options;
    options.placement_opened = std::make_shared<std::atomic<bool>>(false);
    gateway g(options);
    REQUIRE(g.migrate());
    // The database answers and is migrated, but the placement actors have not all opened their
    // connections yet: a bet sent now would wait for a connect, or be answered busy.
    REQUIRE(eventually([&] {
        return json::parse(http_get(g.port(), "/readyz").body).value("reason", "") ==
               "placement connections opening";
    }));
    auto r = http_get(g.port(), "/readyz");
    CHECK(r.status == 503);
    CHECK(json::parse(r.body) ==
          json{{"status", "not_ready"}, {"reason", "placement connections opening"}});
    options.placement_opened->store(true);
    r = http_get(g.port(), "/readyz");
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == json{{"status", "ready"}});
}

TEST_CASE("readyz reports an unreachable database quickly") {
    SUBCASE("no pools") {
        gateway g(without_pools());
        const auto r = http_get(g.port(), "/readyz");
        CHECK(r.status == 503);
        CHECK(json::parse(r.body)["reason"] == "database unreachable");
    }
    SUBCASE("nothing listens where the pools point") {
        gateway_options options;
        options.pools_url = "host=127.0.0.1 port=1 dbname=nothing";
        gateway g(options);
        const auto started = std::chrono::steady_clock::now();
        const auto r = http_get(g.port(), "/readyz");
        CHECK(r.status == 503);
        CHECK(json::parse(r.body)["reason"] == "database unreachable");
        CHECK(std::chrono::steady_clock::now() - started < 4s);
    }
}

TEST_CASE("metrics exposes pool, gateway and request series in the text format") {
    gateway g;
    REQUIRE(http_get(g.port(), "/healthz").status == 200);
    REQUIRE(http_get(g.port(), "/nope").status == 404);
    const auto r = http_get(g.port(), "/metrics");
    CHECK(r.status == 200);
    CHECK(r.header("Content-Type").starts_with("text/plain; version=0.0.4"));
    const std::string& m = r.body;
    CHECK(contains(m, "fulltime_db_pool_in_use{pool=\"placement\"} 0\n"));
    CHECK(contains(m, "fulltime_db_pool_size_max{pool=\"background\"} 2\n"));
    CHECK(contains(m, "fulltime_db_pool_waiting{pool=\"read\"} 0\n"));
    CHECK(contains(m, "fulltime_db_pool_acquire_wait_seconds_count{pool=\"settlement\"} "));
    // Every served request has its duration, by route name, method and status class. It is
    // recorded once the response is written, which the client may see before the engine does.
    CHECK(eventually([&] {
        const auto again = http_get(g.port(), "/metrics").body;
        return contains(again,
                        "fulltime_http_request_duration_seconds_count{route=\"healthz\","
                        "method=\"GET\",status_class=\"2xx\"} 1\n") &&
               contains(again,
                        "fulltime_http_request_duration_seconds_bucket{route="
                        "\"unmatched\",method=\"GET\",status_class=\"4xx\",le=\"+Inf\"} "
                        "1\n");
    }));
    CHECK(contains(m, "# TYPE fulltime_db_pool_acquire_timeouts_total counter\n"));
    CHECK(contains(m, "fulltime_db_pool_rejected_total{pool=\"placement\"} 0\n"));
    CHECK(contains(m, "fulltime_db_pool_broken_total{pool=\"placement\"} 0\n"));
    CHECK(contains(m, "fulltime_http_requests_total{route=\"healthz\",code=\"200\"} 1\n"));
    CHECK(contains(m, "fulltime_http_requests_total{route=\"unmatched\",code=\"404\"} 1\n"));
    CHECK(contains(m, "fulltime_gateway_websocket_sessions{endpoint=\"/v1/bets\"} 0\n"));
    CHECK(contains(m, "fulltime_gateway_open_connections "));
    CHECK(contains(m, "fulltime_gateway_rejected_connections_total{reason=\"address\"} 0\n"));
    CHECK(contains(m, "fulltime_ws_frames_too_big_total 0\n"));
    CHECK(contains(m, "fulltime_ws_busy_total 0\n"));
    // One header per family, even for families with several series.
    std::size_t headers = 0;
    for (auto pos = m.find("# TYPE fulltime_db_pool_in_use "); pos != std::string::npos;
         pos = m.find("# TYPE fulltime_db_pool_in_use ", pos + 1)) {
        ++headers;
    }
    CHECK(headers == 1);
}

TEST_CASE("upgrades to /v1/bets need an unexpired account token") {
    gateway g(without_pools());
    const auto refused = [&](const std::string& target, const fulltime::test::header_list& h) {
        ws_client c(g.port());
        const auto r = c.upgrade(target, h);
        CHECK(r.status == 401);
        const auto body = json::parse(r.body);
        CHECK(body["code"] == "unauthorized");
        CHECK(body["detail"].is_string());
        return body["detail"].get<std::string>();
    };
    CHECK(contains(refused("/v1/bets", {}), "missing"));
    CHECK(contains(refused("/v1/bets", bearer(producer_token())), "account"));
    CHECK(contains(refused("/v1/bets", bearer(account_token(42, -10))), "invalid token"));
    refused("/v1/bets", bearer("ft1.garbage.token"));
    refused("/v1/bets", bearer(account_token(42, 3600, "another-secret")));
    refused("/v1/bets", {{"Authorization", "Basic " + account_token()}});
    refused("/v1/feed", bearer(account_token()));

    {
        ws_client c(g.port());
        CHECK(c.upgrade("/v1/bets", bearer(account_token())).status == 101);
    }
    {
        ws_client c(g.port());
        CHECK(c.upgrade("/v1/bets?token=" + account_token()).status == 101);
    }
    {
        ws_client c(g.port());
        CHECK(c.upgrade("/v1/feed", bearer(producer_token())).status == 101);
    }
    {
        ws_client c(g.port());
        CHECK(c.upgrade("/v1/elsewhere", bearer(account_token())).status == 404);
    }
}

TEST_CASE("during a rollover tokens of the previous secret are accepted and counted") {
    auto options = without_pools();
    options.previous_token_secret = "the-previous-secret";
    gateway g(options);
    CHECK(contains(g.metrics(), "fulltime_tokens_verified_total{key=\"current\"} 0\n"));
    CHECK(contains(g.metrics(), "fulltime_tokens_verified_total{key=\"previous\"} 0\n"));
    {
        ws_client c(g.port());
        CHECK(
            c.upgrade("/v1/bets", bearer(account_token(42, 3600, "the-previous-secret"))).status ==
            101);
    }
    {
        ws_client c(g.port());
        CHECK(c.upgrade("/v1/bets", bearer(account_token())).status == 101);
    }
    {
        ws_client c(g.port());
        const auto r = c.upgrade("/v1/bets", bearer(account_token(42, 3600, "a-third-secret-0")));
        CHECK(r.status == 401);
        CHECK(contains(r.body, "signature"));
    }
    // A token of the right secret but the wrong kind still counts: it was in use.
    {
        ws_client c(g.port());
        CHECK(
            c.upgrade("/v1/feed", bearer(account_token(42, 3600, "the-previous-secret"))).status ==
            401);
    }
    const std::string m = g.metrics();
    CHECK(contains(m, "fulltime_tokens_verified_total{key=\"current\"} 1\n"));
    CHECK(contains(m, "fulltime_tokens_verified_total{key=\"previous\"} 2\n"));
}

TEST_CASE("without a previous secret /metrics has no previous series") {
    gateway g(without_pools());
    {
        ws_client c(g.port());
        CHECK(c.upgrade("/v1/bets", bearer(account_token())).status == 101);
    }
    const std::string m = g.metrics();
    CHECK(contains(m, "fulltime_tokens_verified_total{key=\"current\"} 1\n"));
    CHECK_FALSE(contains(m, "key=\"previous\""));
}

TEST_CASE("malformed messages get error replies and the connection keeps working") {
    gateway g(without_pools());
    auto c = open_bets(g.port(), account_token(42));

    c.send_text("this is not json");
    json e = read_json(c);
    CHECK(e == json{{"type", "error"},
                    {"id", nullptr},
                    {"code", "invalid_json"},
                    {"message", e["message"]}});

    c.send_text(R"({"type":"place","id":"c1"})");
    e = read_json(c);
    CHECK(e["type"] == "error");
    CHECK(e["code"] == "invalid_request");
    CHECK(e["id"] == "c1");

    c.send_text(R"({"type":"nope","id":7})");
    e = read_json(c);
    CHECK(e["code"] == "invalid_request");
    CHECK(e["id"] == 7);

    c.send_text(R"({"id":"no-type"})");
    e = read_json(c);
    CHECK(e["code"] == "invalid_request");
    CHECK(e["id"] == "no-type");

    c.send_binary(R"({"type":"echo","id":"bin"})");
    e = read_json(c);
    CHECK(e["code"] == "invalid_request");
    CHECK(e["id"].is_null());

    c.send_text(R"({"type":"boom","id":"b1"})");
    e = read_json(c);
    CHECK(
        e ==
        json{{"type", "error"}, {"id", "b1"}, {"code", "internal"}, {"message", "internal error"}});

    c.send_text(R"({"type":"echo","id":"e1"})");
    e = read_json(c);
    CHECK(e["type"] == "echoed");
    CHECK(e["id"] == "e1");
    CHECK(e["account_id"] == 42);
    CHECK(e["connection_id"].get<std::uint64_t>() > 0);
}

TEST_CASE("a message over frame_bytes_max closes the connection with 1009") {
    gateway g(without_pools());
    auto c = open_bets(g.port(), account_token());
    // Just under the limit is served.
    const std::string padding(900, 'p');
    c.send_text(R"({"type":"echo","id":"big-ok","pad":")" + padding + "\"}");
    CHECK(read_json(c)["id"] == "big-ok");

    c.send_text(R"({"type":"echo","id":"too-big","pad":")" + std::string(2000, 'p') + "\"}");
    const auto r = c.read();
    CHECK_FALSE(r.text.has_value());
    // Beast sends the 1009 close frame, then tears the connection down without waiting for the
    // client's answer, so the client may see the handshake end in an error after the frame.
    CHECK_MESSAGE(r.close_code == 1009, r.error);
    CHECK(
        eventually([&] { return contains(g.metrics(), "fulltime_ws_frames_too_big_total 1\n"); }));
}

TEST_CASE("requests over the in-flight limit are refused as busy at once") {
    gateway g(without_pools(500ms));
    auto c = open_bets(g.port(), account_token());
    constexpr int sent = 10;
    for (int i = 0; i < sent; ++i) {
        c.send_text(json{{"type", "slow"}, {"id", "s" + std::to_string(i)}}.dump());
    }
    std::vector<json> replies;
    for (int i = 0; i < sent; ++i) {
        replies.push_back(read_json(c));
    }
    std::set<std::string> busy;
    std::set<std::string> done;
    for (const auto& r : replies) {
        if (r["type"] == "rejected") {
            CHECK(r["code"] == "busy");
            CHECK(r["message"] == "too many requests in flight");
            busy.insert(r["id"].get<std::string>());
        } else {
            CHECK(r["type"] == "slow_done");
            done.insert(r["id"].get<std::string>());
        }
    }
    CHECK(done == std::set<std::string>{"s0", "s1", "s2", "s3"});
    CHECK(busy == std::set<std::string>{"s4", "s5", "s6", "s7", "s8", "s9"});
    // Busy replies do not wait for the slow ones.
    for (int i = 0; i < 6; ++i) {
        CHECK(replies[static_cast<std::size_t>(i)]["type"] == "rejected");
    }
    CHECK(g.slow_probe().running_max.load() == 4);
    CHECK(g.slow_probe().done.load() == 4);
    // Capacity comes back once the slow requests are done.
    c.send_text(R"({"type":"slow","id":"again"})");
    CHECK(read_json(c)["id"] == "again");
    CHECK(contains(g.metrics(), "fulltime_ws_busy_total 6\n"));
}

TEST_CASE("connections over connections_max are refused with 503") {
    auto options = without_pools();
    options.configure = [](fulltime::config& c) { c.gateway.connections_max = 2; };
    gateway g(options);
    auto a = open_bets(g.port(), account_token());
    auto b = open_bets(g.port(), account_token());
    CHECK(g.server().open_connections() == 2);
    auto r = http_get(g.port(), "/nope");
    CHECK(r.status == 503);
    CHECK(json::parse(r.body)["code"] == "unavailable");
    CHECK(r.header("Retry-After") == "1");
    {
        ws_client refused(g.port());
        CHECK(refused.upgrade("/v1/bets", bearer(account_token())).status == 503);
    }
    // A health check is answered all the same, by the refusal.
    r = http_get(g.port(), "/healthz");
    CHECK(r.status == 200);
    a.close();
    REQUIRE(eventually([&] { return g.server().open_connections() == 1; }));
    r = http_get(g.port(), "/nope");
    CHECK(r.status == 404);
    // That connection's slot is given back once the engine has seen it close.
    REQUIRE(eventually([&] { return g.server().open_connections() == 1; }));
    const auto m = g.metrics();
    CHECK_MESSAGE(
        contains(m, "fulltime_gateway_rejected_connections_total{reason=\"connections\"} 3\n"), m);
}

TEST_CASE("graceful shutdown lets an in-flight request finish, then closes with 1001") {
    gateway g(without_pools(600ms));
    auto c = open_bets(g.port(), account_token());
    fulltime::test::http_connection idle(g.port());
    REQUIRE(idle.get("/healthz").status == 200);

    c.send_text(R"({"type":"slow","id":"s1"})");
    REQUIRE(eventually([&] { return g.slow_probe().running.load() == 1; }));
    const auto started = std::chrono::steady_clock::now();
    auto done = g.begin_shutdown(5000ms);

    // An idle keep-alive connection closes at once; nothing new is accepted.
    CHECK(idle.closed_by_peer(1000ms));
    CHECK(eventually([&] {
        try {
            http_get(g.port(), "/healthz");
            return false;
        } catch (const std::exception&) {
            return true;
        }
    }));

    const json reply = read_json(c);
    CHECK(reply == json{{"type", "slow_done"}, {"id", "s1"}});
    const auto closing = c.read();
    CHECK(closing.closed);
    CHECK(closing.close_code == 1001);

    REQUIRE(done.wait_for(3s) == std::future_status::ready);
    done.get();
    CHECK(std::chrono::steady_clock::now() - started < 3s);
    CHECK(g.server().open_connections() == 0);
}

TEST_CASE("shutdown force-closes work still running at its deadline") {
    gateway g(without_pools(5000ms));
    auto c = open_bets(g.port(), account_token());
    c.send_text(R"({"type":"slow","id":"s1"})");
    REQUIRE(eventually([&] { return g.slow_probe().running.load() == 1; }));
    const auto started = std::chrono::steady_clock::now();
    auto done = g.begin_shutdown(300ms);
    REQUIRE(done.wait_for(3s) == std::future_status::ready);
    done.get();
    const auto took = std::chrono::steady_clock::now() - started;
    CHECK(took >= 300ms);
    CHECK(took < 2s);
    CHECK(g.server().open_connections() == 0);
    // The handler was cancelled rather than left running for its five seconds.
    CHECK(g.slow_probe().running.load() == 0);
    const auto r = c.read();
    CHECK_FALSE(r.text.has_value());
    CHECK(r.close_code != 1001);
}

TEST_CASE("pushes reach every open /v1/bets session of the account and no other") {
    gateway g(without_pools());
    auto a1 = open_bets(g.port(), account_token(42));
    auto a2 = open_bets(g.port(), account_token(42));
    auto b = open_bets(g.port(), account_token(43));
    REQUIRE(eventually([&] { return g.server().connections().sessions(42) == 2; }));
    const json settled{{"type", "bet_settled"},
                       {"bet_id", 7},
                       {"version", 1},
                       {"outcome", "won"},
                       {"payout", "25.00"}};
    CHECK(g.server().connections().push(42, settled) == 2);
    CHECK(read_json(a1) == settled);
    CHECK(read_json(a2) == settled);
    CHECK(g.server().connections().push(99, settled) == 0);
    b.send_text(R"({"type":"echo","id":"b"})");
    CHECK(read_json(b)["type"] == "echoed");
    a1.close();
    CHECK(eventually([&] { return g.server().connections().sessions(42) == 1; }));
}

TEST_CASE("routes added by features get token checks, bodies and JSON errors from the gateway") {
    auto options = without_pools();
    net::http_route probe_route;
    probe_route.name = "accounts";
    probe_route.method = "POST";
    probe_route.path = "/v1/accounts";
    probe_route.prefix = true;
    probe_route.auth = net::route_auth::admin;
    probe_route.handler = describe_request;
    options.routes.push_back(probe_route);
    gateway g(options);

    auto r = http_call(g.port(), "POST", "/v1/accounts/42/deposits", "{}");
    CHECK(r.status == 401);
    CHECK(json::parse(r.body)["code"] == "unauthorized");
    r = http_call(g.port(), "POST", "/v1/accounts/42/deposits", "{}", bearer(producer_token()));
    CHECK(r.status == 401);

    r = http_call(g.port(), "POST", "/v1/accounts/42/deposits?x=1", R"({"amount":"1.00"})",
                  bearer(admin_token()));
    CHECK(r.status == 201);
    const auto body = json::parse(r.body);
    CHECK(body["path"] == "/v1/accounts/42/deposits");
    CHECK(body["query"] == "x=1");
    CHECK(body["body"] == R"({"amount":"1.00"})");
    CHECK(body["admin"] == true);
    // The query token works as well as the header.
    CHECK(http_call(g.port(), "POST", "/v1/accounts?token=" + admin_token(), "{}").status == 201);

    r = http_call(g.port(), "POST", "/v1/accounts/1", "throw", bearer(admin_token()));
    CHECK(r.status == 500);
    CHECK(json::parse(r.body) ==
          fulltime::test::problem_json(500, "Internal Server Error", "internal", "internal error"));
    CHECK(r.header("Content-Type") == "application/problem+json");
    CHECK(r.header("Retry-After").empty());

    r = http_call(g.port(), "POST", "/v1/accounts/1", std::string((1 << 20) + 1, 'x'),
                  bearer(admin_token()));
    CHECK(r.status == 413);
    CHECK(json::parse(r.body)["code"] == "payload_too_large");

    r = http_get(g.port(), "/v1/accounts/1", bearer(admin_token()));
    CHECK(r.status == 405);
    CHECK(r.header("Allow") == "POST");
    CHECK(
        contains(g.metrics(), "fulltime_http_requests_total{route=\"accounts\",code=\"201\"} 2\n"));
}

TEST_CASE("a client that does not read its pushes is closed and counted") {
    gateway g(without_pools());
    ws_client reader_that_never_reads = open_bets(g.port(), account_token(42));
    REQUIRE(eventually([&] { return g.server().connections().sessions(42) == 1; }));
    // Far more than the kernel's socket buffers absorb, so the write queue must overflow.
    const json big{{"type", "bet_settled"}, {"pad", std::string(4096, 'x')}};
    for (int i = 0; i < 6000; ++i) {
        g.server().connections().push(42, big);
    }
    CHECK(eventually([&] { return contains(g.metrics(), "fulltime_ws_slow_consumers_total 1\n"); },
                     5s));
    // The close frame cannot get past the unread data, so the close deadline ends the session.
    CHECK(eventually([&] { return g.server().connections().sessions(42) == 0; }, 5s));
}
