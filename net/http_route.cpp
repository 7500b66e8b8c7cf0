#include "fulltime/net/http_route.hpp"

#include "fulltime/core/client_text.hpp"
#include "fulltime/core/errors.hpp"
#include "fulltime/core/strict_json.hpp"
#include "fulltime/limits.hpp"
#include "net/ws_message.hpp"

#include <boost/beast/http/status.hpp>

namespace fulltime::net {

http_response problem(unsigned status, std::string_view code, std::string_view detail) {
    namespace http = boost::beast::http;
    http_response r;
    r.status = status;
    r.content_type = "application/problem+json";
    // "about:blank": the code, not the type URI, names the problem, so the title is the status's
    // own phrase (RFC 9457, 4.2.1).
    const auto title = http::obsolete_reason(http::int_to_status(status));
    r.body = nlohmann::json{
        {"type", "about:blank"},
        {"title", title},
        {"status", status},
        {"code", code},
        {"detail",
         detail}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    // Whole seconds, rounded up: Retry-After has no finer unit.
    r.retry_after_s = static_cast<unsigned>((errors::retry_after_ms(code) + 999) / 1000);
    return r;
}

http_response json_response(unsigned status, const nlohmann::json& body) {
    http_response r;
    r.status = status;
    r.body = detail::to_wire(body);
    return r;
}

boost::system::result<nlohmann::json, http_response> parse_body(std::string_view body) {
    auto parsed = parse_strict_json(body, "the body");
    if (!parsed) {
        return {boost::system::in_place_error,
                problem(400, parsed.error().code, parsed.error().message)};
    }
    return {boost::system::in_place_value, std::move(*parsed)};
}

std::optional<http_response> take_idempotency_header(const http_request& request,
                                                     nlohmann::json& body, std::string_view field) {
    if (!request.idempotency_key) {
        return std::nullopt;
    }
    // Header bytes are not JSON, so nothing has checked them as text yet: Beast refuses control
    // characters in a header, but passes any byte above 0x7f, UTF-8 or not.
    const auto fault =
        client_text::check(*request.idempotency_key, limits::idempotency_key_bytes_max);
    if (fault != client_text::fault::none) {
        return problem(400, "invalid_request",
                       "the Idempotency-Key header " +
                           client_text::describe(fault, limits::idempotency_key_bytes_max));
    }
    if (!body.is_object()) {
        return std::nullopt;
    }
    const auto it = body.find(field);
    if (it == body.end()) {
        body[std::string(field)] = *request.idempotency_key;
        return std::nullopt;
    }
    if (it->is_string() && it->get_ref<const std::string&>() == *request.idempotency_key) {
        return std::nullopt;
    }
    return problem(400, "invalid_request",
                   "the Idempotency-Key header and the body's \"" + std::string(field) +
                       "\" differ: send one key, or the same in both");
}

}  // namespace fulltime::net
