// The built-in routes: liveness, readiness and metrics. No Beast here: handlers see only the
// gateway's own request and response types.

#include "net/server_state.hpp"

#include <nlohmann/json.hpp>

namespace fulltime::net::detail {

namespace asio = boost::asio;

namespace {

http_response status_body(unsigned status, const nlohmann::json& body) {
    http_response r;
    r.status = status;
    r.body = body.dump();
    return r;
}

// The newest readiness check's finding (net/readiness_probe.hpp): no database work here, so a
// flood of probes costs the engine a JSON body each and nothing more.
http_response readyz(const server_state& state) {
    const readiness r = state.readiness ? state.readiness->current(readiness_probe::clock::now())
                                        : readiness::unreachable;
    switch (r) {
        case readiness::ready:
            // The first bets must not wait for connects (actors/placement_detail.hpp, warm).
            if (state.svc.placement_opened && !state.svc.placement_opened()) {
                return status_body(
                    503, {{"status", "not_ready"}, {"reason", "placement connections opening"}});
            }
            return status_body(200, {{"status", "ready"}});
        case readiness::pending:
            return status_body(503, {{"status", "not_ready"}, {"reason", "migrations pending"}});
        case readiness::unreachable:
            break;
    }
    return status_body(503, {{"status", "not_ready"}, {"reason", "database unreachable"}});
}

asio::awaitable<http_response> health_route(server_state& state, std::string_view path) {
    co_return *health_check(state, path);
}

asio::awaitable<http_response> metrics_page(server_state& state) {
    http_response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = state.registry.render();
    co_return r;
}

}  // namespace

std::optional<http_response> health_check(server_state& state, std::string_view path) {
    if (path == "/healthz") {
        return status_body(200, {{"status", "ok"}});
    }
    if (path == "/readyz") {
        return readyz(state);
    }
    return std::nullopt;
}

http_routes builtin_routes(server_state& state) {
    http_routes routes;
    // The state owns these routes, so a plain pointer to it lives exactly as long as they do.
    server_state* s = &state;
    for (const std::string_view path : {"/healthz", "/readyz"}) {
        const std::string name(path.substr(1));
        routes.push_back(http_route{name, "GET", std::string(path), false, route_auth::none,
                                    [s, path](http_request) { return health_route(*s, path); },
                                    true});
    }
    routes.push_back(http_route{"metrics", "GET", "/metrics", false, route_auth::none,
                                [s](http_request) { return metrics_page(*s); }});
    return routes;
}

}  // namespace fulltime::net::detail
