#pragma once
/// GET /v1/diagnostics (admin token): what an operator reads at the peak to name the mechanism
/// behind slow placements (docs/design.md, "Observability at the peak"), as one JSON document: the
/// settlement backlog per market (events stored but not applied, and the oldest one's age), the
/// engine's pools, and the database's lock waiters, oldest transaction and idle-in-transaction
/// sessions, and the hot tables' dead tuples. Read from the primary on the background pool;
/// each call is a handful of catalog queries, cheap enough to poll every few seconds.

#include "fulltime/net/http_route.hpp"

namespace fulltime::db {
struct pools;
}  // namespace fulltime::db

namespace fulltime::net {

/// Returns the diagnostics route. `pools` must outlive the gateway.
http_routes make_diagnostics_routes(db::pools& pools);

}  // namespace fulltime::net
