#pragma once
/// The read side in /metrics and /v1/diagnostics (docs/architecture.md, "Reads"): where reads
/// went and why (db/read_router.hpp) and how far behind the standby is, as the engine dates it.
/// The primary's own view of its standbys (pg_stat_replication's replay_lag) and slots
/// (wal_status, safe_wal_size) is the peak sampler's (docs/diagnostics.md).

#include <string>

namespace fulltime::db {
class read_router;
}  // namespace fulltime::db

namespace fulltime::metrics {
class registry;
}  // namespace fulltime::metrics

namespace fulltime::net {

/// Adds a collector of `router`'s figures to `registry`; the router must outlive the registry's
/// renders.
void add_read_metrics(metrics::registry& registry, const db::read_router& router);

/// Returns the router's state as a JSON object text (the "reads" member of /v1/diagnostics).
std::string read_state_json(const db::read_router& router);

}  // namespace fulltime::net
