#pragma once
/// The read model's statements (docs/schema.md, "Read model"): one page of the projector that
/// follows the outbox into bet_views and market_views, the rebuild from the write tables, and the
/// check of the read model against them. The SQL is db/functions/fulltime_project*.sql.

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::db {

/// Holds what one projector page did.
struct projection_step {
    std::int64_t rows = 0;   ///< outbox rows the page applied
    bool caught_up = false;  ///< the page was not full; false with rows == 0: busy, try later
    /// The horizon after the page, an xid8 as decimal text: every outbox row of a transaction
    /// below it is in the read model. Empty when the projector has no projections row yet.
    std::string consumed_below;
};

/// Applies at most `rows_max` (1..limits::projection_page_rows_max) outbox rows after
/// `consumer`'s cursor to the read model and moves the cursor, in one transaction
/// (fulltime_project: one statement). Idempotent: a row applied twice changes nothing. When
/// another projector or a rebuild holds the cursor, returns at once with rows 0 and caught_up
/// false. A consumer without a cursor fails (server_error, SQLSTATE P0002): a rebuild makes one.
boost::asio::awaitable<outcome<projection_step>> project_page(connection& conn,
                                                              std::string consumer,
                                                              std::int64_t rows_max);

/// Returns whether `consumer`'s horizon passed transaction `xid` (an xid8's 64 bits): every outbox
/// row that transaction wrote is in the read model, as this connection's server shows it (a
/// standby: as of its replay). False when the projector has no projections row.
boost::asio::awaitable<outcome<bool>> projection_passed(connection& conn, std::string consumer,
                                                        std::uint64_t xid);

/// Holds one market_views row: a market's bets in one currency (amounts in minor units).
struct market_summary {
    std::string currency;
    std::int64_t bets = 0;
    std::int64_t stake = 0;
    std::int64_t open_bets = 0;
    std::int64_t open_stake = 0;
    std::int64_t settled_bets = 0;
    std::int64_t payout = 0;
    std::string updated_at;  ///< when the projector last changed it (UTC, ISO 8601)
};

/// Reads `market_id`'s rows of market_views, one per currency (none: no bet projected yet).
boost::asio::awaitable<outcome<std::vector<market_summary>>> read_market_summary(
    connection& conn, std::int64_t market_id);

/// Holds what a rebuild wrote.
struct rebuild_report {
    std::int64_t bets_projected = 0;  ///< bet_views rows written from the write tables
    std::int64_t bets_kept = 0;       ///< bet_views rows kept: bets whose period left
    std::int64_t markets = 0;         ///< market_views rows written
    std::string consumed_below;       ///< the new horizon (xid8, decimal text)
};

/// Rebuilds bet_views and market_views from the write tables and puts `consumer`'s cursor at the
/// tail, in one transaction (fulltime_project_rebuild); makes the cursor if it is missing. Runs
/// while placements, settlements and the projector run; readers see the old rows until it
/// commits. Its time grows with the bets kept: the caller gives `conn` a query timeout to match.
boost::asio::awaitable<outcome<rebuild_report>> rebuild_projection(connection& conn,
                                                                   std::string consumer);

/// Holds one disagreement between the read model and the write tables.
struct projection_mismatch {
    /// bet_view_missing, bet_view_differs, bet_missing, market_view_missing,
    /// market_view_differs, market_view_extra, bet_open_missing, bet_open_extra or
    /// bet_result_extra (fulltime_project_verify.sql says each).
    std::string kind;
    std::optional<std::int64_t> bet_id;     ///< none for the market kinds
    std::optional<std::int64_t> market_id;  ///< the bet's, or the market's
    std::optional<std::string> expected;    ///< the row the write tables call for, as text
    std::optional<std::string> actual;      ///< the read model's row, as text
};

/// Compares the read model with the write tables in a REPEATABLE READ READ ONLY transaction of
/// its own (one snapshot for the cursor, the outbox after it, the write tables and the read
/// model); returns one mismatch per disagreement, none when the read model is right. Bets named
/// by outbox rows after `consumer`'s cursor are still on their way and are left out.
boost::asio::awaitable<outcome<std::vector<projection_mismatch>>> verify_projection(
    connection& conn, std::string consumer);

}  // namespace fulltime::db
