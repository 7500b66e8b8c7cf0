#pragma once
/// One PostgreSQL connection driven without blocking: libpq in non-blocking mode, its socket
/// (PQsocket) waited on by Asio, so a coroutine awaits a query while its thread serves others.
///
/// A connection is used by one coroutine at a time, on the executor it was opened with. It holds
/// no session state (no SET, LISTEN, session advisory locks or WITH HOLD cursors) so that it
/// works through PgBouncer in transaction mode; per-transaction settings use SET LOCAL. The one
/// exception, the statements query_prepared prepares, is switched off at open for such a
/// bouncer.

#include "fulltime/db/error.hpp"
#include "fulltime/db/params.hpp"
#include "fulltime/db/result.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace fulltime::db {

/// Names a statement that a connection may prepare once and then run by name
/// (connection::query_prepared). Both strings have static storage duration (literals), and a
/// name always stands for the same text.
struct statement {
    const char* name;  ///< the server-side name of the prepared statement
    const char* sql;
};

/// Holds what a connection asks of its server session when it starts (libpq's startup packet,
/// so nothing is SET afterwards and a bouncer has no session state to carry).
struct session_options {
    /// application_name unless the conninfo or PGAPPNAME names one (pg_stat_activity shows it).
    std::string application_name = "fulltime";
    /// The session's statement_timeout, a bound on every statement; a transaction may set a
    /// longer one with SET LOCAL. 0: the server's.
    std::int64_t statement_timeout_ms = 0;
    /// The session's idle_in_transaction_session_timeout. 0: the server's.
    std::int64_t idle_in_transaction_timeout_ms = 0;
    /// Whether the planner may JIT-compile this session's statements; nullopt: the server's.
    /// The engine's pools turn it off: their statements are short, a compilation costs tens of
    /// milliseconds, and its trigger is the plan's estimated cost, which over partitioned tables
    /// (their parents have no statistics: autovacuum does not analyse them) is far above
    /// jit_above_cost even for small joins; `fulltime audit` spent 70 ms a statement compiling
    /// on a database of 90 bets.
    std::optional<bool> jit;
    /// The session's synchronous_commit ("": the server's), e.g. remote_apply for placements
    /// that a standby must have applied before they answer.
    std::string synchronous_commit;
};

/// Returns the libpq `options` value that sets `s`'s timeouts, JIT and synchronous_commit
/// ("-c name=value ...").
std::string startup_options(const session_options& s);

/// Wraps one libpq connection.
class connection {
public:
    /// Opens a connection to `conninfo` (keyword/value string or URI) within `connect_timeout`.
    /// Round trips on it time out after `query_timeout` unless a call gives its own.
    /// `prepared_statements` says whether query_prepared prepares its statements on the server
    /// (false behind a bouncer that does not track them: docs/config.md). `session` is sent in
    /// the startup packet; an `options` keyword in the conninfo replaces its timeouts.
    static boost::asio::awaitable<outcome<std::unique_ptr<connection>>> open(
        boost::asio::any_io_executor executor, std::string conninfo,
        std::chrono::milliseconds connect_timeout, std::chrono::milliseconds query_timeout,
        bool prepared_statements, session_options session);

    /// Opens a connection with the default session_options (application_name "fulltime", the
    /// server's timeouts). Not a coroutine itself: GCC 12 mishandles a class-type default
    /// argument's temporary across a co_await, so the default is built here and moved.
    static boost::asio::awaitable<outcome<std::unique_ptr<connection>>> open(
        boost::asio::any_io_executor executor, std::string conninfo,
        std::chrono::milliseconds connect_timeout, std::chrono::milliseconds query_timeout,
        bool prepared_statements = true) {
        return open(std::move(executor), std::move(conninfo), connect_timeout, query_timeout,
                    prepared_statements, session_options{});
    }

    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    /// Runs one statement with bound parameters (extended protocol, text format) and returns
    /// its rows. A failure that leaves the connection unusable marks it broken.
    boost::asio::awaitable<outcome<result>> query(std::string sql, params args = {});

    /// Runs one statement with its own round-trip deadline.
    boost::asio::awaitable<outcome<result>> query(std::string sql, params args,
                                                  std::chrono::milliseconds timeout);

    /// Runs `s` as query() would, but, when the connection prepares statements, as the named
    /// prepared statement `s.name`: prepared on first use on this connection (one extra round
    /// trip, within the same `timeout`), then executed by name. A prepared statement the server
    /// no longer has (SQLSTATE 26000, e.g. after a bouncer's DISCARD ALL) is prepared again once.
    /// Without prepared statements it is query(s.sql, args, timeout).
    boost::asio::awaitable<outcome<result>> query_prepared(statement s, params args,
                                                           std::chrono::milliseconds timeout);

    /// Runs several statements separated by semicolons (simple protocol, no parameters), as
    /// migrations need. Returns the last statement's result.
    boost::asio::awaitable<outcome<result>> execute_script(std::string sql);

    /// Returns whether the connection can no longer be used (lost, timed out mid-query, or left
    /// inside a failed transaction by a caller). A pool discards broken connections.
    bool broken() const noexcept;

    /// Returns whether the connection is idle outside a transaction (PQtransactionStatus IDLE).
    bool idle() const noexcept;

    /// Returns whether a transaction is open on this connection and it can still be ended:
    /// PQTRANS_INTRANS or PQTRANS_INERROR on a connection that is not lost or timed out.
    bool in_transaction() const noexcept;

    /// Returns whether an error has aborted the open transaction (PQTRANS_INERROR), so that
    /// only ROLLBACK can follow.
    bool in_failed_transaction() const noexcept;

    /// Reads, without waiting, whatever the server sent while the connection sat idle, and
    /// returns false (marking it broken) when that shows the session is gone: a terminated
    /// backend or a restarted server leaves an error and end-of-file on the socket. A pool calls
    /// it before lending an idle connection. A silent network failure is not seen here; it
    /// surfaces on the next round trip as connection_lost or deadline_exceeded.
    bool check_alive() noexcept;

    /// Returns the server process id of this connection (for tests and diagnostics).
    int backend_pid() const noexcept;

    /// Closes the connection now; later calls fail with errc::connection_lost.
    void close() noexcept;

    struct impl;

private:
    explicit connection(std::unique_ptr<impl> state);
    std::unique_ptr<impl> impl_;
};

}  // namespace fulltime::db
