#include "fulltime/core/client_text.hpp"

#include "fulltime/limits.hpp"

#include <doctest/doctest.h>

#include <string>

namespace client_text = fulltime::client_text;
using client_text::fault;
using namespace std::string_literals;

TEST_CASE("text of 1 to bytes_max bytes of UTF-8 without NUL keeps the rules") {
    for (std::string_view text :
         {"k1", "a b\t\x01~", "caf\xc3\xa9", "\xe2\x82\xac 10", "\xf0\x9d\x84\x9e", "\xef\xbf\xbf",
          "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf", "\xee\x80\x80"}) {
        CHECK_MESSAGE(client_text::check(text, 255) == fault::none, text);
    }
    CHECK(client_text::check(std::string(255, 'k'), 255) == fault::none);
    // The bound is in bytes, not characters: 127 two-byte characters are 254 bytes.
    std::string accents;
    for (int i = 0; i < 127; ++i) {
        accents += "\xc3\xa9";
    }
    CHECK(client_text::check(accents, 254) == fault::none);
    CHECK(client_text::check(accents, 253) == fault::too_long);
}

TEST_CASE("empty and over-long text are refused before the bytes are read") {
    CHECK(client_text::check("", 255) == fault::empty);
    CHECK(client_text::check(std::string(256, 'k'), 255) == fault::too_long);
    // Length first: an over-long text with a NUL is too long.
    CHECK(client_text::check(std::string(300, '\0'), 255) == fault::too_long);
}

TEST_CASE("a NUL character anywhere is refused") {
    CHECK(client_text::check("\0"s, 255) == fault::nul);
    CHECK(client_text::check("k\0"s, 255) == fault::nul);
    CHECK(client_text::check("\0k"s, 255) == fault::nul);
    CHECK(client_text::check("caf\xc3\xa9\0"s, 255) == fault::nul);
}

TEST_CASE("byte sequences that are not UTF-8 are refused") {
    for (std::string_view text : {
             "\xff",
             "\xfe\xff",
             "\x80",
             "a\xbf",     // no lead byte
             "\xc0\x80",  // an overlong NUL
             "\xc1\xbf",
             "\xe0\x80\xaf",
             "\xe0\x9f\xbf",
             "\xf0\x8f\xbf\xbf",  // overlong forms
             "\xed\xa0\x80",
             "\xed\xbf\xbf",  // surrogates
             "\xf4\x90\x80\x80",
             "\xf5\x80\x80\x80",  // above U+10FFFF
             "\xe2\x82",
             "\xc3",
             "\xf0\x9d\x84",
             "caf\xc3",  // cut short
             "\xe2\x28\xa1",
             "\xc3\x28",
             "\xf0\x9d\x84\x28",  // a bad follower
         }) {
        CHECK_MESSAGE(client_text::check(text, 255) == fault::invalid_utf8, text);
    }
}

TEST_CASE("faults describe themselves after a field's name") {
    CHECK(client_text::describe(fault::empty, 255) == "must not be empty");
    CHECK(client_text::describe(fault::too_long, 255) == "is longer than 255 bytes");
    CHECK(client_text::describe(fault::nul, 255) == "must not contain a NUL character");
    CHECK(client_text::describe(fault::invalid_utf8, 255) == "must be valid UTF-8");
    CHECK(client_text::describe(fault::none, 255).empty());
}

TEST_CASE("quoted input is cut short at a character boundary") {
    using fulltime::limits::quoted_input_chars_max;
    CHECK(client_text::quoted("stake") == "\"stake\"");
    CHECK(client_text::quoted(std::string(quoted_input_chars_max, 'x')) ==
          "\"" + std::string(quoted_input_chars_max, 'x') + "\"");
    CHECK(client_text::quoted(std::string(200, 'x')) ==
          "\"" + std::string(quoted_input_chars_max, 'x') + "...\"");
    // A two-byte character across the cut is left out whole.
    const std::string across = std::string(quoted_input_chars_max - 1, 'x') + "\xc3\xa9yz";
    CHECK(client_text::quoted(across) ==
          "\"" + std::string(quoted_input_chars_max - 1, 'x') + "...\"");
}
