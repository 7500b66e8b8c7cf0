#pragma once
/// Where a client puts its token: `Authorization: Bearer T` or the query parameter `token=T`
/// (browsers cannot set headers on a WebSocket upgrade).

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace fulltime::net::detail {

/// Returns the token of an Authorization header value "Bearer T" (scheme case-insensitive).
std::optional<std::string> bearer_token(std::string_view authorization);

/// Returns the percent-decoded value of the first `name=` parameter of `query`.
std::optional<std::string> query_param(std::string_view query, std::string_view name);

/// Returns the name of the first parameter of `query` that is not in `allowed` or comes a
/// second time (names compared as sent, undecoded), or nullopt when there is none. A route whose
/// documentation lists its parameters refuses any other with it (`token` is the gateway's own,
/// on every route that takes a token).
std::optional<std::string> unexpected_query_param(std::string_view query,
                                                  std::initializer_list<std::string_view> allowed);

/// Returns the token from the header if it has one, else from the query.
std::optional<std::string> extract_token(std::string_view authorization, std::string_view query);

}  // namespace fulltime::net::detail
