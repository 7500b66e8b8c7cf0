#pragma once
/// Ordered plain-SQL migrations (db/migrations/NNNN_name.sql), each applied once in its own
/// transaction and recorded in fulltime_schema_migrations with a checksum. Concurrent starts are
/// safe: every migration transaction first takes a transaction-scoped advisory lock, which also
/// works through PgBouncer in transaction mode.

#include "fulltime/core/resources.hpp"
#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>
#include <vector>

namespace fulltime::db {

/// Describes what one migrate call did.
struct migration_report {
    std::vector<std::string> applied;   ///< names applied by this call, in order
    std::size_t already_applied = 0;    ///< names found applied before this call
};

/// Applies the migrations not yet recorded, in name order. A recorded migration whose checksum
/// differs from the file is an error (errc::bad_result) and nothing further is applied.
boost::asio::awaitable<outcome<migration_report>> migrate(
    connection& conn, std::vector<resources::migration_source> migrations);

/// Returns whether every given migration is recorded as applied (for /readyz).
boost::asio::awaitable<outcome<bool>> is_migrated(
    connection& conn, std::vector<resources::migration_source> migrations);

}  // namespace fulltime::db
