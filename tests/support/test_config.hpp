#pragma once
/// The configuration the in-process pg tests start from: the one place that names the test
/// defaults, so a test sets only the values it relies on (visibly, in the test) and a renamed
/// field is renamed here once.

#include "fulltime/config/config.hpp"

#include <string>

namespace fulltime::test {

/// Returns a complete configuration for the database at `database_url`: the gateway on
/// 127.0.0.1 with an ephemeral port, short timeouts, small pools, fast intervals, every
/// section set so that any service a test wires can run.
config test_config(const std::string& database_url);

/// Sets the four pools of `cfg` (placement, settlement, read, background) to `settings`.
void set_pools(config& cfg, const pool_settings& settings);

/// Gives `cfg` the database settings of tests that settle or reconcile thousands of bets in
/// one go: minute-long statement timeouts and deep pool queues.
void use_batch_database(config& cfg);

}  // namespace fulltime::test
