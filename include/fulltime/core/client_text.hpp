#pragma once
/// The rules every text field a client sends must keep before it may reach SQL
/// (docs/protocol.md, "Text"): between 1 and its field's bound of bytes, valid UTF-8, and no NUL
/// character (U+0000). libpq sends parameters as C strings, so a NUL would cut a value short (the
/// database layer refuses it as a failure, answered 503), and PostgreSQL refuses text that is not
/// valid UTF-8 in a UTF-8 database: either would otherwise surface as a retryable error for a
/// request that can never succeed. The parsers of client input (core/bets_protocol,
/// core/feed_protocol, net/http_route's Idempotency-Key header) check their text fields here, and
/// only here.

#include <cstddef>
#include <string>
#include <string_view>

namespace fulltime::client_text {

/// Names the first rule a text breaks.
enum class fault {
    none = 0,
    empty,         ///< no bytes at all
    too_long,      ///< more bytes than its field's bound
    nul,           ///< a NUL character (U+0000)
    invalid_utf8,  ///< a byte sequence that is not UTF-8 (RFC 3629: no overlong forms, no
                   ///< surrogates, nothing above U+10FFFF)
};

/// Returns the first rule `text` breaks as a field of 1..bytes_max bytes, or fault::none: the
/// length first, then one pass over the bytes for NUL and UTF-8. Allocates nothing.
fault check(std::string_view text, std::size_t bytes_max) noexcept;

/// Returns what `f` says about a field, to follow its name: "must not be empty", "is longer than
/// 255 bytes", "must not contain a NUL character", "must be valid UTF-8" ("" for fault::none).
std::string describe(fault f, std::size_t bytes_max);

/// Returns `text` in double quotes, cut to limits::quoted_input_chars_max bytes at a character
/// boundary and then marked with "...", so that an error message quoting client input stays short
/// and does not split a character.
std::string quoted(std::string_view text);

}  // namespace fulltime::client_text
