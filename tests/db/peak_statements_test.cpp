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

TEST_CASE("conninfo_value reads any keyword, quoted values included") {
    using fulltime::db::conninfo_value;
    const std::string c = "host='/tmp/a b' port=6432 dbname=fulltime user=fulltime";
    CHECK(conninfo_value(c, "host") == "/tmp/a b");
    CHECK(conninfo_value(c, "port") == "6432");
    CHECK(conninfo_value(c, "user") == "fulltime");
    CHECK(conninfo_value(c, "password").empty());
    CHECK(conninfo_value("postgresql://u@h:5433/d", "port") == "5433");
    CHECK(conninfo_value("host='unterminated", "host").empty());
}
