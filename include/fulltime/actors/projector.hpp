#pragma once
/// The projector of the read model (docs/schema.md, "Read model"; docs/architecture.md, "Reads"):
/// a loop on the main loop's `background` pool that applies the outbox, page by page in commit
/// order, to bet_views and market_views (db/functions/fulltime_project.sql: one transaction a
/// page, the cursor stored in it). A full page is followed at once by the next; once caught up it
/// sleeps read.projector_interval_ms. A failed page is logged and retried after a second on a
/// fresh connection; nothing is lost, since the cursor moved only with the page's commit.
/// With read.projector_yield_ms, it leaves the database to a settlement that holds a slot for at
/// most that long at a time, then catches up in full (core/projector_yield.hpp): the read model
/// falls behind during a burst, and a read that needs an account's own write goes to the write
/// tables meanwhile (read.ryw_wait_ms).

#include "fulltime/config/config.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <functional>
#include <memory>

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::metrics {
class counter;
class gauge;
class registry;
}  // namespace fulltime::metrics

namespace fulltime::actors {

/// Holds the projector's series, registered once in the engine's registry.
struct projector_metrics {
    /// Registers every series in `registry`, which must outlive this object.
    explicit projector_metrics(metrics::registry& registry);

    metrics::counter& rows;      ///< outbox rows applied
    metrics::counter& pages;     ///< pages committed
    metrics::counter& failures;  ///< pages that failed (retried)
    metrics::gauge& caught_up;   ///< 1 when the last page was not full
    metrics::gauge& yielding;    ///< 1 while it leaves its pages to settlement
};

/// Runs the projector until `stopped` is set. Spawn it once on the pool's thread. `settling`
/// says whether a settlement holds a slot now (called from the pool's thread before each page;
/// empty: never), which read.projector_yield_ms leaves the database to.
boost::asio::awaitable<void> run_projector(db::pool& pool, read_settings settings,
                                           projector_metrics& metrics,
                                           std::shared_ptr<const std::atomic<bool>> stopped,
                                           std::function<bool()> settling);

}  // namespace fulltime::actors
