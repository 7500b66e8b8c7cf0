#pragma once
/// The steps `fulltime serve` takes on the database before it listens: the migrations (shared
/// with `fulltime migrate`) and the check of the server's settings.

#include "fulltime/config/config.hpp"
#include "fulltime/db/migrations.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <string>

namespace fulltime::app {

/// Opens one connection to `conninfo`, applies the compiled-in migrations, logs what it did, and
/// closes the connection. Throws `refusal` (exit status 1) when the database records migrations
/// this binary does not carry (a newer release's schema): that is a "no", not a failure.
boost::asio::awaitable<db::outcome<db::migration_report>> apply_migrations(
    boost::asio::any_io_executor executor, std::string conninfo, config cfg);

/// Opens one connection to `conninfo` without the engine's session settings, reads the server
/// settings that matter at the peak (db/server_settings.hpp), logs a warning for each risky one
/// and returns them with their warnings as JSON (for /v1/diagnostics). A database that does not
/// answer gives a JSON object with an `error` and a logged warning, never a failed start.
boost::asio::awaitable<std::string> check_server_settings(boost::asio::any_io_executor executor,
                                                          std::string conninfo, config cfg);

}  // namespace fulltime::app
