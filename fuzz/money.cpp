/// Fuzzes money and odds text: parse_amount and parse_positive_amount at each supported number
/// of decimals, parse_positive_thousandths and thousandths_to_minor, parse_odds.
///
/// The first byte picks the decimals (0 to limits::minor_digits_max), the rest is the text.
/// Invariants: every accepted value is in bounds, and its formatted text parses back to the
/// same value (format(parse(x)) round-trips).

#include "fulltime/core/money.hpp"
#include "fulltime/limits.hpp"

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace limits = fulltime::limits;
namespace money = fulltime::money;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const int digits = static_cast<int>(data[0] % (limits::minor_digits_max + 1));
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

    if (const auto amount = money::parse_amount(text, digits)) {
        FUZZ_CHECK(*amount >= 0 && *amount <= limits::amount_minor_max);
        const std::string formatted = money::format_amount(*amount, digits);
        const auto again = money::parse_amount(formatted, digits);
        FUZZ_CHECK(again.has_value() && *again == *amount);
    } else {
        FUZZ_CHECK(!money::describe(amount.error()).empty());
        (void)money::describe(amount.error(), "EUR");
    }

    if (const auto positive = money::parse_positive_amount(text, digits)) {
        FUZZ_CHECK(*positive > 0);
        FUZZ_CHECK(money::parse_amount(text, digits) == positive);
    }

    if (const auto thousandths = money::parse_positive_thousandths(text)) {
        FUZZ_CHECK(*thousandths > 0 && *thousandths <= limits::amount_thousandths_max);
        const std::string formatted = money::format_amount(*thousandths, limits::minor_digits_max);
        const auto again = money::parse_positive_thousandths(formatted);
        FUZZ_CHECK(again.has_value() && *again == *thousandths);
        if (const auto minor = money::thousandths_to_minor(*thousandths, digits)) {
            FUZZ_CHECK(*minor > 0 && *minor <= limits::amount_minor_max);
            // Exact: the conversion drops only zeros.
            std::int64_t scale = 1;
            for (int i = digits; i < limits::minor_digits_max; ++i) {
                scale *= 10;
            }
            FUZZ_CHECK(*minor * scale == *thousandths);
        }
    }

    if (const auto odds = money::parse_odds(text)) {
        FUZZ_CHECK(*odds >= money::odds_min && *odds <= money::odds_max);
        const std::string formatted = money::format_odds(*odds);
        const auto again = money::parse_odds(formatted);
        FUZZ_CHECK(again.has_value() && *again == *odds);
    }
    return 0;
}
