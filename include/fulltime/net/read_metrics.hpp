#pragma once
/// The read side in /metrics and /v1/diagnostics (docs/diagnostics.md, "Reads"): where reads
/// went and why (db/read_router.hpp), how far behind the standby is, and the primary's view of
/// its standbys (pg_stat_replication's replay_lag) and physical slots (wal_status,
/// safe_wal_size).

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
