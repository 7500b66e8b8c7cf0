// db::database_of: the database PgBouncer's SHOW POOLS rows are matched against.

#include "fulltime/db/peak_statements.hpp"

#include <doctest/doctest.h>

using fulltime::db::database_of;

TEST_CASE("database_of reads dbname from keyword/value and URI connection strings") {
    CHECK(database_of("host=/tmp port=6432 dbname=fulltime user=app") == "fulltime");
    CHECK(database_of("postgresql://app@bouncer:6432/sportsbook?sslmode=disable") == "sportsbook");
    CHECK(database_of("host=/tmp user=app").empty());
    CHECK(database_of("").empty());
    CHECK(database_of("host='unterminated").empty());
}
