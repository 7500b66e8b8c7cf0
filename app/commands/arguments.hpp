#pragma once
/// Command-line values shared by the subcommands.

#include <cstdint>
#include <string>

namespace fulltime::app {

/// Returns `text` as a positive integer; throws std::invalid_argument naming `what` otherwise
/// ("--market must be a positive integer, got 'x'").
std::int64_t parse_positive(const std::string& text, const std::string& what);

}  // namespace fulltime::app
