#include "net/authorize.hpp"

#include "net/gateway_metrics.hpp"

#include <chrono>

namespace fulltime::net::detail {

namespace {

std::string_view kind_name(token::kind k) noexcept {
    switch (k) {
        case token::kind::account:
            return "an account";
        case token::kind::producer:
            return "a producer";
        case token::kind::admin:
            return "an admin";
    }
    return "a valid";
}

}  // namespace

boost::system::result<token::claims, std::string> authorize(const std::optional<std::string>& text,
                                                            const token::keyring& keys,
                                                            std::int64_t now_s,
                                                            token::kind required,
                                                            gateway_metrics& metrics) {
    if (!text) {
        return std::string("missing token: use Authorization: Bearer <token> or ?token=");
    }
    auto verified = token::verify(*text, keys, now_s);
    if (!verified) {
        return "invalid token: " + std::string(token::describe(verified.error()));
    }
    metrics.count_token(verified->key);
    if (verified->claims.kind != required) {
        return "this endpoint needs " + std::string(kind_name(required)) + " token";
    }
    return std::move(verified->claims);
}

std::int64_t unix_now_s() noexcept {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace fulltime::net::detail
