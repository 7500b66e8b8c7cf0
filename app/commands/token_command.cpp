#include "app/commands/arguments.hpp"
#include "app/commands/commands.hpp"
#include "app/commands/secret.hpp"

#include "fulltime/core/token.hpp"
#include "fulltime/limits.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace fulltime::app {

namespace {

constexpr std::int64_t default_ttl_s = 24 * 3600;

}  // namespace

int token_command(const config& cfg, const std::vector<std::string>& args) {
    token::claims claims;
    std::int64_t ttl_s = default_ttl_s;
    std::vector<std::string> positional;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--ttl") {
            if (i + 1 >= args.size()) {
                throw std::invalid_argument("--ttl needs a number of seconds");
            }
            ttl_s = parse_positive(args[++i], "--ttl");
            if (ttl_s > limits::token_ttl_s_max) {
                throw std::invalid_argument("--ttl must be at most " +
                                            std::to_string(limits::token_ttl_s_max) + " seconds");
            }
        } else {
            positional.push_back(args[i]);
        }
    }
    const std::string usage =
        "usage: fulltime token account ID | producer NAME | admin OPERATOR [--ttl SECONDS]";
    if (positional.empty()) {
        throw std::invalid_argument(usage);
    }
    const std::string& kind = positional[0];
    if (kind == "account" && positional.size() == 2) {
        claims.kind = token::kind::account;
        claims.account_id = parse_positive(positional[1], "account ID");
    } else if (kind == "producer" && positional.size() == 2) {
        claims.kind = token::kind::producer;
        claims.producer = positional[1];
        if (claims.producer.size() > limits::producer_name_bytes_max) {
            throw std::invalid_argument("producer name is longer than " +
                                        std::to_string(limits::producer_name_bytes_max) + " bytes");
        }
    } else if (kind == "admin" && positional.size() == 2) {
        // The operator's name, logged with every action taken with the token.
        claims.kind = token::kind::admin;
        claims.operator_name = positional[1];
    } else if (kind == "admin" && positional.size() == 1) {
        throw std::invalid_argument(
            "an admin token names its operator: fulltime token admin OPERATOR (e.g. alice)");
    } else {
        throw std::invalid_argument(usage);
    }
    const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    claims.expires_at_s = now_s + ttl_s;
    if (!token::is_valid(claims)) {
        throw std::invalid_argument(
            std::string(kind == "admin" ? "operator" : "producer") + " name must be 1 to " +
            std::to_string(limits::producer_name_bytes_max) + " visible ASCII characters");
    }
    const std::string text = token::sign(claims, load_or_create_token_secret(cfg));
    std::printf("%s\n", text.c_str());
    return 0;
}

}  // namespace fulltime::app
