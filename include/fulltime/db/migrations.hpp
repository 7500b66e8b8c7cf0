#pragma once
/// The schema runner. Numbered migrations (db/migrations/NNNN_name.sql: tables, indexes,
/// constraints, types, data) are each applied once in their own transaction and recorded in
/// fulltime_schema_migrations with a checksum. Function files (db/functions/<function>.sql, one
/// CREATE OR REPLACE FUNCTION each) are applied after them, all in one transaction, recorded in
/// fulltime_schema_functions with a checksum, and applied again whenever their text changes.
/// Concurrent starts are safe: every transaction of the runner first takes a transaction-scoped
/// advisory lock, which also works through PgBouncer in transaction mode. db/migrations.cpp
/// states the rules for writing both kinds of file.

#include "fulltime/core/resources.hpp"
#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>
#include <vector>

namespace fulltime::db {

/// Describes what one migrate call did.
struct migration_report {
    std::vector<std::string> applied;            ///< migrations applied by this call, in order
    std::size_t already_applied = 0;             ///< migrations found applied before this call
    std::vector<std::string> functions_applied;  ///< function files (re)applied, in name order
    std::size_t functions_unchanged = 0;         ///< function files skipped: recorded unchanged
    std::int64_t periods_added = 0;  ///< history periods (time partitions) made ahead of now
};

/// Applies the numbered migrations not yet recorded, in name order, then every function file
/// whose checksum is not the recorded one, in name order. A recorded migration whose checksum
/// differs from the file is an error (errc::bad_result) and nothing further is applied; so is a
/// database migrated before the baseline (it records a migration the baseline replaced).
boost::asio::awaitable<outcome<migration_report>> migrate(
    connection& conn, std::vector<resources::migration_source> migrations);

/// Sets this session's fulltime.history_period, which the migration that creates the time
/// partitions stores as their period (docs/schema.md, "Time partitions"). Call before migrate()
/// on a database that may not have them yet; without it they are monthly.
boost::asio::awaitable<outcome<void>> set_history_period(connection& conn, std::string period);

/// Returns whether every given migration is recorded as applied and every given function file
/// is recorded with its current checksum (for /readyz).
boost::asio::awaitable<outcome<bool>> is_migrated(
    connection& conn, std::vector<resources::migration_source> migrations);

}  // namespace fulltime::db
