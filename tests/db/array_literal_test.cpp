// Unit tests of the array literals that carry a placement group to fulltime_place_group
// (db::array_literal, db::encode_place_group). That they read back unchanged on the server is
// tests/db/placement_group_pgtest.cpp's "keys with any characters" case.

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/db/params.hpp"
#include "fulltime/db/placement_statements.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

using namespace fulltime;

TEST_CASE("array_literal: every element quoted, only backslash and double quote escaped") {
    CHECK(db::array_literal{}.str() == "{}");
    CHECK(db::array_literal{}.add("").str() == R"({""})");
    CHECK(db::array_literal{}.add("a").add("b").str() == R"({"a","b"})");
    CHECK(db::array_literal{}.add("NULL").add("null").str() == R"({"NULL","null"})");
    CHECK(db::array_literal{}.add(R"(say "hi")").str() == R"({"say \"hi\""})");
    CHECK(db::array_literal{}.add(R"(C:\dir\)").str() == R"({"C:\\dir\\"})");
    CHECK(db::array_literal{}.add(R"(\")").str() == R"({"\\\""})");
    // Separators, braces and white space are plain bytes inside quotes.
    CHECK(db::array_literal{}.add("a,b").add("{c}").add(" d ").add("\t\n").str() ==
          "{\"a,b\",\"{c}\",\" d \",\"\t\n\"}");
    CHECK(db::array_literal{}.add("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x8E\xB2").str() ==
          "{\"\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x8E\xB2\"}");
    CHECK(db::array_literal{}.add("'; DROP TABLE bets; --").str() ==
          R"({"'; DROP TABLE bets; --"})");
}

TEST_CASE("array_literal: integers, quoted like text") {
    CHECK(db::array_literal{}.add(std::int64_t{0}).add(std::int64_t{-7}).str() == R"({"0","-7"})");
    CHECK(db::array_literal{}.add(std::numeric_limits<std::int64_t>::max()).str() ==
          R"({"9223372036854775807"})");
    CHECK(db::array_literal{}.add(std::numeric_limits<std::int64_t>::min()).str() ==
          R"({"-9223372036854775808"})");
}

TEST_CASE("encode_place_group: element i of every array is item i") {
    std::vector<bets::place_request> requests(3);
    requests[0] = {42, "k1", 1001, 1000, 25000, bets::accept_policy::exact};
    requests[1] = {42, R"(a,"b"\c)", 1002, 250, 16000, bets::accept_policy::better};
    requests[2] = {7, "", 1003, 1, 10100, bets::accept_policy::any};
    const std::vector<db::place_group_item> items{
        {&requests[0], "fp-1"}, {&requests[1], "fp,2"}, {&requests[2], R"(fp"3)"}};
    const auto p = db::encode_place_group(items);
    CHECK(p.accounts == R"({"42","42","7"})");
    CHECK(p.keys == R"({"k1","a,\"b\"\\c",""})");
    CHECK(p.fingerprints == R"({"fp-1","fp,2","fp\"3"})");
    CHECK(p.selections == R"({"1001","1002","1003"})");
    CHECK(p.stakes == R"({"1000","250","1"})");
    CHECK(p.odds == R"({"25000","16000","10100"})");
    CHECK(p.accepts == R"({"exact","better","any"})");

    const auto empty = db::encode_place_group({});
    CHECK(empty.accounts == "{}");
    CHECK(empty.keys == "{}");
}
