#pragma once
/// Plain HTTP routes served by the gateway next to its WebSocket endpoints: the built-in ones
/// (/healthz, /readyz, /metrics) and those later features add (POST /v1/feed, the operator API,
/// /v1/diagnostics, /dashboard).

#include "fulltime/core/token.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::net {

/// Holds one HTTP request as a route handler sees it. The body is at most
/// limits::http_body_bytes_max bytes.
struct http_request {
    std::string method;  ///< "GET", "POST", ...
    std::string path;    ///< the target without its query, e.g. "/v1/accounts/42"
    std::string query;   ///< after '?', undecoded; empty when absent
    std::string content_type;
    std::string body;
    /// The Idempotency-Key header, when sent: routes whose body takes a key accept it there
    /// too (with_idempotency_header).
    std::optional<std::string> idempotency_key;
    std::optional<token::claims> claims;  ///< set when the route requires a token
};

/// Holds the response a route handler returns; the gateway adds framing headers.
struct http_response {
    unsigned status = 200;
    std::string content_type = "application/json";
    std::string body;
    /// Seconds for a Retry-After header; 0 sends none, except that every 503 gets one (at least
    /// 1 s), whoever built it.
    unsigned retry_after_s = 0;
};

/// Names the token a route requires; the gateway checks it before calling the handler.
enum class route_auth { none = 0, producer, admin };

/// Produces the response to one request. An exception becomes a 500 with a JSON body.
using http_handler = std::function<boost::asio::awaitable<http_response>(http_request request)>;

/// Describes one route: a method and an exact path, or a path prefix that matches the prefix
/// itself and anything under it ("/v1/accounts" matches "/v1/accounts/42").
struct http_route {
    std::string name;    ///< bounded label for metrics, e.g. "accounts"
    std::string method;  ///< upper case, e.g. "GET"
    std::string path;
    bool prefix = false;
    route_auth auth = route_auth::none;
    http_handler handler;
    /// Served on the bettors' listener too when admin_listen splits them (the health checks);
    /// every other route is the operators'.
    bool for_bettors = false;
};

/// Holds the routes of one gateway; exact paths win over prefixes, longer prefixes over shorter.
using http_routes = std::vector<http_route>;

/// Returns the operator named by the request's admin token ("" without one): the name every
/// operator action is logged with.
inline std::string_view operator_of(const http_request& request) noexcept {
    return request.claims ? std::string_view(request.claims->operator_name) : std::string_view();
}

/// Returns the gateway's one error response: an RFC 9457 problem (`application/problem+json`),
/// `{"type":"about:blank","title":<the status's reason phrase>,"status":status,"code":code,
/// "detail":detail}`, with Retry-After when the code is worth retrying (errors::retry_after_ms).
/// `code` is from the same list as the WebSocket errors' `code` (docs/protocol.md, "Errors").
http_response problem(unsigned status, std::string_view code, std::string_view detail);

/// Returns a `status` response with `body` as the wire writes JSON (net/ws_message.hpp's
/// to_wire: compact, invalid UTF-8 replaced).
http_response json_response(unsigned status, const nlohmann::json& body);

/// Returns `body` parsed as client JSON (parse_strict_json: one document, no duplicate key, no
/// NUL), or the 400 problem that refuses it: invalid_json, or invalid_request naming the key.
boost::system::result<nlohmann::json, http_response> parse_body(std::string_view body);

/// Carries the request's Idempotency-Key header into the JSON object `body` as its `field`
/// ("key"), so that the route parses one key whichever way it came. Returns a 400
/// invalid_request problem when the header breaks the rules of client text (empty, over
/// limits::idempotency_key_bytes_max bytes, a NUL, not UTF-8: client_text::check) or the body
/// names a different key; a body that is not an object is left for the route's parser to refuse.
std::optional<http_response> take_idempotency_header(const http_request& request,
                                                     nlohmann::json& body,
                                                     std::string_view field = "key");

}  // namespace fulltime::net
