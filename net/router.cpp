#include "net/router.hpp"

namespace fulltime::net::detail {

split_target split(std::string_view target) noexcept {
    const auto q = target.find('?');
    if (q == std::string_view::npos) {
        return {target, {}};
    }
    return {target.substr(0, q), target.substr(q + 1)};
}

bool serves(const http_route& route, std::string_view path) noexcept {
    if (!route.prefix) {
        return path == route.path;
    }
    if (!path.starts_with(route.path)) {
        return false;
    }
    // "/v1/accounts" serves "/v1/accounts" and "/v1/accounts/42", never "/v1/accountsx".
    return path.size() == route.path.size() || route.path.ends_with('/') ||
           path[route.path.size()] == '/';
}

route_match match_route(const http_routes& routes, std::string_view method, std::string_view path) {
    // Among the routes of this method that serve the path, an exact route beats any prefix and
    // a longer prefix beats a shorter one. Only when no route of this method serves the path
    // is it "method not allowed", listing every method that would be served. HEAD is served by
    // the GET route (RFC 9110 9.3.2: the same header, no body); no route names HEAD itself.
    const auto rank = [](const http_route& r) {
        return r.prefix ? r.path.size() : std::string::npos;
    };
    const std::string_view wanted = method == "HEAD" ? std::string_view("GET") : method;
    route_match m;
    for (const auto& r : routes) {
        if (r.method == wanted && serves(r, path) &&
            (m.route == nullptr || rank(r) > rank(*m.route))) {
            m.route = &r;
        }
    }
    if (m.route != nullptr) {
        m.kind = match_kind::found;
        return m;
    }
    for (const auto& r : routes) {
        if (!serves(r, path)) {
            continue;
        }
        if (m.route == nullptr || rank(r) > rank(*m.route)) {
            m.route = &r;
        }
        if (m.allow.find(r.method) == std::string::npos) {
            if (!m.allow.empty()) {
                m.allow += ", ";
            }
            m.allow += r.method;
            if (r.method == "GET") {
                m.allow += ", HEAD";
            }
        }
    }
    m.kind = m.route != nullptr ? match_kind::method_not_allowed : match_kind::not_found;
    return m;
}

}  // namespace fulltime::net::detail
