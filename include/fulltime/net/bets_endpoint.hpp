#pragma once
/// The /v1/bets message handlers (docs/protocol.md): `place` is validated without the
/// database, fingerprinted and handed to a placement actor; `balance` and `bets` are answered
/// from the `read` pool (the primary, for now). The token's account is the only account a
/// session acts on.

#include "fulltime/net/endpoint_handlers.hpp"

namespace fulltime::actors {
class placement_service;
struct placement_metrics;
}  // namespace fulltime::actors

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::net {

/// Holds what the bets handlers use; every pointer must outlive the gateway's shutdown().
struct bets_endpoint_services {
    actors::placement_service* placement = nullptr;
    actors::placement_metrics* metrics = nullptr;
    db::pool* read = nullptr;  ///< must belong to the io_context the gateway runs on
};

/// Registers the `place`, `balance` and `bets` handlers in `handlers`.
void add_bets_handlers(endpoint_handlers& handlers, bets_endpoint_services services);

}  // namespace fulltime::net
