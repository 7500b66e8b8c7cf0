#pragma once
/// The migration step shared by `fulltime migrate` and `fulltime serve`.

#include "fulltime/config/config.hpp"
#include "fulltime/db/migrations.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <string>

namespace fulltime::app {

/// Opens one connection to `conninfo`, applies the compiled-in migrations, logs what it did, and
/// closes the connection.
boost::asio::awaitable<db::outcome<db::migration_report>> apply_migrations(
    boost::asio::any_io_executor executor, std::string conninfo, config cfg);

}  // namespace fulltime::app
