#pragma once
/// GET /v1/diagnostics (admin token): what an operator reads at the peak to name the mechanism
/// behind slow placements (docs/design.md, "Observability at the peak"), as one JSON document: the
/// settlement backlog per market (events stored but not applied, and the oldest one's age), the
/// engine's pools, and the database's lock waiters, oldest transaction and idle-in-transaction
/// sessions, and the hot tables' dead tuples; then the peak sampler's verdict with its evidence,
/// its samples as series on one time axis, and what its newest sample saw (net/diagnosis_json.hpp).
/// Read from the primary on the background pool; each call is a handful of catalog queries,
/// cheap enough to poll every few seconds.

#include "fulltime/net/http_route.hpp"

#include <functional>
#include <memory>
#include <string>

namespace fulltime::db {
struct pools;
}  // namespace fulltime::db

namespace fulltime::actors {
class peak_history;
}  // namespace fulltime::actors

namespace fulltime::net {

/// Returns the state of the settlement governor as a JSON object text (the "governor" member of
/// "settlement"), read when the route is called.
using governor_state_reader = std::function<std::string()>;

/// Returns the diagnostics route and GET /dashboard (admin token: Authorization or ?token=),
/// the page that plots GET /v1/diagnostics live. `pools` must outlive the gateway; `governor`
/// may be empty; without `history` (no sampler) the document has no verdict and no series;
/// `reads`, when set, gives the "reads" member (net/read_metrics.hpp).
http_routes make_diagnostics_routes(db::pools& pools, governor_state_reader governor = {},
                                    std::string server_settings = {},
                                    std::shared_ptr<const actors::peak_history> history = {},
                                    governor_state_reader reads = {});

}  // namespace fulltime::net
