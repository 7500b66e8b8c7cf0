#pragma once
/// GET /v1/diagnostics (admin token): what an operator reads at the peak to name the mechanism
/// behind slow placements (docs/design.md, "Observability at the peak"), as one JSON document: the
/// settlement backlog per market (events stored but not applied, and the oldest one's age), the
/// engine's pools, and the database's lock waiters, oldest transaction and idle-in-transaction
/// sessions, and the hot tables' dead tuples. Read from the primary on the background pool;
/// each call is a handful of catalog queries, cheap enough to poll every few seconds.

#include "fulltime/net/http_route.hpp"

#include <functional>
#include <string>

namespace fulltime::db {
struct pools;
}  // namespace fulltime::db

namespace fulltime::net {

/// Returns the state of the settlement governor as a JSON object text (the "governor" member of
/// "settlement"), read when the route is called.
using governor_state_reader = std::function<std::string()>;

/// Returns the diagnostics route. `pools` must outlive the gateway; `governor` may be empty.
http_routes make_diagnostics_routes(db::pools& pools, governor_state_reader governor = {},
                                    std::string server_settings = {});

}  // namespace fulltime::net
