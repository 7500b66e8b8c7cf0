#pragma once
/// The gateway's one token check: present, signed with our secret, unexpired, and of the kind the
/// endpoint or route requires.

#include "fulltime/core/token.hpp"

#include <boost/system/result.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace fulltime::net::detail {

/// Returns the verified claims, or a one-line reason for the 401 body. `required` is the only
/// kind accepted.
boost::system::result<token::claims, std::string> authorize(const std::optional<std::string>& text,
                                                            std::string_view secret,
                                                            std::int64_t now_s,
                                                            token::kind required);

/// Returns the current Unix time in seconds.
std::int64_t unix_now_s() noexcept;

}  // namespace fulltime::net::detail
