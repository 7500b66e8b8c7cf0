#pragma once
/// Money and odds as exact integers, and their decimal text on the wire.
///
/// Money is std::int64_t minor units (limits::money_decimals places: "10.00" is 1000). Odds are
/// fixed point with limits::odds_decimals places ("2.50" is 25000). This module owns parsing,
/// formatting and (later) payout rounding; nothing else converts money to or from text.

#include <boost/system/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace fulltime::money {

/// Names why a decimal string was refused.
enum class parse_error {
    empty = 1,          ///< the empty string
    malformed,          ///< anything but [0-9]+ with an optional '.' and 1+ digits after it
    negative,           ///< a leading '-'
    too_many_decimals,  ///< more decimal places than the quantity allows
    overflow,           ///< larger than limits::amount_minor_max (money) or the odds bound
    zero,               ///< zero where a positive value is required
    odds_too_low,       ///< odds below the minimum (1.01)
};

/// Returns a one-line English explanation of a parse error, fit for a client.
std::string_view describe(parse_error e) noexcept;

/// Holds a value or a parse error.
template <class T>
using parsed = boost::system::result<T, parse_error>;

/// Parses a non-negative money amount ("10", "10.5", "10.50") into minor units.
/// Refuses signs, exponents, spaces, more than two decimals, and amounts over the bound.
parsed<std::int64_t> parse_amount(std::string_view text);

/// Parses a strictly positive money amount (a stake, a deposit): as parse_amount, and zero is
/// parse_error::zero.
parsed<std::int64_t> parse_positive_amount(std::string_view text);

/// Formats minor units as a decimal string with exactly two decimals ("-1.50", "0.05").
std::string format_amount(std::int64_t minor);

/// Smallest odds accepted, in odds units (1.01).
inline constexpr std::int64_t odds_min = 10'100;
/// Largest odds accepted, in odds units (10000.00).
inline constexpr std::int64_t odds_max = 100'000'000;

/// Parses decimal odds ("2.5", "2.50", "1.3333") into units of 1/10000. Refuses odds below
/// odds_min (odds_too_low), above odds_max (overflow) or with more than four decimals.
parsed<std::int64_t> parse_odds(std::string_view text);

/// Formats odds with at least two decimals and no trailing zeros beyond them ("2.50",
/// "1.3333").
std::string format_odds(std::int64_t odds_units);

}  // namespace fulltime::money

namespace fulltime::money {
/// Throws a parse error as std::invalid_argument; used by boost::system::result::value().
[[noreturn]] void throw_exception_from_error(parse_error e, const boost::source_location& loc);
}  // namespace fulltime::money
