#pragma once
/// The operator's view of the reconciliation (admin token, docs/protocol-feed.md):
/// POST /v1/reconcile runs a reconciliation now and answers with its summary when it ends;
/// GET /v1/incidents lists incidents of every kind (?status=open|resolved|all, ?kind=,
/// ?account_id=, ?limit=), read on the `read` pool (docs/design.md promise 4).

#include "fulltime/net/http_route.hpp"

namespace fulltime {
namespace actors {
class reconciliation_service;
}  // namespace actors
namespace db {
struct pools;
}  // namespace db
}  // namespace fulltime

namespace fulltime::net {

/// Returns the routes of POST /v1/reconcile and GET /v1/incidents. The references must outlive
/// the gateway.
http_routes make_reconciliation_routes(db::pools& pools,
                                       actors::reconciliation_service& reconciliation);

}  // namespace fulltime::net
