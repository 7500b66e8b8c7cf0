// Unit tests of the SQLSTATE mapping, failure formatting and parameter text.

#include "fulltime/db/error.hpp"
#include "db/detail_error.hpp"
#include "fulltime/db/params.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <set>

using namespace fulltime::db;

TEST_CASE("error: SQLSTATEs map to codes") {
    CHECK(detail::classify_sqlstate("55P03") == errc::lock_timeout);
    CHECK(detail::classify_sqlstate("57014") == errc::statement_timeout);
    CHECK(detail::classify_sqlstate("23505") == errc::unique_violation);
    CHECK(detail::classify_sqlstate("23514") == errc::check_violation);
    CHECK(detail::classify_sqlstate("23503") == errc::foreign_key_violation);
    CHECK(detail::classify_sqlstate("40001") == errc::serialization_failure);
    CHECK(detail::classify_sqlstate("40P01") == errc::deadlock);
    for (const char* lost : {"08000", "08003", "08006", "08P01", "57P01", "57P02", "57P03"}) {
        CHECK_MESSAGE(detail::classify_sqlstate(lost) == errc::connection_lost, lost);
    }
    for (const char* other : {"42601", "22012", "23502", "40002", "57000", "", "08"}) {
        CHECK_MESSAGE(detail::classify_sqlstate(other) == errc::server_error, other);
    }
}

TEST_CASE(
    "error: retryable codes are exactly lock timeout and serialization failure and deadlock") {
    std::set<errc> retryable;
    for (int i = static_cast<int>(errc::connection_lost); i <= static_cast<int>(errc::server_error);
         ++i) {
        failure f;
        f.code = static_cast<errc>(i);
        if (f.retryable()) {
            retryable.insert(f.code);
        }
    }
    CHECK(retryable ==
          std::set<errc>{errc::lock_timeout, errc::serialization_failure, errc::deadlock});
}

TEST_CASE("error: every code has a distinct name and describe() is one line") {
    std::set<std::string_view> names;
    for (int i = static_cast<int>(errc::connection_lost); i <= static_cast<int>(errc::server_error);
         ++i) {
        const auto name = to_string(static_cast<errc>(i));
        CHECK(name != "unknown");
        names.insert(name);
    }
    CHECK(names.size() == 15);

    failure f{errc::unique_violation, "23505", "duplicate key"};
    CHECK(describe(f) == "unique_violation [23505]: duplicate key");
    failure local{errc::deadline_exceeded, "", "no reply within 5 ms"};
    CHECK(describe(local) == "deadline_exceeded: no reply within 5 ms");
    outcome<int> failed{f};
    CHECK_THROWS_WITH_AS(failed.value(), "unique_violation [23505]: duplicate key",
                         std::runtime_error);
}

TEST_CASE("params: values become their PostgreSQL text form") {
    params p{std::numeric_limits<std::int64_t>::min(),
             std::int32_t{-7},
             std::numeric_limits<std::uint64_t>::max(),
             std::uint32_t{7},
             true,
             false,
             std::string_view{"view"},
             std::string{"string"},
             "c string",
             std::nullopt,
             std::optional<std::int64_t>{},
             std::optional<std::int64_t>{5}};
    REQUIRE(p.size() == 12);
    CHECK(p.at(0) == "-9223372036854775808");
    CHECK(p.at(1) == "-7");
    CHECK(p.at(2) == "18446744073709551615");
    CHECK(p.at(3) == "7");
    CHECK(p.at(4) == "true");
    CHECK(p.at(5) == "false");
    CHECK(p.at(6) == "view");
    CHECK(p.at(7) == "string");
    CHECK(p.at(8) == "c string");
    CHECK_FALSE(p.at(9).has_value());
    CHECK_FALSE(p.at(10).has_value());
    CHECK(p.at(11) == "5");
    CHECK_THROWS_AS(p.at(12), std::out_of_range);

    params empty;
    CHECK(empty.size() == 0);
    empty.add(1).add("x");
    CHECK(empty.size() == 2);
}
