#pragma once
/// HMAC-SHA256 signed bearer tokens (docs/protocol.md, "Tokens").
///
/// Text form: "ft1.<payload>.<signature>", both parts unpadded base64url. The payload is compact
/// JSON: {"k":"account","a":42,"e":1767225600} for a bet client, {"k":"producer","p":"feed-1",
/// "e":...} for a producer, {"k":"admin","o":"alice","e":...} for an operator; "e" is the expiry in
/// Unix seconds. The signature is HMAC-SHA256(secret, "ft1." + payload) over the base64url text of
/// the payload (the token up to its second dot), so it is compared, in constant time, before
/// the payload is decoded or parsed.
///
/// Tokens are signed with one secret and verified against a keyring: that secret and, while a
/// rollover lasts, the one it replaced (docs/operations.md, "Rotating the token secret").

#include <boost/system/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace fulltime::token {

/// Names who a token speaks for.
enum class kind { account = 1, producer, admin };

/// Holds what a token asserts.
struct claims {
    token::kind kind = kind::account;
    std::int64_t account_id = 0;  ///< for kind::account
    std::string producer;         ///< for kind::producer
    std::string operator_name;    ///< for kind::admin: who acts (logged with every action)
    std::int64_t expires_at_s = 0;
};

/// Holds the secrets tokens are verified against. Only `current` signs; `previous` is the
/// secret `current` replaced, kept for a rollover so that the tokens already handed out still
/// verify until they are reissued or expire.
struct keyring {
    std::string current;   ///< signs every token; verified first
    std::string previous;  ///< verified only when `current` does not match; empty: none
};

/// Names the secret of a keyring that verified a token.
enum class key { current = 1, previous };

/// Holds a verified token: what it asserts and the secret that verified it.
struct verified {
    token::claims claims;
    token::key key = key::current;
};

/// Names why a token was refused.
enum class verify_error {
    malformed = 1,  ///< not three parts, bad base64url, too long, bad payload
    bad_signature,
    expired,
};

/// Returns a short English explanation of a verify error.
std::string_view describe(verify_error e) noexcept;

/// Returns whether `c` can be signed, and is what verify() accepts: an expiry > 0; for
/// kind::account an account_id > 0 and no producer; for kind::producer a producer name of 1 to
/// limits::producer_name_bytes_max visible ASCII characters (0x21-0x7E) and account_id 0; for
/// kind::admin an operator name of the same form and neither of the others; operator_name only
/// for kind::admin. Callers that build claims from input (the `fulltime token` command)
/// check this first.
bool is_valid(const claims& c) noexcept;

/// Returns the token text for `c`, signed with `secret`. Requires is_valid(c) and a non-empty
/// secret (asserted: both are the caller's to guarantee).
std::string sign(const claims& c, std::string_view secret);

/// Checks the signature (constant time) and the expiry against `now_s`, then returns the
/// claims and the secret that verified them. Order: length and shape (malformed), signature
/// against keys.current, then, only when that does not match, against keys.previous
/// (bad_signature when neither matches; an empty secret matches nothing), payload (malformed:
/// not canonical base64url, not a JSON object, a missing, extra or mistyped field, or claims
/// that fail is_valid), expiry. A token is valid strictly before its expiry: at
/// now_s == expires_at_s it is expired. Allocates no more with a previous secret than without.
boost::system::result<verified, verify_error> verify(std::string_view text, const keyring& keys,
                                                     std::int64_t now_s);

/// Throws a verify error as std::invalid_argument; used by boost::system::result::value().
[[noreturn]] void throw_exception_from_error(verify_error e, const boost::source_location& loc);

}  // namespace fulltime::token
