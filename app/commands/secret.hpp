#pragma once
/// The token signing secret, from the first of: config token_secret (FULLTIME_TOKEN_SECRET);
/// $CREDENTIALS_DIRECTORY/token_secret (systemd's LoadCredential); config token_secret_file; a
/// random secret generated once into <state_dir>/token_secret, so that `fulltime token` and
/// `fulltime serve` agree without configuration.

#include "fulltime/config/config.hpp"

#include <cstddef>
#include <string>

namespace fulltime::app {

/// Returns `bytes` random bytes (OpenSSL's generator) as lower-case hex. Throws
/// std::runtime_error when no randomness is available.
std::string random_hex(std::size_t bytes);

/// Returns the secret, creating the state file (mode 0600) on first use. Throws
/// std::runtime_error with a one-line message when it cannot be read or created.
std::string load_or_create_token_secret(const config& cfg);

}  // namespace fulltime::app
