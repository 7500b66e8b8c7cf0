#include "app/commands/commands.hpp"
#include "app/commands/secret.hpp"

#include "fulltime/core/token.hpp"
#include "fulltime/limits.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace fulltime::app {

int token_command(const config& cfg, const token_options& o) {
    token::claims claims;
    if (o.ttl_s <= 0 || o.ttl_s > limits::token_ttl_s_max) {
        throw std::invalid_argument("--ttl must be 1 to " +
                                    std::to_string(limits::token_ttl_s_max) + " seconds");
    }
    if (o.kind == "account") {
        claims.kind = token::kind::account;
        claims.account_id = o.account_id;
    } else if (o.kind == "producer") {
        claims.kind = token::kind::producer;
        claims.producer = o.name;
        if (claims.producer.size() > limits::producer_name_bytes_max) {
            throw std::invalid_argument("producer name is longer than " +
                                        std::to_string(limits::producer_name_bytes_max) + " bytes");
        }
    } else if (o.name.empty()) {
        // The operator's name is logged with every action taken with the token.
        throw std::invalid_argument(
            "an admin token names its operator: fulltime token admin OPERATOR (e.g. alice)");
    } else {
        claims.kind = token::kind::admin;
        claims.operator_name = o.name;
    }
    const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    claims.expires_at_s = now_s + o.ttl_s;
    if (!token::is_valid(claims)) {
        throw std::invalid_argument(
            std::string(o.kind == "admin" ? "operator" : "producer") + " name must be 1 to " +
            std::to_string(limits::producer_name_bytes_max) + " visible ASCII characters");
    }
    const std::string text = token::sign(claims, load_or_create_token_secret(cfg));
    std::printf("%s\n", text.c_str());
    return 0;
}

}  // namespace fulltime::app
