#pragma once
/// The token signing secret, from the first of: config token_secret (FULLTIME_TOKEN_SECRET);
/// $CREDENTIALS_DIRECTORY/token_secret (systemd's LoadCredential); config token_secret_file; a
/// random secret generated once into <state_dir>/token_secret, so that `fulltime token` and
/// `fulltime serve` agree without configuration. During a rollover, the secret it replaced is
/// found the same way under the name token_secret_previous (never generated); it verifies
/// tokens in `fulltime serve` and signs none.

#include "fulltime/config/config.hpp"
#include "fulltime/core/token.hpp"

#include <cstddef>
#include <string>

namespace fulltime::app {

/// Returns `bytes` random bytes (OpenSSL's generator) as lower-case hex. Throws
/// std::runtime_error when no randomness is available.
std::string random_hex(std::size_t bytes);

/// Returns the secret, creating the state file (mode 0600) on first use. Throws
/// std::runtime_error with a one-line message when it cannot be read or created.
std::string load_or_create_token_secret(const config& cfg);

/// Returns the previous secret of a rollover, from the first of: config token_secret_previous
/// (FULLTIME_TOKEN_SECRET_PREVIOUS); $CREDENTIALS_DIRECTORY/token_secret_previous; config
/// token_secret_previous_file; empty when none is set. Throws std::runtime_error with a one-line
/// message when a file cannot be read or its first line is shorter than 16 characters.
std::string load_previous_token_secret(const config& cfg);

/// Returns what `fulltime serve` verifies tokens against: load_or_create_token_secret's secret
/// and load_previous_token_secret's. Throws config_error when the two are the same secret (the
/// new one was not written), std::runtime_error as those two do.
token::keyring load_token_keyring(const config& cfg);

}  // namespace fulltime::app
