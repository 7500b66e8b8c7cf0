#pragma once
/// Building blocks of token.cpp, exposed for its tests (a private header: not part of the
/// public interface in include/fulltime/).

#include <optional>
#include <string>
#include <string_view>

namespace fulltime::token::detail {

/// Returns `bytes` as unpadded base64url (RFC 4648, section 5).
std::string base64url_encode(std::string_view bytes);

/// Decodes unpadded, canonical base64url: only [A-Za-z0-9_-], no '=', a length that is not
/// 1 mod 4, and zero bits in the unused low bits of the last character (so every byte string
/// has exactly one accepted spelling). Returns nullopt otherwise.
std::optional<std::string> base64url_decode(std::string_view text);

/// Returns the base64url HMAC-SHA256 tag of `signed_part` (the token up to its second dot).
std::string tag(std::string_view signed_part, std::string_view secret);

/// Returns a token carrying `payload_json` verbatim, signed with `secret`; lets tests forge
/// correctly signed tokens with payloads that sign() would never write.
std::string sign_payload(std::string_view payload_json, std::string_view secret);

}  // namespace fulltime::token::detail
