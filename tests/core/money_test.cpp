#include "fulltime/core/money.hpp"

#include "fulltime/limits.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

namespace money = fulltime::money;
namespace limits = fulltime::limits;
using money::parse_error;

namespace {

/// Returns the error of a failed parse, or fails the test when it succeeded.
parse_error error_of(const money::parsed<std::int64_t>& r) {
    REQUIRE_FALSE(r.has_value());
    return r.error();
}

/// Returns the next value of a deterministic 64-bit generator (splitmix64), so that the
/// property tests below check the same values on every run.
std::uint64_t next_random(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Returns a value drawn from [0, max], deterministic given `state`.
std::int64_t random_up_to(std::uint64_t& state, std::int64_t max) {
    return static_cast<std::int64_t>(next_random(state) % (static_cast<std::uint64_t>(max) + 1));
}

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();

}  // namespace

// --- parse_amount (these at two decimals, EUR's; other exponents below) ------------------------

TEST_CASE("money: parse_amount accepts plain decimals with up to two places") {
    struct row {
        std::string_view text;
        std::int64_t minor;
    };
    const row rows[] = {
        {"0", 0},
        {"0.0", 0},
        {"0.00", 0},
        {"00", 0},
        {"0.01", 1},
        {"0.1", 10},
        {"0.10", 10},
        {"0.99", 99},
        {"1", 100},
        {"10", 1000},
        {"10.5", 1050},
        {"10.50", 1050},
        {"10.05", 1005},
        {"007.50", 750},
        {"0000000000010.00", 1000},
        {"123456.78", 12'345'678},
    };
    for (const auto& r : rows) {
        CAPTURE(r.text);
        const auto p = money::parse_amount(r.text, 2);
        REQUIRE(p.has_value());
        CHECK(*p == r.minor);
    }
}

TEST_CASE("money: parse_amount accepts exactly the bound and refuses one minor unit more") {
    const std::string max_text = money::format_amount(limits::amount_minor_max, 2);
    CAPTURE(max_text);
    const auto at_max = money::parse_amount(max_text, 2);
    REQUIRE(at_max.has_value());
    CHECK(*at_max == limits::amount_minor_max);

    const std::string above = money::format_amount(limits::amount_minor_max + 1, 2);
    CHECK(error_of(money::parse_amount(above, 2)) == parse_error::overflow);

    // The bound without decimals, and with leading zeros that still fit the length bound.
    const std::string whole = max_text.substr(0, max_text.find('.'));
    CHECK(*money::parse_amount(whole, 2) == limits::amount_minor_max);
    CHECK(*money::parse_amount("000" + max_text, 2) == limits::amount_minor_max);
}

TEST_CASE("money: parse_amount refuses the empty string") {
    CHECK(error_of(money::parse_amount("", 2)) == parse_error::empty);
    CHECK(error_of(money::parse_positive_amount("", 2)) == parse_error::empty);
    CHECK(error_of(money::parse_odds("")) == parse_error::empty);
}

TEST_CASE("money: parse_amount refuses anything but digits, one dot and digits") {
    const std::string_view bad[] = {
        " 10",  "10 ",      " ",     "\t1",   "1\n",   "+10",  "+0",   "1e3",      "1E3",
        "1e-2", "10,50",    "1,000", "1_000", "1'000", ".5",   ".50",  "5.",       "0.",
        ".",    "..",       "1..2",  "1.2.3", "1.2.",  "abc",  "0x10", "NaN",      "nan",
        "inf",  "Infinity", "-",     "--1",   "- 1",   "-+1",  "+-1",  "-.5",      "-5.",
        "1-",   "1.-5",     "10.5a", "a10.5", "1 0",   "１０", "٣",    "10.5\xff",
    };
    for (auto text : bad) {
        CAPTURE(text);
        CHECK(error_of(money::parse_amount(text, 2)) == parse_error::malformed);
        CHECK(error_of(money::parse_odds(text)) == parse_error::malformed);
    }
    // An embedded NUL is a character like any other: refused, not a terminator.
    CHECK(error_of(money::parse_amount(std::string_view("1\0", 2), 2)) == parse_error::malformed);
    CHECK(error_of(money::parse_amount(std::string_view("\0", 1), 2)) == parse_error::malformed);
}

TEST_CASE("money: parse_amount refuses a sign before a well-formed number as negative") {
    const std::string_view neg[] = {"-1", "-0", "-0.00", "-10.50", "-0.01", "-007.5"};
    for (auto text : neg) {
        CAPTURE(text);
        CHECK(error_of(money::parse_amount(text, 2)) == parse_error::negative);
        CHECK(error_of(money::parse_positive_amount(text, 2)) == parse_error::negative);
    }
    // The sign is reported before the other faults of a well-formed number.
    CHECK(error_of(money::parse_amount("-1.505", 2)) == parse_error::negative);
    CHECK(error_of(money::parse_amount("-92233720368547758.08", 2)) == parse_error::negative);
}

TEST_CASE("money: parse_amount refuses more than two decimals, trailing zeros included") {
    const std::string_view bad[] = {
        "10.505", "10.500", "0.001", "0.000", "1.0000", "1.999", "0.0000000000000000000000000001"};
    for (auto text : bad) {
        CAPTURE(text);
        CHECK(error_of(money::parse_amount(text, 2)) == parse_error::too_many_decimals);
        CHECK(error_of(money::parse_positive_amount(text, 2)) == parse_error::too_many_decimals);
    }
    // Decimals are judged before the range: the client learns the rule it broke first.
    CHECK(error_of(money::parse_amount("99999999999999999999.999", 2)) ==
          parse_error::too_many_decimals);
}

TEST_CASE("money: parse_amount refuses amounts that would overflow, without overflowing") {
    const std::string_view big[] = {
        "92233720368547758.08",  // INT64_MAX + 1 minor units
        "92233720368547758.07",  // INT64_MAX minor units: still far above the bound
        "92233720368547758",
        "18446744073709551616",  // 2^64
        "18446744073709551615.99", "99999999999999999999.99",
        "100000000000000",         "10000000000000.01",
    };
    for (auto text : big) {
        CAPTURE(text);
        CHECK(error_of(money::parse_amount(text, 2)) == parse_error::overflow);
        CHECK(error_of(money::parse_positive_amount(text, 2)) == parse_error::overflow);
    }
    // Huge digit strings: at the length bound, just beyond it, and far beyond it.
    for (std::size_t n : {limits::decimal_chars_max, limits::decimal_chars_max + 1,
                          std::size_t{1000}, std::size_t{100'000}}) {
        CAPTURE(n);
        CHECK(error_of(money::parse_amount(std::string(n, '9'), 2)) == parse_error::overflow);
        CHECK(error_of(money::parse_amount(std::string(n, '9') + ".99", 2)) ==
              parse_error::overflow);
        CHECK(error_of(money::parse_odds(std::string(n, '9'))) == parse_error::overflow);
    }
}

TEST_CASE("money: parse_amount refuses well-formed text longer than the length bound") {
    // Zero padding that makes a small value longer than any value in range needs: refused, so
    // the work per field is bounded. Exactly at the bound it is still read.
    const std::string at_bound = std::string(limits::decimal_chars_max - 4, '0') + "1.50";
    REQUIRE(at_bound.size() == limits::decimal_chars_max);
    CHECK(*money::parse_amount(at_bound, 2) == 150);
    const std::string over = "0" + at_bound;
    CHECK(error_of(money::parse_amount(over, 2)) == parse_error::overflow);
    CHECK(error_of(money::parse_amount(std::string(limits::decimal_chars_max + 1, '0'), 2)) ==
          parse_error::overflow);
}

// --- parse_positive_amount ---------------------------------------------------------------------

TEST_CASE("money: parse_positive_amount refuses zero in every spelling") {
    for (std::string_view text : {"0", "0.0", "0.00", "000", "000.00"}) {
        CAPTURE(text);
        CHECK(error_of(money::parse_positive_amount(text, 2)) == parse_error::zero);
        CHECK(*money::parse_amount(text, 2) == 0);
    }
}

TEST_CASE("money: parse_positive_amount accepts the smallest and the largest stake") {
    CHECK(*money::parse_positive_amount("0.01", 2) == 1);
    CHECK(*money::parse_positive_amount("10.00", 2) == 1000);
    CHECK(*money::parse_positive_amount(money::format_amount(limits::amount_minor_max, 2), 2) ==
          limits::amount_minor_max);
    CHECK(error_of(money::parse_positive_amount("1.", 2)) == parse_error::malformed);
}

// --- parse_odds --------------------------------------------------------------------------------

TEST_CASE("money: parse_odds accepts up to four decimals between 1.01 and 10000") {
    struct row {
        std::string_view text;
        std::int64_t units;
    };
    const row rows[] = {
        {"1.01", 10'100},          {"1.0100", 10'100},
        {"1.0101", 10'101},        {"2", 20'000},
        {"2.5", 25'000},           {"2.50", 25'000},
        {"2.500", 25'000},         {"2.5000", 25'000},
        {"1.3333", 13'333},        {"002.10", 21'000},
        {"10000", 100'000'000},    {"10000.0000", 100'000'000},
        {"9999.9999", 99'999'999},
    };
    for (const auto& r : rows) {
        CAPTURE(r.text);
        const auto p = money::parse_odds(r.text);
        REQUIRE(p.has_value());
        CHECK(*p == r.units);
    }
    CHECK(*money::parse_odds("1.01") == money::odds_min);
    CHECK(*money::parse_odds("10000") == money::odds_max);
}

TEST_CASE("money: parse_odds refuses odds below 1.01") {
    for (std::string_view text : {"1.0099", "1.00", "1", "0", "0.0000", "0.5", "1.009"}) {
        CAPTURE(text);
        CHECK(error_of(money::parse_odds(text)) == parse_error::odds_too_low);
    }
}

TEST_CASE("money: parse_odds refuses odds above the bound, more than four decimals, signs") {
    CHECK(error_of(money::parse_odds("10000.0001")) == parse_error::overflow);
    CHECK(error_of(money::parse_odds("10001")) == parse_error::overflow);
    CHECK(error_of(money::parse_odds("92233720368547758.08")) == parse_error::overflow);
    CHECK(error_of(money::parse_odds("2.50000")) == parse_error::too_many_decimals);
    CHECK(error_of(money::parse_odds("1.00999")) == parse_error::too_many_decimals);
    CHECK(error_of(money::parse_odds("-2.50")) == parse_error::negative);
    CHECK(error_of(money::parse_odds("+2.50")) == parse_error::malformed);
}

// --- format_amount -----------------------------------------------------------------------------

TEST_CASE("money: format_amount always writes two decimals, sign included") {
    struct row {
        std::int64_t minor;
        std::string_view text;
    };
    const row rows[] = {
        {0, "0.00"},
        {1, "0.01"},
        {5, "0.05"},
        {10, "0.10"},
        {99, "0.99"},
        {100, "1.00"},
        {1050, "10.50"},
        {1005, "10.05"},
        {-1, "-0.01"},
        {-5, "-0.05"},
        {-99, "-0.99"},
        {-100, "-1.00"},
        {-150, "-1.50"},
        {12'345'678, "123456.78"},
        {int64_max, "92233720368547758.07"},
        {int64_min, "-92233720368547758.08"},
        {int64_min + 1, "-92233720368547758.07"},
    };
    for (const auto& r : rows) {
        CAPTURE(r.minor);
        CHECK(money::format_amount(r.minor, 2) == r.text);
    }
}

// --- format_odds -------------------------------------------------------------------------------

TEST_CASE("money: format_odds keeps two decimals and strips zeros beyond them") {
    struct row {
        std::int64_t units;
        std::string_view text;
    };
    const row rows[] = {
        {10'100, "1.01"},
        {10'101, "1.0101"},
        {12'300, "1.23"},
        {12'340, "1.234"},
        {13'333, "1.3333"},
        {20'000, "2.00"},
        {25'000, "2.50"},
        {21'000, "2.10"},
        {100'000'000, "10000.00"},
        {99'999'999, "9999.9999"},
        {10'000, "1.00"},
        {0, "0.00"},
        {1, "0.0001"},
        {-25'000, "-2.50"},
    };
    for (const auto& r : rows) {
        CAPTURE(r.units);
        CHECK(money::format_odds(r.units) == r.text);
    }
    // Values outside the odds range still format without undefined behaviour.
    CHECK(money::format_odds(int64_max) == "922337203685477.5807");
    CHECK(money::format_odds(int64_min) == "-922337203685477.5808");
}

// --- Properties --------------------------------------------------------------------------------

TEST_CASE("money: every small amount survives format then parse") {
    for (std::int64_t v = 0; v <= 200'000; ++v) {
        const std::string text = money::format_amount(v, 2);
        const auto back = money::parse_amount(text, 2);
        if (!back || *back != v) {
            CAPTURE(v);
            CAPTURE(text);
            FAIL("round trip failed");
        }
        if (v > 0) {
            // A negative amount is the positive one with a sign.
            if (money::format_amount(-v, 2) != "-" + text) {
                CAPTURE(v);
                FAIL("negative formatting differs from the positive one");
            }
        }
    }
}

TEST_CASE("money: random amounts across the whole range survive format then parse") {
    std::uint64_t state = 42;
    for (int i = 0; i < 200'000; ++i) {
        const std::int64_t v = random_up_to(state, limits::amount_minor_max);
        const std::string text = money::format_amount(v, 2);
        const auto back = money::parse_positive_amount(text, 2);
        if (text.size() > limits::decimal_chars_max || (v > 0 && (!back || *back != v))) {
            CAPTURE(v);
            CAPTURE(text);
            FAIL("round trip failed");
        }
    }
    for (std::int64_t v :
         {std::int64_t{1}, limits::amount_minor_max - 1, limits::amount_minor_max}) {
        CHECK(*money::parse_amount(money::format_amount(v, 2), 2) == v);
    }
}

TEST_CASE("money: random amounts above the range format but never parse") {
    std::uint64_t state = 7;
    for (int i = 0; i < 50'000; ++i) {
        const std::int64_t v = limits::amount_minor_max + 1 +
                               random_up_to(state, int64_max - limits::amount_minor_max - 1);
        const auto back = money::parse_amount(money::format_amount(v, 2), 2);
        if (back || back.error() != parse_error::overflow) {
            CAPTURE(v);
            FAIL("an amount above the bound was not refused as overflow");
        }
    }
}

TEST_CASE("money: text with one or two decimals parses to the value it spells") {
    // Builds "W", "W.d" and "W.dd" from random parts and checks the arithmetic independently of
    // format_amount.
    std::uint64_t state = 1234;
    const std::int64_t whole_max = limits::amount_minor_max / 100 - 1;
    for (int i = 0; i < 50'000; ++i) {
        const std::int64_t whole = random_up_to(state, whole_max);
        const std::int64_t d1 = random_up_to(state, 9);
        const std::int64_t d2 = random_up_to(state, 9);
        const std::string w = std::to_string(whole);
        const bool ok =
            *money::parse_amount(w, 2) == whole * 100 &&
            *money::parse_amount(w + "." + std::to_string(d1), 2) == whole * 100 + d1 * 10 &&
            *money::parse_amount(w + "." + std::to_string(d1) + std::to_string(d2), 2) ==
                whole * 100 + d1 * 10 + d2;
        if (!ok) {
            CAPTURE(whole);
            CAPTURE(d1);
            CAPTURE(d2);
            FAIL("decimal text did not parse to its value");
        }
    }
}

TEST_CASE("money: every odds value near the minimum and random ones survive format then parse") {
    auto check = [](std::int64_t units) {
        const std::string text = money::format_odds(units);
        const auto back = money::parse_odds(text);
        if (!back || *back != units) {
            CAPTURE(units);
            CAPTURE(text);
            FAIL("odds round trip failed");
        }
    };
    for (std::int64_t u = money::odds_min; u <= money::odds_min + 200'000; ++u) {
        check(u);
    }
    std::uint64_t state = 99;
    for (int i = 0; i < 100'000; ++i) {
        check(money::odds_min + random_up_to(state, money::odds_max - money::odds_min));
    }
    check(money::odds_max);
}

TEST_CASE("money: odds text is canonical: no trailing zero beyond two decimals") {
    std::uint64_t state = 5;
    for (int i = 0; i < 50'000; ++i) {
        const std::int64_t u =
            money::odds_min + random_up_to(state, money::odds_max - money::odds_min);
        const std::string text = money::format_odds(u);
        const std::size_t decimals = text.size() - text.find('.') - 1;
        const bool ok = decimals >= 2 && decimals <= 4 && (decimals == 2 || text.back() != '0');
        if (!ok) {
            CAPTURE(u);
            CAPTURE(text);
            FAIL("odds text is not canonical");
        }
    }
}

// --- Errors as text ----------------------------------------------------------------------------

TEST_CASE("money: describe gives a distinct client-fit sentence for every error") {
    std::set<std::string_view> seen;
    for (auto e : {parse_error::empty, parse_error::malformed, parse_error::negative,
                   parse_error::too_many_decimals, parse_error::overflow, parse_error::zero,
                   parse_error::odds_too_low}) {
        const std::string_view text = money::describe(e);
        CAPTURE(text);
        CHECK_FALSE(text.empty());
        CHECK(text.find('\n') == std::string_view::npos);
        CHECK(text.size() < 120);
        CHECK(seen.insert(text).second);
    }
}

TEST_CASE("money: value() on a refused parse throws invalid_argument with the description") {
    const auto r = money::parse_positive_amount("0", 2);
    CHECK_THROWS_AS(r.value(), std::invalid_argument);
    try {
        (void)r.value();
    } catch (const std::invalid_argument& e) {
        CHECK(std::string_view(e.what()) == money::describe(parse_error::zero));
    }
}

// --- Currencies and their minor units ----------------------------------------------------------

TEST_CASE("money: minor_digits follows ISO 4217") {
    for (std::string_view c : {"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF",
                               "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"}) {
        CAPTURE(c);
        CHECK(money::minor_digits(c) == 0);
        CHECK(money::supported_currency(c));
    }
    for (std::string_view c : {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"}) {
        CAPTURE(c);
        CHECK(money::minor_digits(c) == 3);
        CHECK(money::supported_currency(c));
    }
    for (std::string_view c : {"EUR", "USD", "GBP", "CHF", "MRU", "ABC"}) {
        CAPTURE(c);
        CHECK(money::minor_digits(c) == 2);
        CHECK(money::supported_currency(c));
    }
    // Four decimals: more than a stake's thousandths can carry.
    for (std::string_view c : {"CLF", "UYW"}) {
        CAPTURE(c);
        CHECK(money::minor_digits(c) == 4);
        CHECK_FALSE(money::supported_currency(c));
    }
}

TEST_CASE("money: format_amount writes exactly the currency's decimals") {
    CHECK(money::format_amount(1000, "JPY") == "1000");
    CHECK(money::format_amount(0, "JPY") == "0");
    CHECK(money::format_amount(-250, "JPY") == "-250");
    CHECK(money::format_amount(10500, "KWD") == "10.500");
    CHECK(money::format_amount(26250, "KWD") == "26.250");
    CHECK(money::format_amount(5, "KWD") == "0.005");
    CHECK(money::format_amount(-5, "KWD") == "-0.005");
    CHECK(money::format_amount(1050, "EUR") == "10.50");
    CHECK(money::format_amount(1050, 2) == "10.50");
    CHECK(money::format_amount(int64_max, 0) == "9223372036854775807");
    CHECK(money::format_amount(int64_min, 0) == "-9223372036854775808");
    CHECK(money::format_amount(int64_min, 3) == "-9223372036854775.808");
}

TEST_CASE("money: parse_amount parses with the currency's decimals") {
    CHECK(*money::parse_amount("1000", 0) == 1000);
    CHECK(error_of(money::parse_amount("10.5", 0)) == parse_error::too_many_decimals);
    CHECK(error_of(money::parse_amount("10.0", 0)) == parse_error::too_many_decimals);
    CHECK(*money::parse_amount("10.500", 3) == 10500);
    CHECK(*money::parse_amount("10.5", 3) == 10500);
    CHECK(*money::parse_amount("10", 3) == 10000);
    CHECK(error_of(money::parse_amount("1.0005", 3)) == parse_error::too_many_decimals);
    CHECK(error_of(money::parse_amount("1.005", 2)) == parse_error::too_many_decimals);
    // The bound is in minor units, whatever the currency.
    CHECK(*money::parse_amount("1000000000000000", 0) == limits::amount_minor_max);
    CHECK(error_of(money::parse_amount("1000000000000001", 0)) == parse_error::overflow);
    CHECK(*money::parse_amount("1000000000000.000", 3) == limits::amount_minor_max);
    CHECK(error_of(money::parse_amount("1000000000000.001", 3)) == parse_error::overflow);
    CHECK(error_of(money::parse_positive_amount("0", 0)) == parse_error::zero);
    CHECK(error_of(money::parse_positive_amount("0.000", 3)) == parse_error::zero);
}

TEST_CASE("money: amounts of every exponent survive format then parse") {
    std::uint64_t state = 99;
    for (int digits : {0, 2, 3}) {
        for (int i = 0; i < 50'000; ++i) {
            const std::int64_t v = random_up_to(state, limits::amount_minor_max);
            const std::string text = money::format_amount(v, digits);
            const auto back = money::parse_amount(text, digits);
            if (!back || *back != v) {
                CAPTURE(digits);
                CAPTURE(v);
                CAPTURE(text);
                FAIL("round trip failed");
            }
        }
    }
}

TEST_CASE("money: a stake parses to thousandths before its currency is known") {
    CHECK(*money::parse_positive_thousandths("1000") == 1'000'000);
    CHECK(*money::parse_positive_thousandths("10.5") == 10'500);
    CHECK(*money::parse_positive_thousandths("10.50") == 10'500);
    CHECK(*money::parse_positive_thousandths("10.500") == 10'500);
    CHECK(*money::parse_positive_thousandths("0.001") == 1);
    CHECK(error_of(money::parse_positive_thousandths("1.0005")) == parse_error::too_many_decimals);
    CHECK(error_of(money::parse_positive_thousandths("0")) == parse_error::zero);
    CHECK(error_of(money::parse_positive_thousandths("-1")) == parse_error::negative);
    CHECK(error_of(money::parse_positive_thousandths("1e3")) == parse_error::malformed);
    // The largest stake of a currency without decimals, and not one more.
    CHECK(*money::parse_positive_thousandths("1000000000000000") == limits::amount_thousandths_max);
    CHECK(error_of(money::parse_positive_thousandths("1000000000000000.001")) ==
          parse_error::overflow);
}

TEST_CASE("money: thousandths_to_minor refuses decimals the currency lacks and its bound") {
    // "1000" JPY, "10.500" KWD, "10.50" EUR.
    CHECK(*money::thousandths_to_minor(1'000'000, 0) == 1000);
    CHECK(*money::thousandths_to_minor(10'500, 3) == 10'500);
    CHECK(*money::thousandths_to_minor(10'500, 2) == 1050);
    // "10.5" JPY and "1.005" EUR.
    CHECK(error_of(money::thousandths_to_minor(10'500, 0)) == parse_error::too_many_decimals);
    CHECK(error_of(money::thousandths_to_minor(1'005, 2)) == parse_error::too_many_decimals);
    // 10^15 minor units is the bound of every currency.
    CHECK(*money::thousandths_to_minor(limits::amount_thousandths_max, 0) ==
          limits::amount_minor_max);
    CHECK(error_of(money::thousandths_to_minor(limits::amount_thousandths_max, 2)) ==
          parse_error::overflow);
    CHECK(*money::thousandths_to_minor(limits::amount_minor_max * 10, 2) ==
          limits::amount_minor_max);
    CHECK(error_of(money::thousandths_to_minor(limits::amount_minor_max + 1, 3)) ==
          parse_error::overflow);
    // Trailing zeros are not decimals the currency lacks: "1000.000" JPY is 1000.
    CHECK(*money::thousandths_to_minor(*money::parse_positive_thousandths("1000.000"), 0) == 1000);
    // Every parsed stake converts as parsing its text without trailing zeros with the
    // currency's decimals would.
    std::uint64_t state = 5;
    for (int digits : {0, 2, 3}) {
        for (int i = 0; i < 20'000; ++i) {
            const std::int64_t v = 1 + random_up_to(state, 100'000'000);
            std::string text = money::format_amount(v, 3);
            const auto significant = text.find_last_not_of('0');
            text.erase(text[significant] == '.' ? significant : significant + 1);
            const auto direct = money::parse_positive_amount(text, digits);
            const auto via =
                money::thousandths_to_minor(*money::parse_positive_thousandths(text), digits);
            if (direct.has_value() != via.has_value() || (direct && *direct != *via) ||
                (!direct && direct.error() != via.error())) {
                CAPTURE(digits);
                CAPTURE(text);
                FAIL("thousandths_to_minor differs from parsing with the currency's decimals");
            }
        }
    }
}

TEST_CASE("money: describe names the currency's decimals") {
    CHECK(money::describe(parse_error::too_many_decimals, "JPY") ==
          "too many decimal places for JPY (0)");
    CHECK(money::describe(parse_error::too_many_decimals, "KWD") ==
          "too many decimal places for KWD (3)");
    CHECK(money::describe(parse_error::overflow, "JPY") == money::describe(parse_error::overflow));
}
