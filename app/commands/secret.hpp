#pragma once
/// The token signing secret: FULLTIME_TOKEN_SECRET (config token_secret) when set, else a random
/// secret generated once into <state_dir>/token_secret, so `fulltime token` and `fulltime serve`
/// agree without configuration.

#include "fulltime/config/config.hpp"

#include <string>

namespace fulltime::app {

/// Returns the secret, creating the state file (mode 0600) on first use. Throws
/// std::runtime_error with a one-line message when it cannot be read or created.
std::string load_or_create_token_secret(const config& cfg);

}  // namespace fulltime::app
