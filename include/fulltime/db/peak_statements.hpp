#pragma once
/// The database side of a peak sample (core/peak_diagnosis.hpp): one read-only statement per
/// sample over pg_stat_activity, pg_stat_user_tables, the settlement backlog, pg_stat_replication
/// and pg_replication_slots; pg_blocking_pids only for sessions seen waiting, and only as often as
/// the sampler allows (it is costly); PgBouncer's SHOW POOLS on its admin console. None locks a
/// row or writes.

#include "fulltime/core/peak_diagnosis.hpp"
#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace fulltime::db {

/// Fills the database part of `out` and sets out.database_ok and out.backlog_known: lock
/// waiters and idle-in-transaction sessions of this database (at most `sessions_max` of each
/// kind, the longest first), the oldest open transaction of a client session other than this
/// one, the hot tables' vacuum readings, the `markets_max` oldest settlement backlogs and the
/// totals, each standby and each replication slot.
boost::asio::awaitable<outcome<void>> read_peak_database(connection& conn, diagnosis::sample& out,
                                                         std::size_t sessions_max,
                                                         std::size_t markets_max);

/// Fills blocked_by of each session in out.lock_waits and out.blockers with the sessions they
/// wait for (pg_blocking_pids, one call per waiter).
boost::asio::awaitable<outcome<void>> read_blockers(connection& conn, diagnosis::sample& out);

/// Returns the value a connection string (keyword/value or URI, parsed by libpq, quoting
/// included) gives `keyword` ("host", "dbname", ...), or an empty string when it gives none or
/// does not parse.
std::string conninfo_value(const std::string& conninfo, std::string_view keyword);

/// Returns the database a connection string names (`dbname`), or an empty string.
std::string database_of(const std::string& conninfo);

/// Returns PgBouncer's SHOW POOLS summed over every pool of `database` (all when empty): the
/// clients waiting and the longest wait. `conn` is a connection to the admin console (database
/// "pgbouncer", simple protocol).
boost::asio::awaitable<outcome<diagnosis::bouncer_reading>> read_bouncer_pools(
    connection& conn, const std::string& database);

}  // namespace fulltime::db
