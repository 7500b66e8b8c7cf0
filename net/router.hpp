#pragma once
/// Matching of an HTTP request's method and path against the route table, without sockets.

#include "fulltime/net/http_route.hpp"

#include <string>
#include <string_view>

namespace fulltime::net::detail {

/// Holds a request target split at its first '?'.
struct split_target {
    std::string_view path;
    std::string_view query;
};

/// Splits `target` into path and query (the query excludes the '?').
split_target split(std::string_view target) noexcept;

/// Names the outcome of matching.
enum class match_kind { found, method_not_allowed, not_found };

/// Holds the result of matching: the route when found; for method_not_allowed, the most specific
/// route of that path (for its metrics name) and the methods the path allows, as an Allow header.
struct route_match {
    match_kind kind = match_kind::not_found;
    const http_route* route = nullptr;
    std::string allow;
};

/// Returns whether `route` serves `path`, ignoring the method.
bool serves(const http_route& route, std::string_view path) noexcept;

/// Finds the route for `method` and `path`: among routes of that method, exact paths before
/// prefixes, longer prefixes first. HEAD finds the GET route, and an Allow that lists GET lists
/// HEAD after it.
route_match match_route(const http_routes& routes, std::string_view method, std::string_view path);

}  // namespace fulltime::net::detail
