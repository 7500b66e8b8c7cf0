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
/// database migrated before the baseline (it records a migration the baseline replaced), and a
/// database newer than this binary: one that records a migration this binary does not carry
/// (a newer release migrated it; running this one's SQL on that schema, or putting this one's
/// function files back over the newer ones, is what the refusal prevents). Each migration's
/// transaction takes `lock_timeout_ms` (0: none) so that its DDL fails, rather than queues
/// behind live sessions and makes every later query on the table queue behind it.
boost::asio::awaitable<outcome<migration_report>> migrate(
    connection& conn, std::vector<resources::migration_source> migrations,
    std::int64_t lock_timeout_ms = 0);

/// Describes the schema as recorded in a database against the migrations this binary carries.
struct migration_status {
    std::vector<std::string> applied;  ///< carried and recorded, in name order
    std::vector<std::string> pending;  ///< carried, not recorded: the next migrate applies them
    std::vector<std::string> unknown;  ///< recorded, not carried: a newer release's
    std::vector<std::string> functions_changed;  ///< function files not recorded as they are
    std::size_t functions_current = 0;           ///< function files recorded as they are
};

/// Reads the status without changing anything (a database never migrated has every migration
/// pending).
boost::asio::awaitable<outcome<migration_status>> read_migration_status(
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
