#pragma once
/// Helpers for tests that need the real PostgreSQL started by scripts/test.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace fulltime::db {
class pool;
}  // namespace fulltime::db

namespace fulltime::test {

/// Applies the engine's migrations on a connection of `pool`, with time partitions of
/// `history_period` (config history.period); true when they all applied.
boost::asio::awaitable<bool> apply_migrations(db::pool* pool,
                                              std::string history_period = "1 month");

/// Returns the conninfo of the test server (FULLTIME_TEST_DATABASE_URL). Aborts the test run
/// with a clear message when it is unset: a pg test must never pass by not running.
std::string server_url();

/// Returns the conninfo of the test server's superuser (FULLTIME_TEST_ADMIN_URL), for what the
/// engine's role may not do: create and drop databases, settings per database. The test URL when
/// it is unset (a server whose test role is its own administrator).
std::string admin_url();

/// Returns the role name in `conninfo` (its `user`), or nullopt when it names none.
std::optional<std::string> user_of(const std::string& conninfo);

/// Returns `conninfo` with its dbname replaced (works for URIs and keyword/value strings).
std::string with_dbname(const std::string& conninfo, const std::string& dbname);

/// Runs one statement synchronously (tests only) on the calling thread's connection to
/// `conninfo`, opened on first use and again when found broken, and returns the first column of
/// the first row, or nullopt when there is none. A transaction the statement left open is
/// rolled back. Throws on error.
std::optional<std::string> exec_scalar(const std::string& conninfo, const std::string& sql);

/// Names the migrated template database CTest makes once per run before the pg tests
/// (tests/e2e/template_database.py, the fixture `pg_template`), with the default history period.
inline constexpr const char* template_database = "fulltime_test_template";

/// Returns true when migrating with `history_period` (config history.period; empty: the
/// migration's own default, a month) makes what the template holds: the template was migrated
/// by `fulltime migrate` with the shipped configuration.
bool template_fits(const std::string& history_period);

/// Says what a scratch database starts as.
enum class scratch_contents {
    empty,     ///< nothing: the test migrates it, or tests the migrations themselves
    migrated,  ///< a copy of the migrated template when it exists, else empty
};

/// Creates a fresh database on the test server, owned by the test role, and drops it on
/// destruction, so each test case starts from its own and cases may run in parallel.
class scratch_database {
public:
    /// Creates an empty database.
    scratch_database() : scratch_database(scratch_contents::empty) {}
    /// Creates a database that starts as `contents` says.
    explicit scratch_database(scratch_contents contents);
    ~scratch_database();
    scratch_database(const scratch_database&) = delete;
    scratch_database& operator=(const scratch_database&) = delete;

    /// Returns the conninfo of this database.
    const std::string& url() const noexcept { return url_; }
    /// Returns its name.
    const std::string& name() const noexcept { return name_; }

private:
    std::string name_;
    std::string url_;
};

/// Runs a coroutine to completion on a private single-threaded io_context and returns its
/// value (tests only: it blocks the calling thread).
template <class T>
T run(boost::asio::io_context& ioc, boost::asio::awaitable<T> task) {
    auto fut = boost::asio::co_spawn(ioc, std::move(task), boost::asio::use_future);
    ioc.restart();
    ioc.run();
    return fut.get();
}

}  // namespace fulltime::test
