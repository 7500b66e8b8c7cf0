#pragma once
/// The /v1/bets message handlers (docs/protocol.md): `place` is validated without the
/// database, fingerprinted and handed to a placement actor; `balance` and `bets` are answered
/// through the read router (the standby when it serves the read, else the primary:
/// db/read_router.hpp), `bets` from the read model unless read.bets_source says the write
/// tables. The token's account is the only account a session acts on.

#include "fulltime/config/config.hpp"
#include "fulltime/net/endpoint_handlers.hpp"

namespace fulltime::actors {
class placement_service;
struct placement_metrics;
}  // namespace fulltime::actors

namespace fulltime::db {
class read_router;
}  // namespace fulltime::db

namespace fulltime::metrics {
class counter;
class gauge;
}  // namespace fulltime::metrics

namespace fulltime::net {

/// Holds what the bets handlers use; every pointer must outlive the gateway's shutdown().
struct bets_endpoint_services {
    actors::placement_service* placement = nullptr;
    actors::placement_metrics* metrics = nullptr;
    db::read_router* reads = nullptr;  ///< must belong to the main loop
    read_settings reads_settings;
    /// `bets` reads the projector had not passed the session's own write in time for, answered
    /// from the write tables.
    metrics::counter* reads_behind = nullptr;
    /// This engine's projector's fulltime_projector_yielding (nullptr: it runs none). While it
    /// is 1 the projector leaves its pages to a settlement (read.projector_yield_ms), so a read
    /// the read model has not caught up with goes to the write tables at once rather than
    /// wait read.ryw_wait_ms for a projector that is not running.
    const metrics::gauge* projector_yielding = nullptr;
};

/// Registers the `place`, `balance` and `bets` handlers in `handlers`.
void add_bets_handlers(endpoint_handlers& handlers, bets_endpoint_services services);

}  // namespace fulltime::net
