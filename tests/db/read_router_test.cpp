// Unit tests of the WAL positions the read router compares (db::parse_lsn, db::format_lsn): a
// session's commit LSN and a standby's replay position travel as pg_lsn text and are compared as
// 64-bit numbers, so a misparse would send a read to a standby that has not replayed the
// session's write.

#include "fulltime/db/read_router.hpp"

#include <doctest/doctest.h>

using namespace fulltime;

TEST_CASE("parse_lsn reads pg_lsn text as its 64-bit position") {
    CHECK(db::parse_lsn("0/0") == 0U);
    CHECK(db::parse_lsn("0/16B3748") == 0x16B3748U);
    CHECK(db::parse_lsn("16/B374D848") == 0x16B374D848ULL);
    CHECK(db::parse_lsn("FFFFFFFF/FFFFFFFF") == 0xFFFFFFFFFFFFFFFFULL);
    // Lower-case hex is what no server prints, but it is the same number.
    CHECK(db::parse_lsn("16/b374d848") == 0x16B374D848ULL);
    // Order: the high half dominates.
    CHECK(*db::parse_lsn("1/0") > *db::parse_lsn("0/FFFFFFFF"));
}

TEST_CASE("parse_lsn refuses what is not a pg_lsn") {
    for (const char* bad : {"", "/", "0/", "/0", "16B374D848", "0/0/0", "G/0", "0/G", " 0/0",
                            "0/0 ", "-1/0", "100000000/0", "0/100000000", "+1/0"}) {
        CAPTURE(bad);
        CHECK_FALSE(db::parse_lsn(bad).has_value());
    }
}

TEST_CASE("format_lsn writes what parse_lsn reads") {
    CHECK(db::format_lsn(0) == "0/0");
    CHECK(db::format_lsn(0x16B374D848ULL) == "16/B374D848");
    for (std::uint64_t lsn : {0ULL, 1ULL, 0xFFFFFFFFULL, 0x100000000ULL, 0xFFFFFFFFFFFFFFFFULL}) {
        CHECK(db::parse_lsn(db::format_lsn(lsn)) == lsn);
    }
}

TEST_CASE("route names are stable labels") {
    CHECK(db::route_name(db::read_route::fresh) == "fresh");
    CHECK(db::route_name(db::read_route::waited) == "waited");
    CHECK(db::route_name(db::read_route::no_standby) == "no_standby");
    CHECK(db::route_name(db::read_route::standby_down) == "standby_down");
    CHECK(db::route_name(db::read_route::stale) == "stale");
    CHECK(db::route_name(db::read_route::behind_write) == "behind_write");
    CHECK(db::route_name(db::read_route::standby_failed) == "standby_failed");
}
