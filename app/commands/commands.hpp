#pragma once
/// The subcommands of the `fulltime` binary. Each returns the process exit status.

#include "fulltime/config/config.hpp"

#include <string>
#include <vector>

namespace fulltime::app {

/// Runs the engine until SIGINT or SIGTERM (`fulltime serve`).
int serve_command(const config& cfg);

/// Applies pending migrations and exits (`fulltime migrate`).
int migrate_command(const config& cfg);

/// Prints a signed token (`fulltime token account ID | producer NAME | admin [--ttl SECONDS]`).
int token_command(const config& cfg, const std::vector<std::string>& args);

/// Drives placements over WebSocket against a running engine and prints figures as JSON
/// (`fulltime bench-placement --port P --connections N --accounts M ...`).
int bench_command(const config& cfg, const std::vector<std::string>& args);

}  // namespace fulltime::app
