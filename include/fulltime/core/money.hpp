#pragma once
/// Money and odds as exact integers, and their decimal text on the wire.
///
/// Money is std::int64_t minor units of its currency, whose number of decimal places is the
/// currency's ISO 4217 exponent (minor_digits: "1000" JPY is 1000, "10.50" EUR is 1050, "10.500"
/// KWD is 10500). Odds are fixed point with limits::odds_decimals places ("2.50" is 25000). This
/// module owns parsing, formatting and (later) payout rounding; nothing else converts money to
/// or from text.

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

/// As describe(e), naming the currency's decimals for too_many_decimals ("too many decimal
/// places for JPY (0)").
std::string describe(parse_error e, std::string_view currency);

/// Holds a value or a parse error.
template <class T>
using parsed = boost::system::result<T, parse_error>;

/// Returns the decimal places of a currency's minor unit, its ISO 4217 exponent: 0 for BIF CLP
/// DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF, 3 for BHD IQD JOD KWD LYD OMR
/// TND, 4 for CLF and UYW (which the engine does not hold: supported_currency), 2 for every
/// other code. The SQL function fulltime_minor_digits (db/functions) holds the same table;
/// tests/db/currency_pgtest.cpp proves that they agree.
int minor_digits(std::string_view currency) noexcept;

/// Returns whether accounts may hold this currency: its minor unit has at most
/// limits::minor_digits_max decimals (every ISO 4217 code but CLF and UYW).
bool supported_currency(std::string_view currency) noexcept;

/// Parses a non-negative money amount ("10", "10.5", "10.50") into minor units of a currency
/// with `digits` decimal places (minor_digits). Refuses signs, exponents, spaces, more than
/// `digits` decimals, and amounts over limits::amount_minor_max.
parsed<std::int64_t> parse_amount(std::string_view text, int digits);

/// Parses a strictly positive money amount: as parse_amount, and zero is parse_error::zero.
parsed<std::int64_t> parse_positive_amount(std::string_view text, int digits);

/// Parses a strictly positive amount whose currency is not known yet (a stake, before the
/// placement reads its account) into thousandths of the currency's major unit
/// (limits::minor_digits_max places: "10.5" is 10500), at most limits::amount_thousandths_max.
/// thousandths_to_minor finishes the conversion once the currency is known.
parsed<std::int64_t> parse_positive_thousandths(std::string_view text);

/// Converts thousandths into minor units of a currency with `digits` decimal places (0 to
/// limits::minor_digits_max): too_many_decimals when the amount is not a whole number of minor
/// units ("10.5" for JPY; "10.500" is 10.50 EUR: trailing zeros are no decimals the currency
/// lacks), overflow above limits::amount_minor_max.
parsed<std::int64_t> thousandths_to_minor(std::int64_t thousandths, int digits);

/// Formats minor units as a decimal string with exactly `digits` decimals ("-1.50", "0.05";
/// "1000" with 0, "10.500" with 3).
std::string format_amount(std::int64_t minor, int digits);

/// Formats minor units of `currency` with its decimals: format_amount(minor,
/// minor_digits(currency)).
std::string format_amount(std::int64_t minor, std::string_view currency);

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
