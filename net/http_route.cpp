#include "fulltime/net/http_route.hpp"

#include <nlohmann/json.hpp>

namespace fulltime::net {

http_response json_error(unsigned status, std::string_view code, std::string_view message) {
    http_response r;
    r.status = status;
    r.body = nlohmann::json{{"error", code}, {"message", message}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
    return r;
}

}  // namespace fulltime::net
