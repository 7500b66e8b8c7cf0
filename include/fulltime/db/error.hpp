#pragma once
/// The database layer's one error type. libpq results and SQLSTATEs become these codes in one
/// place (db/error.cpp, `check_result`); callers branch on the code, never on message text.

#include <boost/system/result.hpp>

#include <string>
#include <string_view>

namespace fulltime::db {

/// Names a class of database failure that callers handle differently.
enum class errc {
    connection_lost = 1,    ///< socket closed, server restarted, backend terminated
    connect_failed,         ///< could not open a connection
    lock_timeout,           ///< SQLSTATE 55P03 (SET LOCAL lock_timeout expired)
    statement_timeout,      ///< SQLSTATE 57014 raised by statement_timeout
    unique_violation,       ///< SQLSTATE 23505
    check_violation,        ///< SQLSTATE 23514
    foreign_key_violation,  ///< SQLSTATE 23503
    serialization_failure,  ///< SQLSTATE 40001
    deadlock,               ///< SQLSTATE 40P01
    deadline_exceeded,      ///< our client-side deadline on a round trip expired
    pool_timeout,           ///< no connection became free within the pool's wait bound
    pool_queue_full,        ///< the pool's wait queue is at its bound
    pool_closed,            ///< the pool is shutting down
    bad_result,             ///< a result had an unexpected shape (programmer or schema error)
    server_error,           ///< any other error reported by the server
};

/// Returns the stable snake_case name of a code, as used in logs and metrics.
std::string_view to_string(errc code) noexcept;

/// Describes one failure: its class, the SQLSTATE when the server sent one, and a message for
/// logs. The message may contain SQL details and is never sent to a client.
struct failure {
    errc code = errc::server_error;
    std::string sqlstate;
    std::string message;

    /// Returns whether retrying the same transaction may succeed (lock timeout, serialization
    /// failure, deadlock).
    bool retryable() const noexcept;
};

/// Formats a failure as one line for logs: "<code> [<sqlstate>]: <message>".
std::string describe(const failure& f);

/// Holds a value or a failure.
template <class T>
using outcome = boost::system::result<T, failure>;

/// Throws a failure as std::runtime_error; used by boost::system::result::value().
[[noreturn]] void throw_exception_from_error(const failure& f, const boost::source_location& loc);

}  // namespace fulltime::db
