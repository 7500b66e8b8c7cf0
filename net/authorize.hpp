#pragma once
/// The gateway's one token check: present, signed with one of our secrets, unexpired, and of the
/// kind the endpoint or route requires.

#include "fulltime/core/token.hpp"

#include <boost/system/result.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace fulltime::net::detail {

class gateway_metrics;

/// Returns the verified claims, or a one-line reason for the 401 body. `required` is the only
/// kind accepted. A token that verifies is counted in `metrics` by the secret that verified it,
/// whatever its kind: during a rollover, the count of the previous secret is what says whether
/// old tokens are still in use.
boost::system::result<token::claims, std::string> authorize(const std::optional<std::string>& text,
                                                            const token::keyring& keys,
                                                            std::int64_t now_s,
                                                            token::kind required,
                                                            gateway_metrics& metrics);

/// Returns the current Unix time in seconds.
std::int64_t unix_now_s() noexcept;

}  // namespace fulltime::net::detail
