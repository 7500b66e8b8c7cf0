/// Fuzzes token verification against a fixed keyring, in two modes chosen by the first byte:
/// the input as a token (length, shape, base64url and signature checks), or the input as a
/// payload signed with the keyring's current secret (the payload's JSON and claim checks, which
/// a forged signature never reaches). Also round-trips base64url.
///
/// Invariants: a verified token's claims are is_valid and unexpired, and sign() of them verifies
/// to the same claims; base64url_decode(base64url_encode(x)) == x.

#include "fulltime/core/token.hpp"

#include "core/token_detail.hpp"

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace token = fulltime::token;

constexpr std::int64_t now_s = 1'700'000'000;
const token::keyring keys{"fuzz-current-secret-0123456789", "fuzz-previous-secret-9876543210"};

bool same_claims(const token::claims& a, const token::claims& b) {
    return a.kind == b.kind && a.account_id == b.account_id && a.producer == b.producer &&
           a.operator_name == b.operator_name && a.expires_at_s == b.expires_at_s;
}

void check_verify(std::string_view text) {
    const auto r = token::verify(text, keys, now_s);
    if (!r) {
        FUZZ_CHECK(!token::describe(r.error()).empty());
        return;
    }
    FUZZ_CHECK(token::is_valid(r->claims));
    FUZZ_CHECK(r->claims.expires_at_s > now_s);
    const std::string again = token::sign(r->claims, keys.current);
    const auto r2 = token::verify(again, keys, now_s);
    FUZZ_CHECK(r2.has_value());
    FUZZ_CHECK(r2->key == token::key::current);
    FUZZ_CHECK(same_claims(r2->claims, r->claims));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);

    const std::string encoded = token::detail::base64url_encode(rest);
    const auto decoded = token::detail::base64url_decode(encoded);
    FUZZ_CHECK(decoded.has_value() && *decoded == rest);
    if (const auto bytes = token::detail::base64url_decode(rest)) {
        FUZZ_CHECK(token::detail::base64url_encode(*bytes) == rest);
    }

    switch (data[0] % 3) {
        case 0:
            check_verify(rest);
            break;
        case 1:
            check_verify(token::detail::sign_payload(rest, keys.current));
            break;
        default:
            check_verify(token::detail::sign_payload(rest, keys.previous));
            break;
    }
    return 0;
}
