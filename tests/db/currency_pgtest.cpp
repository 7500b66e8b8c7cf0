// A currency's minor unit in SQL (db/functions/fulltime_minor_digits.sql, fulltime_to_minor.sql)
// against the engine's (core/money): the placement functions convert a stake with the SQL table
// and the engine formats the amounts it stored with its own, so the two must agree on every
// code, and the conversion on every amount.

#include "fulltime/core/money.hpp"
#include "fulltime/limits.hpp"
#include "support/engine_fixture.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

using namespace fulltime;
using fulltime::test::engine;
using fulltime::test::engine_parts;

TEST_CASE("currency: fulltime_minor_digits agrees with money::minor_digits on every code") {
    const engine e(engine_parts{});
    // Every three-letter code that is not two decimals, as "CODE:digits,", in code order.
    const std::string sql =
        "SELECT string_agg(c || ':' || fulltime_minor_digits(c), ',' ORDER BY c) FROM ("
        "SELECT chr(65 + a) || chr(65 + b) || chr(65 + d) AS c FROM generate_series(0, 25) a, "
        "generate_series(0, 25) b, generate_series(0, 25) d) x WHERE fulltime_minor_digits(c) <> 2";
    std::string want;
    for (char a = 'A'; a <= 'Z'; ++a) {
        for (char b = 'A'; b <= 'Z'; ++b) {
            for (char d = 'A'; d <= 'Z'; ++d) {
                const std::string code{a, b, d};
                if (const int digits = money::minor_digits(code); digits != 2) {
                    want += (want.empty() ? "" : ",") + code + ":" + std::to_string(digits);
                }
            }
        }
    }
    CHECK(e.text(sql) == want);
    CHECK(e.text("SELECT fulltime_minor_digits(NULL)") == "2");
}

TEST_CASE("currency: fulltime_to_minor converts thousandths as money::thousandths_to_minor") {
    const engine e(engine_parts{});
    const std::int64_t amounts[] = {1,
                                    5,
                                    10,
                                    100,
                                    1000,
                                    10'500,
                                    1'000'000,
                                    1'000'005,
                                    limits::amount_minor_max,
                                    limits::amount_minor_max * 10,
                                    limits::amount_minor_max * 10 + 10,
                                    limits::amount_thousandths_max,
                                    limits::amount_thousandths_max + 1000};
    for (const char* currency : {"JPY", "EUR", "KWD"}) {
        for (std::int64_t amount : amounts) {
            CAPTURE(currency);
            CAPTURE(amount);
            const auto want = money::thousandths_to_minor(amount, money::minor_digits(currency));
            CHECK(e.text("SELECT coalesce(fulltime_to_minor(" + std::to_string(amount) + ", 3, '" +
                         currency + "')::text, 'NULL')") ==
                  (want ? std::to_string(*want) : "NULL"));
        }
    }
    // A coarser scale multiplies (tests pass hundredths), within the same bound.
    CHECK(e.scalar("SELECT fulltime_to_minor(1050, 2, 'KWD')") == 10'500);
    CHECK(e.scalar("SELECT fulltime_to_minor(1050, 2, 'EUR')") == 1050);
    CHECK(e.text("SELECT fulltime_to_minor(1050, 2, 'JPY') IS NULL") == "t");
    CHECK(e.text("SELECT fulltime_to_minor(100000000000001, 2, 'KWD') IS NULL") == "t");
}

TEST_CASE("currency: the conversion is inlined into the statements that call it") {
    const engine e(engine_parts{});
    // An inlined SQL function leaves its expression in the plan's output, not a call of the
    // function (columns of a table: constants would be folded whether inlined or not).
    const auto plan = e.text(
        "EXPLAIN (VERBOSE, FORMAT JSON) SELECT fulltime_to_minor(available, 3, currency) "
        "FROM accounts");
    CAPTURE(plan);
    CHECK(plan.find("fulltime_to_minor") == std::string::npos);
    CHECK(plan.find("fulltime_minor_digits") == std::string::npos);
    CHECK(plan.find("JPY") != std::string::npos);
}
