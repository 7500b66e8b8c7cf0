#include "fulltime/net/http_route.hpp"

#include "fulltime/core/errors.hpp"

#include <boost/beast/http/status.hpp>
#include <nlohmann/json.hpp>

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

std::optional<http_response> take_idempotency_header(const http_request& request,
                                                     nlohmann::json& body, std::string_view field) {
    if (!request.idempotency_key || !body.is_object()) {
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
