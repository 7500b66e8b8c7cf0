#pragma once
/// Private to db/: turns libpq results and connection states into failures. Implemented in
/// db/error.cpp, the one place where SQLSTATEs become db::errc codes.

#include "fulltime/db/error.hpp"

#include <libpq-fe.h>

#include <string>
#include <string_view>

namespace fulltime::db::detail {

/// Returns the code for a SQLSTATE; server_error when the state has no code of its own.
errc classify_sqlstate(std::string_view sqlstate) noexcept;

/// Returns whether a failure with this code leaves its connection unusable.
bool breaks_connection(errc code) noexcept;

/// Checks one result of PQgetResult: success for COMMAND_OK, TUPLES_OK and EMPTY_QUERY,
/// otherwise the failure it reports. A result with no SQLSTATE on a connection that libpq
/// marked bad is connection_lost.
outcome<void> check_result(PGconn* conn, const PGresult* res);

/// Describes the state of a connection after a libpq call failed (PQsendQuery*, PQflush,
/// PQconsumeInput returned an error): connection_lost when libpq marked it bad, else
/// `otherwise`, with libpq's message.
failure connection_failure(PGconn* conn, errc otherwise);

/// Builds a failure with no SQLSTATE.
failure make_failure(errc code, std::string message);

}  // namespace fulltime::db::detail
