#include "fulltime/core/client_text.hpp"

#include "fulltime/limits.hpp"

namespace fulltime::client_text {

namespace {

// Returns the length of the UTF-8 sequence at `i` (1..4), or 0 when it is not one (RFC 3629,
// table 3-7 of the Unicode standard: the second byte's range depends on the first).
std::size_t sequence_length(std::string_view s, std::size_t i) noexcept {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    if (c < 0x80) {
        return 1;
    }
    std::size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;  // no overlong form
        hi = c == 0xed ? 0x9f : 0xbf;  // no surrogate
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;  // no overlong form
        hi = c == 0xf4 ? 0x8f : 0xbf;  // nothing above U+10FFFF
    } else {
        return 0;  // a continuation byte, an overlong lead (0xc0, 0xc1) or 0xf5..0xff
    }
    if (s.size() - i < n || b(i + 1) < lo || b(i + 1) > hi) {
        return 0;
    }
    for (std::size_t k = 2; k < n; ++k) {
        if (b(i + k) < 0x80 || b(i + k) > 0xbf) {
            return 0;
        }
    }
    return n;
}

}  // namespace

fault check(std::string_view text, std::size_t bytes_max) noexcept {
    if (text.empty()) {
        return fault::empty;
    }
    if (text.size() > bytes_max) {
        return fault::too_long;
    }
    for (std::size_t i = 0; i < text.size();) {
        if (text[i] == '\0') {
            return fault::nul;
        }
        const std::size_t n = sequence_length(text, i);
        if (n == 0) {
            return fault::invalid_utf8;
        }
        i += n;
    }
    return fault::none;
}

std::string describe(fault f, std::size_t bytes_max) {
    switch (f) {
        case fault::none:
            break;
        case fault::empty:
            return "must not be empty";
        case fault::too_long:
            return "is longer than " + std::to_string(bytes_max) + " bytes";
        case fault::nul:
            return "must not contain a NUL character";
        case fault::invalid_utf8:
            return "must be valid UTF-8";
    }
    return {};
}

std::string quoted(std::string_view text) {
    std::string out = "\"";
    if (text.size() <= limits::quoted_input_chars_max) {
        out += text;
        out += '"';
        return out;
    }
    std::size_t cut = limits::quoted_input_chars_max;
    // Back off continuation bytes (10xxxxxx), at most three (a character has four bytes at
    // most), so that the cut falls before a character's lead.
    for (int k = 0; k < 3 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80; ++k) {
        --cut;
    }
    out += text.substr(0, cut);
    out += "...\"";
    return out;
}

}  // namespace fulltime::client_text
