#include "fulltime/core/money.hpp"

#include "fulltime/limits.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace fulltime::money {

namespace {

static_assert(limits::minor_digits_max == 3,
              "parse_positive_thousandths and the placement functions' p_stake_digits assume "
              "thousandths");
static_assert(limits::amount_thousandths_max / 1000 == limits::amount_minor_max);
static_assert(limits::odds_decimals == 4,
              "odds_min, odds_max and format_odds assume four decimals");
static_assert(odds_min < odds_max);
static_assert(limits::amount_minor_max < INT64_MAX);

/// Returns the number of decimal digits of v > 0.
constexpr std::size_t digit_count(std::int64_t v) noexcept {
    std::size_t n = 0;
    for (; v != 0; v /= 10) {
        ++n;
    }
    return n;
}

// The length bound must never refuse a value in range written without leading zeros: the
// largest amount has its digits plus the dot (and at least one digit before it).
static_assert(digit_count(limits::amount_minor_max) + 1 <= limits::decimal_chars_max);
static_assert(digit_count(limits::amount_thousandths_max) + 1 <= limits::decimal_chars_max);
static_assert(digit_count(odds_max) + 1 <= limits::decimal_chars_max);

/// Returns 10^n for the small n used here.
constexpr std::uint64_t pow10(int n) noexcept {
    std::uint64_t r = 1;
    for (int i = 0; i < n; ++i) {
        r *= 10;
    }
    return r;
}

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// Returns whether `text` is [0-9]+ or [0-9]+ '.' [0-9]+, nothing else.
bool is_well_formed(std::string_view text) noexcept {
    const std::size_t dot = text.find('.');
    const std::string_view whole = text.substr(0, dot);
    if (whole.empty()) {
        return false;  // ".5" is refused: the wire format always has an integer part.
    }
    for (char c : whole) {
        if (!is_digit(c)) {
            return false;
        }
    }
    if (dot == std::string_view::npos) {
        return true;
    }
    const std::string_view frac = text.substr(dot + 1);
    if (frac.empty()) {
        return false;  // "5." is refused: a dot promises decimals.
    }
    for (char c : frac) {
        if (!is_digit(c)) {
            return false;  // Also catches a second '.'.
        }
    }
    return true;
}

/// Parses a non-negative decimal into units of 10^-decimals, refusing values above `value_max`.
///
/// Checks run in a fixed order so that each input has exactly one answer: empty, then the
/// grammar (a leading '-' before a well-formed number is `negative`, any other stray character
/// is `malformed`), then the number of decimals, then the range. No intermediate value can
/// exceed `value_max`, so int64 never overflows whatever the length of the input.
parsed<std::int64_t> parse_fixed(std::string_view text, int decimals, std::int64_t value_max) {
    if (text.empty()) {
        return parse_error::empty;
    }
    const bool negative = text.front() == '-';
    const std::string_view body = negative ? text.substr(1) : text;
    if (!is_well_formed(body)) {
        return parse_error::malformed;
    }
    if (negative) {
        return parse_error::negative;
    }
    const std::size_t dot = body.find('.');
    const std::string_view whole = body.substr(0, dot);
    const std::string_view frac =
        dot == std::string_view::npos ? std::string_view{} : body.substr(dot + 1);
    if (frac.size() > static_cast<std::size_t>(decimals)) {
        // A protocol rule, not a rounding question: "10.500" is refused like "10.505", because
        // the engine never guesses what a client meant by digits it cannot represent.
        return parse_error::too_many_decimals;
    }
    // Well-formed but absurdly long input (mostly leading zeros) is refused as too large: no
    // value in range needs more than decimal_chars_max characters, and the bound keeps the
    // work per field fixed.
    if (body.size() > limits::decimal_chars_max) {
        return parse_error::overflow;
    }

    const auto scale = pow10(decimals);
    const auto max = static_cast<std::uint64_t>(value_max);
    const std::uint64_t whole_max = max / scale;
    std::uint64_t whole_value = 0;
    for (char c : whole) {
        const auto digit = static_cast<std::uint64_t>(c - '0');
        // whole_value <= whole_max <= 10^18 here, so whole_value * 10 + 9 fits in uint64.
        whole_value = whole_value * 10 + digit;
        if (whole_value > whole_max) {
            return parse_error::overflow;
        }
    }
    std::uint64_t frac_value = 0;
    for (char c : frac) {
        frac_value = frac_value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    frac_value *= pow10(decimals - static_cast<int>(frac.size()));
    // whole_value * scale <= value_max and frac_value < scale, so the sum fits in uint64.
    const std::uint64_t value = whole_value * scale + frac_value;
    if (value > max) {
        return parse_error::overflow;
    }
    return static_cast<std::int64_t>(value);
}

/// Returns |v| as unsigned without the undefined negation of INT64_MIN.
constexpr std::uint64_t magnitude(std::int64_t v) noexcept {
    return v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

/// Formats |v| / 10^decimals with exactly `decimals` places (no dot for none), with a '-' when
/// v < 0.
std::string format_fixed(std::int64_t v, int decimals) {
    const std::uint64_t scale = pow10(decimals);
    const std::uint64_t mag = magnitude(v);
    std::uint64_t whole = mag / scale;
    std::uint64_t frac = mag % scale;

    // 20 digits for UINT64_MAX's whole part, a sign, a dot and the decimals.
    std::array<char, 32> buf{};
    std::size_t pos = buf.size();
    for (int i = 0; i < decimals; ++i) {
        buf[--pos] = static_cast<char>('0' + frac % 10);
        frac /= 10;
    }
    if (decimals > 0) {
        buf[--pos] = '.';
    }
    do {
        buf[--pos] = static_cast<char>('0' + whole % 10);
        whole /= 10;
    } while (whole != 0);
    if (v < 0) {
        buf[--pos] = '-';
    }
    return std::string(buf.data() + pos, buf.size() - pos);
}

// ISO 4217 (list one, the amendments up to 2024): the codes whose minor unit is not two
// decimals, sorted. Codes ISO lists without a minor unit (precious metals, XDR, XTS, XXX) are
// not money a bettor holds and get two, like codes ISO does not list. db/functions/
// fulltime_minor_digits.sql holds the same lists.
constexpr std::array<std::string_view, 17> zero_digit_currencies = {
    "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG",
    "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"};
constexpr std::array<std::string_view, 7> three_digit_currencies = {"BHD", "IQD", "JOD", "KWD",
                                                                    "LYD", "OMR", "TND"};
constexpr std::array<std::string_view, 2> four_digit_currencies = {"CLF", "UYW"};

template <std::size_t N>
constexpr bool listed(const std::array<std::string_view, N>& codes, std::string_view code) {
    for (auto c : codes) {
        if (c == code) {
            return true;
        }
    }
    return false;
}

/// Returns `r`, with a parsed zero turned into parse_error::zero.
parsed<std::int64_t> positive(parsed<std::int64_t> r) {
    if (r && *r == 0) {
        return parse_error::zero;
    }
    return r;
}

}  // namespace

int minor_digits(std::string_view currency) noexcept {
    if (listed(zero_digit_currencies, currency)) {
        return 0;
    }
    if (listed(three_digit_currencies, currency)) {
        return 3;
    }
    if (listed(four_digit_currencies, currency)) {
        return 4;
    }
    return 2;
}

bool supported_currency(std::string_view currency) noexcept {
    return minor_digits(currency) <= limits::minor_digits_max;
}

std::string_view describe(parse_error e) noexcept {
    switch (e) {
        case parse_error::empty:
            return "the number is empty";
        case parse_error::malformed:
            return "the number must be plain decimal digits with an optional '.' and decimals, "
                   "such as \"10.50\"";
        case parse_error::negative:
            return "the number must not be negative";
        case parse_error::too_many_decimals:
            return "the number has too many decimal places (money has at most three, odds four)";
        case parse_error::overflow:
            return "the number is too large";
        case parse_error::zero:
            return "the amount must be greater than zero";
        case parse_error::odds_too_low:
            return "the odds must be at least 1.01";
    }
    return "the number is invalid";
}

std::string describe(parse_error e, std::string_view currency) {
    if (e != parse_error::too_many_decimals) {
        return std::string(describe(e));
    }
    return "too many decimal places for " + std::string(currency) + " (" +
           std::to_string(minor_digits(currency)) + ")";
}

parsed<std::int64_t> parse_amount(std::string_view text, int digits) {
    return parse_fixed(text, digits, limits::amount_minor_max);
}

parsed<std::int64_t> parse_positive_amount(std::string_view text, int digits) {
    return positive(parse_amount(text, digits));
}

parsed<std::int64_t> parse_positive_thousandths(std::string_view text) {
    return positive(parse_fixed(text, limits::minor_digits_max, limits::amount_thousandths_max));
}

parsed<std::int64_t> thousandths_to_minor(std::int64_t thousandths, int digits) {
    const auto unit = static_cast<std::int64_t>(pow10(limits::minor_digits_max - digits));
    if (thousandths % unit != 0) {
        return parse_error::too_many_decimals;
    }
    if (thousandths / unit > limits::amount_minor_max) {
        return parse_error::overflow;
    }
    return thousandths / unit;
}

std::string format_amount(std::int64_t minor, int digits) { return format_fixed(minor, digits); }

std::string format_amount(std::int64_t minor, std::string_view currency) {
    return format_fixed(minor, minor_digits(currency));
}

parsed<std::int64_t> parse_odds(std::string_view text) {
    auto r = parse_fixed(text, limits::odds_decimals, odds_max);
    if (r && *r < odds_min) {
        return parse_error::odds_too_low;
    }
    return r;
}

std::string format_odds(std::int64_t odds_units) {
    std::string s = format_fixed(odds_units, limits::odds_decimals);
    // Keep two decimals always (odds read like money on screens); drop the zeros beyond.
    const std::size_t keep = s.size() - static_cast<std::size_t>(limits::odds_decimals - 2);
    while (s.size() > keep && s.back() == '0') {
        s.pop_back();
    }
    return s;
}

void throw_exception_from_error(parse_error e, const boost::source_location&) {
    throw std::invalid_argument(std::string(describe(e)));
}

}  // namespace fulltime::money
