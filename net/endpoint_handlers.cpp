#include "fulltime/net/endpoint_handlers.hpp"

namespace fulltime::net {

std::string_view path_of(ws_endpoint e) noexcept {
    switch (e) {
        case ws_endpoint::bets:
            return "/v1/bets";
        case ws_endpoint::feed:
            return "/v1/feed";
    }
    return "";
}

}  // namespace fulltime::net
