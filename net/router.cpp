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

route_match match_route(const http_routes& routes, std::string_view method,
                        std::string_view path) {
    // Rank: an exact route beats any prefix; among prefixes the longest wins. The best-ranked
    // path match decides between "found" and "method not allowed".
    const auto rank = [](const http_route& r) {
        return r.prefix ? r.path.size() : std::string::npos;
    };
    const http_route* best = nullptr;
    const http_route* best_any_method = nullptr;
    for (const auto& r : routes) {
        if (!serves(r, path)) {
            continue;
        }
        if (best_any_method == nullptr || rank(r) > rank(*best_any_method)) {
            best_any_method = &r;
        }
        if (r.method == method && (best == nullptr || rank(r) > rank(*best))) {
            best = &r;
        }
    }
    route_match m;
    if (best_any_method == nullptr) {
        return m;
    }
    if (best != nullptr && rank(*best) == rank(*best_any_method)) {
        m.kind = match_kind::found;
        m.route = best;
        return m;
    }
    // The most specific route for this path has another method: 405 with what it allows.
    m.kind = match_kind::method_not_allowed;
    m.route = best_any_method;
    for (const auto& r : routes) {
        if (serves(r, path) && rank(r) == rank(*best_any_method) &&
            m.allow.find(r.method) == std::string::npos) {
            if (!m.allow.empty()) {
                m.allow += ", ";
            }
            m.allow += r.method;
        }
    }
    return m;
}

}  // namespace fulltime::net::detail
