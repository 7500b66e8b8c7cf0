#include "app/commands/arguments.hpp"

#include <charconv>
#include <stdexcept>

namespace fulltime::app {

std::int64_t parse_positive(const std::string& text, const std::string& what) {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size() || v <= 0) {
        throw std::invalid_argument(what + " must be a positive integer, got '" + text + "'");
    }
    return v;
}

}  // namespace fulltime::app
