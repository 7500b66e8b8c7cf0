#include "fulltime/core/token.hpp"

#include "core/token_detail.hpp"
#include "fulltime/limits.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

namespace token = fulltime::token;
namespace limits = fulltime::limits;
using token::verify_error;

namespace {

constexpr std::string_view secret = "test-secret-0123456789";
constexpr std::int64_t now_s = 1'700'000'000;
constexpr std::int64_t later_s = now_s + 3600;

token::claims account_claims(std::int64_t account_id = 42) {
    token::claims c;
    c.kind = token::kind::account;
    c.account_id = account_id;
    c.expires_at_s = later_s;
    return c;
}

token::claims producer_claims(std::string name = "feed-1") {
    token::claims c;
    c.kind = token::kind::producer;
    c.producer = std::move(name);
    c.expires_at_s = later_s;
    return c;
}

token::claims admin_claims() {
    token::claims c;
    c.kind = token::kind::admin;
    c.operator_name = "alice";
    c.expires_at_s = later_s;
    return c;
}

/// Returns a keyring of `current` alone, as outside a rollover.
token::keyring only(std::string_view current) { return {std::string(current), {}}; }

/// Returns the error of a refused token, or fails the test when it was accepted.
verify_error error_of(std::string_view text, std::string_view key = secret,
                      std::int64_t at_s = now_s) {
    const auto r = token::verify(text, only(key), at_s);
    REQUIRE_FALSE(r.has_value());
    return r.error();
}

/// Returns the error for a correctly signed token carrying `payload` verbatim.
verify_error error_of_payload(std::string_view payload) {
    return error_of(token::detail::sign_payload(payload, secret));
}

/// Returns `text` with the character at `pos` replaced by a different base64url character.
std::string flip(std::string text, std::size_t pos) {
    text[pos] = text[pos] == 'A' ? 'B' : 'A';
    return text;
}

}  // namespace

// --- Round trips -------------------------------------------------------------------------------

TEST_CASE("token: an account token round-trips") {
    const std::string t = token::sign(account_claims(42), secret);
    CHECK(t.starts_with("ft1."));
    const auto r = token::verify(t, only(secret), now_s);
    REQUIRE(r.has_value());
    CHECK(r->claims.kind == token::kind::account);
    CHECK(r->claims.account_id == 42);
    CHECK(r->claims.producer.empty());
    CHECK(r->claims.expires_at_s == later_s);
}

TEST_CASE("token: a producer token round-trips") {
    const std::string t = token::sign(producer_claims("feed-1"), secret);
    const auto r = token::verify(t, only(secret), now_s);
    REQUIRE(r.has_value());
    CHECK(r->claims.kind == token::kind::producer);
    CHECK(r->claims.producer == "feed-1");
    CHECK(r->claims.account_id == 0);
    CHECK(r->claims.expires_at_s == later_s);
}

TEST_CASE("token: an admin token round-trips") {
    const std::string t = token::sign(admin_claims(), secret);
    const auto r = token::verify(t, only(secret), now_s);
    REQUIRE(r.has_value());
    CHECK(r->claims.kind == token::kind::admin);
    CHECK(r->claims.account_id == 0);
    CHECK(r->claims.producer.empty());
    CHECK(r->claims.operator_name == "alice");
}

TEST_CASE("token: an admin token names its operator, one that does not is refused") {
    // Made before admin tokens named their operator: refused, so that no operator action goes
    // unattributed.
    CHECK(error_of_payload(R"({"k":"admin","e":1700003600})") == verify_error::malformed);
    CHECK(error_of_payload(R"({"k":"admin","o":"","e":1700003600})") == verify_error::malformed);
    CHECK(error_of_payload(R"({"k":"admin","o":"two words","e":1700003600})") ==
          verify_error::malformed);
    CHECK(error_of_payload(R"({"k":"admin","o":7,"e":1700003600})") == verify_error::malformed);
    CHECK(error_of_payload(R"({"k":"producer","p":"feed","o":"alice","e":1700003600})") ==
          verify_error::malformed);
    CHECK(token::verify(
              token::detail::sign_payload(R"({"k":"admin","o":"bob","e":1700003600})", secret),
              only(secret), now_s)
              ->claims.operator_name == "bob");
}

TEST_CASE("token: extreme valid claims round-trip and stay within the length bound") {
    auto a = account_claims(INT64_MAX);
    a.expires_at_s = INT64_MAX;
    const std::string ta = token::sign(a, secret);
    CHECK(ta.size() <= limits::token_bytes_max);
    CHECK(token::verify(ta, only(secret), INT64_MAX - 1)->claims.account_id == INT64_MAX);

    const std::string longest(limits::producer_name_bytes_max, '~');
    auto p = producer_claims(longest);
    p.expires_at_s = INT64_MAX;
    const std::string tp = token::sign(p, secret);
    CHECK(tp.size() <= limits::token_bytes_max);
    CHECK(token::verify(tp, only(secret), now_s)->claims.producer == longest);
}

TEST_CASE("token: the payload is the documented compact JSON") {
    const std::string t = token::sign(account_claims(42), secret);
    const std::string_view rest = std::string_view(t).substr(4);
    const auto payload = token::detail::base64url_decode(rest.substr(0, rest.find('.')));
    REQUIRE(payload.has_value());
    CHECK(*payload == R"({"k":"account","a":42,"e":1700003600})");
    // Unpadded: neither part carries '='.
    CHECK(t.find('=') == std::string::npos);
}

TEST_CASE("token: signing is deterministic and depends on the secret") {
    CHECK(token::sign(account_claims(), secret) == token::sign(account_claims(), secret));
    CHECK(token::sign(account_claims(), secret) != token::sign(account_claims(), "other"));
}

// --- Signature ---------------------------------------------------------------------------------

TEST_CASE("token: a tampered payload fails the signature check") {
    const std::string t = token::sign(account_claims(42), secret);
    // Change the account id inside the payload and re-encode it, keeping the old signature.
    const std::string forged_payload =
        token::detail::base64url_encode(R"({"k":"account","a":43,"e":1700003600})");
    const std::string forged = "ft1." + forged_payload + t.substr(t.rfind('.'));
    CHECK(error_of(forged) == verify_error::bad_signature);
    // And every single-character change of the payload text.
    for (std::size_t i = 4; i < t.rfind('.'); ++i) {
        CAPTURE(i);
        CHECK(error_of(flip(t, i)) == verify_error::bad_signature);
    }
}

TEST_CASE("token: a tampered signature is refused") {
    const std::string t = token::sign(account_claims(), secret);
    const std::size_t sig = t.rfind('.') + 1;
    for (std::size_t i = sig; i < t.size(); ++i) {
        CAPTURE(i);
        // The last character carries two unused bits: changing only those is a non-canonical
        // spelling, refused as malformed; any other change is a wrong tag.
        const verify_error e = error_of(flip(t, i));
        CHECK((e == verify_error::bad_signature || e == verify_error::malformed));
        if (i + 1 < t.size()) {
            CHECK(e == verify_error::bad_signature);
        }
    }
    // A well-formed tag of all zero bytes.
    const std::string zeros = t.substr(0, sig) + std::string(43, 'A');
    CHECK(error_of(zeros) == verify_error::bad_signature);
}

TEST_CASE("token: a wrong or empty secret is refused") {
    const std::string t = token::sign(account_claims(), secret);
    CHECK(error_of(t, "wrong-secret") == verify_error::bad_signature);
    CHECK(error_of(t, std::string(secret) + "x") == verify_error::bad_signature);
    CHECK(error_of(t, secret.substr(1)) == verify_error::bad_signature);
    CHECK(error_of(t, "") == verify_error::bad_signature);
}

TEST_CASE("token: a signature over another token's payload is refused") {
    const std::string a = token::sign(account_claims(1), secret);
    const std::string b = token::sign(account_claims(2), secret);
    const std::string spliced = a.substr(0, a.rfind('.')) + b.substr(b.rfind('.'));
    CHECK(error_of(spliced) == verify_error::bad_signature);
}

// --- Rollover: a previous secret ---------------------------------------------------------------

namespace {

constexpr std::string_view old_secret = "old-secret-0123456789";
constexpr std::string_view new_secret = "new-secret-0123456789";

/// Returns the keyring of a rollover from old_secret to new_secret.
token::keyring rollover() { return {std::string(new_secret), std::string(old_secret)}; }

}  // namespace

TEST_CASE("token: during a rollover a token of the previous secret verifies, and says so") {
    const std::string t = token::sign(account_claims(42), old_secret);
    const auto r = token::verify(t, rollover(), now_s);
    REQUIRE(r.has_value());
    CHECK(r->key == token::key::previous);
    CHECK(r->claims.kind == token::kind::account);
    CHECK(r->claims.account_id == 42);
    CHECK(r->claims.expires_at_s == later_s);
}

TEST_CASE("token: during a rollover a token of the current secret verifies as current") {
    for (const auto& c : {account_claims(7), producer_claims(), admin_claims()}) {
        const auto r = token::verify(token::sign(c, new_secret), rollover(), now_s);
        REQUIRE(r.has_value());
        CHECK(r->key == token::key::current);
        CHECK(r->claims.kind == c.kind);
    }
    // Outside a rollover too.
    const auto r = token::verify(token::sign(admin_claims(), new_secret), only(new_secret), now_s);
    REQUIRE(r.has_value());
    CHECK(r->key == token::key::current);
}

TEST_CASE("token: once the previous secret is removed its tokens are refused") {
    const std::string t = token::sign(account_claims(), old_secret);
    CHECK(error_of(t, new_secret) == verify_error::bad_signature);
}

TEST_CASE("token: a token of neither secret is a bad signature") {
    const std::string third = token::sign(account_claims(), "third-secret-0123456789");
    auto r = token::verify(third, rollover(), now_s);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == verify_error::bad_signature);
    // Nor does a tampered token of either secret pass under the other.
    for (std::string_view key : {old_secret, new_secret}) {
        CAPTURE(key);
        const std::string t = token::sign(account_claims(), key);
        r = token::verify(flip(t, 6), rollover(), now_s);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error() == verify_error::bad_signature);
    }
    // A wrong-length tag is malformed before any secret is tried.
    r = token::verify(third + "AAAA", rollover(), now_s);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == verify_error::malformed);
}

TEST_CASE("token: a token of the previous secret is still checked for expiry and payload") {
    const std::string t = token::sign(account_claims(), old_secret);
    CHECK(token::verify(t, rollover(), later_s - 1).has_value());
    auto r = token::verify(t, rollover(), later_s);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == verify_error::expired);
    r = token::verify(
        token::detail::sign_payload(R"({"k":"account","a":0,"e":1700003600})", old_secret),
        rollover(), now_s);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == verify_error::malformed);
}

TEST_CASE("token: an empty secret in a keyring matches nothing") {
    const std::string t = token::sign(account_claims(), old_secret);
    // An empty previous secret is no previous secret.
    CHECK(error_of(t, new_secret) == verify_error::bad_signature);
    auto r = token::verify(t, {std::string(new_secret), std::string()}, now_s);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == verify_error::bad_signature);
    // An empty current one does not stop the previous from verifying, nor verifies anything.
    r = token::verify(t, {std::string(), std::string(old_secret)}, now_s);
    REQUIRE(r.has_value());
    CHECK(r->key == token::key::previous);
    r = token::verify(t, {std::string(), std::string()}, now_s);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == verify_error::bad_signature);
}

// --- Shape -------------------------------------------------------------------------------------

TEST_CASE("token: truncated tokens are refused") {
    const std::string t = token::sign(account_claims(), secret);
    for (std::size_t n = 0; n < t.size(); ++n) {
        CAPTURE(n);
        const verify_error e = error_of(std::string_view(t).substr(0, n));
        // Cutting into the signature leaves too few bytes for a tag: malformed, never accepted.
        CHECK(e == verify_error::malformed);
    }
}

TEST_CASE("token: wrong prefix, missing parts and extra dots are malformed") {
    const std::string t = token::sign(account_claims(), secret);
    const std::string body = t.substr(4);
    CHECK(error_of("ft2." + body) == verify_error::malformed);
    CHECK(error_of("FT1." + body) == verify_error::malformed);
    CHECK(error_of(body) == verify_error::malformed);
    CHECK(error_of("." + t) == verify_error::malformed);
    CHECK(error_of(t + ".") == verify_error::malformed);
    CHECK(error_of(t + ".AAAA") == verify_error::malformed);
    CHECK(error_of("ft1.." + body) == verify_error::malformed);
    CHECK(error_of("ft1." + body.substr(0, body.find('.')) + "..x") == verify_error::malformed);
    CHECK(error_of("ft1.") == verify_error::malformed);
    CHECK(error_of("ft1..") == verify_error::malformed);
    CHECK(error_of("") == verify_error::malformed);
    CHECK(error_of("Bearer " + t) == verify_error::malformed);
    CHECK(error_of(t + " ") == verify_error::malformed);
}

TEST_CASE("token: bad base64url in the signature is malformed") {
    const std::string t = token::sign(account_claims(), secret);
    const std::size_t sig = t.rfind('.') + 1;
    const std::string head = t.substr(0, sig);
    const std::string tag = t.substr(sig);
    REQUIRE(tag.size() == 43);
    CHECK(error_of(head + tag + "=") == verify_error::malformed);                // padding
    CHECK(error_of(head + tag.substr(0, 42) + "+") == verify_error::malformed);  // base64, not url
    CHECK(error_of(head + "/" + tag.substr(1)) == verify_error::malformed);
    CHECK(error_of(head + tag.substr(0, 20) + "*" + tag.substr(21)) == verify_error::malformed);
    CHECK(error_of(head + tag + "A") == verify_error::malformed);  // 44 chars: 33 bytes
    CHECK(error_of(head + tag + "AAAA") == verify_error::malformed);
}

TEST_CASE("token: bad base64url in a correctly signed payload is malformed") {
    // The payload text is what is signed, so only a holder of the secret can make these; they
    // must still be refused, not crash or decode to something.
    for (std::string_view bad : {"e30=", "e30*", "e3", "e30+", "e3/", "A", "e31", "e 0"}) {
        CAPTURE(bad);
        const std::string signed_part = "ft1." + std::string(bad);
        const std::string t = signed_part + "." + token::detail::tag(signed_part, secret);
        CHECK(error_of(t) == verify_error::malformed);
    }
    // The same construction with a good payload is accepted, so the refusals are about base64.
    const std::string good =
        "ft1." + token::detail::base64url_encode(R"({"k":"admin","o":"ops","e":1700003600})");
    CHECK(token::verify(good + "." + token::detail::tag(good, secret), only(secret), now_s)
              .has_value());
}

TEST_CASE("token: an unsigned forgery with bad base64url stops at the signature") {
    const std::string reference = token::sign(admin_claims(), secret);
    const std::string forged = "ft1.e30*" + reference.substr(reference.rfind('.'));
    CHECK(error_of(forged) == verify_error::bad_signature);
}

TEST_CASE("token: an over-long token is refused before decoding") {
    const std::string t = token::sign(account_claims(), secret);
    CHECK(error_of(t + std::string(limits::token_bytes_max, 'A')) == verify_error::malformed);
    CHECK(error_of(std::string(limits::token_bytes_max + 1, 'A')) == verify_error::malformed);
    // A correctly signed token just over the bound is refused too.
    const std::string padded_json = R"({"k":"admin","o":"ops","e":1700003600,"x":")" +
                                    std::string(limits::token_bytes_max, 'x') + "\"}";
    const std::string big = token::detail::sign_payload(padded_json, secret);
    REQUIRE(big.size() > limits::token_bytes_max);
    CHECK(error_of(big) == verify_error::malformed);
}

// --- Expiry ------------------------------------------------------------------------------------

TEST_CASE("token: a token is valid strictly before its expiry") {
    const std::string t = token::sign(account_claims(), secret);
    CHECK(token::verify(t, only(secret), later_s - 1).has_value());
    CHECK(error_of(t, secret, later_s) == verify_error::expired);
    CHECK(error_of(t, secret, later_s + 1) == verify_error::expired);
    CHECK(error_of(t, secret, INT64_MAX) == verify_error::expired);
    CHECK(token::verify(t, only(secret), INT64_MIN).has_value());
}

TEST_CASE("token: the signature is judged before the expiry") {
    const std::string t = token::sign(account_claims(), secret);
    CHECK(error_of(t, "wrong", later_s + 10) == verify_error::bad_signature);
}

// --- Payload -----------------------------------------------------------------------------------

TEST_CASE("token: a correctly signed payload that is not a JSON object is malformed") {
    for (std::string_view payload :
         {"", "not json", "{", R"({"k":"admin","o":"ops","e":1700003600)", "[]", "42", "\"admin\"",
          "null", "true", R"([{"k":"admin","o":"ops","e":1700003600}])",
          "{\"k\":\"admin\",\"e\":1700003600}x", "{\"k\":\"adm\xff\",\"e\":1700003600}"}) {
        CAPTURE(payload);
        CHECK(error_of_payload(payload) == verify_error::malformed);
    }
}

TEST_CASE("token: a correctly signed payload with a key twice or a NUL in a name is malformed") {
    for (std::string_view payload : {R"({"k":"account","a":42,"a":7,"e":1700003600})",
                                     R"({"k":"admin","k":"account","o":"ops","e":1700003600})",
                                     R"({"k":"admin","o":"ops\u0000root","e":1700003600})",
                                     R"({"k":"producer","p":"feed\u0000","e":1700003600})"}) {
        CAPTURE(payload);
        CHECK(error_of_payload(payload) == verify_error::malformed);
    }
    // The same payloads without the duplicate or the NUL verify.
    const auto ok = token::verify(
        token::detail::sign_payload(R"({"k":"account","a":42,"e":1700003600})", secret),
        only(secret), now_s);
    REQUIRE(ok.has_value());
    CHECK(ok->claims.account_id == 42);
}

TEST_CASE("token: a correctly signed payload with an unknown kind is malformed") {
    for (std::string_view payload :
         {R"({"k":"root","e":1700003600})", R"({"k":"Admin","e":1700003600})",
          R"({"k":"","e":1700003600})", R"({"k":"admin ","e":1700003600})"}) {
        CAPTURE(payload);
        CHECK(error_of_payload(payload) == verify_error::malformed);
    }
}

TEST_CASE("token: a correctly signed payload with missing fields is malformed") {
    for (std::string_view payload :
         {R"({})", R"({"e":1700003600})", R"({"k":"admin"})", R"({"k":"account","e":1700003600})",
          R"({"k":"account","a":42})", R"({"k":"producer","e":1700003600})",
          R"({"a":42,"e":1700003600})"}) {
        CAPTURE(payload);
        CHECK(error_of_payload(payload) == verify_error::malformed);
    }
}

TEST_CASE("token: a correctly signed payload with wrong field types is malformed") {
    for (std::string_view payload : {
             R"({"k":1,"e":1700003600})",
             R"({"k":null,"e":1700003600})",
             R"({"k":["admin"],"e":1700003600})",
             R"({"k":"admin","o":"ops","e":"1700003600"})",
             R"({"k":"admin","o":"ops","e":1700003600.0})",
             R"({"k":"admin","o":"ops","e":1.7e9})",
             R"({"k":"admin","o":"ops","e":true})",
             R"({"k":"admin","o":"ops","e":null})",
             R"({"k":"admin","o":"ops","e":9223372036854775808})",
             R"({"k":"admin","o":"ops","e":18446744073709551616})",
             R"({"k":"account","a":"42","e":1700003600})",
             R"({"k":"account","a":42.0,"e":1700003600})",
             R"({"k":"account","a":42.5,"e":1700003600})",
             R"({"k":"account","a":9223372036854775808,"e":1700003600})",
             R"({"k":"account","a":{},"e":1700003600})",
             R"({"k":"producer","p":7,"e":1700003600})",
             R"({"k":"producer","p":["feed"],"e":1700003600})",
             R"({"k":"producer","p":null,"e":1700003600})",
         }) {
        CAPTURE(payload);
        CHECK(error_of_payload(payload) == verify_error::malformed);
    }
}

TEST_CASE("token: a correctly signed payload with invalid values or extra fields is malformed") {
    const std::string too_long(limits::producer_name_bytes_max + 1, 'p');
    for (const std::string& payload : {
             std::string(R"({"k":"account","a":0,"e":1700003600})"),
             std::string(R"({"k":"account","a":-1,"e":1700003600})"),
             std::string(R"({"k":"account","a":-9223372036854775808,"e":1700003600})"),
             std::string(R"({"k":"admin","o":"ops","e":0})"),
             std::string(R"({"k":"admin","o":"ops","e":-5})"),
             std::string(R"({"k":"producer","p":"","e":1700003600})"),
             R"({"k":"producer","p":")" + too_long + R"(","e":1700003600})",
             std::string(R"({"k":"producer","p":"feed 1","e":1700003600})"),
             std::string(R"({"k":"producer","p":"feed\n1","e":1700003600})"),
             std::string(R"({"k":"producer","p":"flux-é","e":1700003600})"),
             std::string(R"({"k":"admin","o":"ops","e":1700003600,"x":1})"),
             std::string(R"({"k":"admin","o":"ops","a":42,"e":1700003600})"),
             std::string(R"({"k":"account","a":42,"p":"feed","e":1700003600})"),
             std::string(R"({"k":"producer","p":"feed","a":1,"e":1700003600})"),
         }) {
        CAPTURE(payload);
        CHECK(error_of_payload(payload) == verify_error::malformed);
    }
    // The same shapes with valid values are accepted, so the refusals above are about values.
    const std::string exact_long(limits::producer_name_bytes_max, 'p');
    CHECK(
        token::verify(token::detail::sign_payload(
                          R"({"k":"producer","p":")" + exact_long + R"(","e":1700003600})", secret),
                      only(secret), now_s)
            .has_value());
    CHECK(token::verify(
              token::detail::sign_payload(R"({"e":1700003600,"a":7,"k":"account"})", secret),
              only(secret), now_s)
              ->claims.account_id == 7);
}

// --- Claims validity ---------------------------------------------------------------------------

TEST_CASE("token: is_valid accepts what sign may sign and nothing else") {
    CHECK(token::is_valid(account_claims()));
    CHECK(token::is_valid(producer_claims()));
    CHECK(token::is_valid(admin_claims()));

    CHECK_FALSE(token::is_valid(account_claims(0)));
    CHECK_FALSE(token::is_valid(account_claims(-3)));
    auto a = account_claims();
    a.producer = "feed";
    CHECK_FALSE(token::is_valid(a));
    a = account_claims();
    a.expires_at_s = 0;
    CHECK_FALSE(token::is_valid(a));

    CHECK_FALSE(token::is_valid(producer_claims("")));
    CHECK_FALSE(token::is_valid(producer_claims(std::string(65, 'p'))));
    CHECK_FALSE(token::is_valid(producer_claims("has space")));
    CHECK_FALSE(token::is_valid(producer_claims(std::string("nul\0", 4))));
    auto p = producer_claims();
    p.account_id = 1;
    CHECK_FALSE(token::is_valid(p));

    auto ad = admin_claims();
    ad.account_id = 1;
    CHECK_FALSE(token::is_valid(ad));
    ad = admin_claims();
    ad.producer = "x";
    CHECK_FALSE(token::is_valid(ad));
    ad = admin_claims();
    ad.operator_name.clear();
    CHECK_FALSE(token::is_valid(ad));
    ad = admin_claims();
    ad.operator_name = "has space";
    CHECK_FALSE(token::is_valid(ad));
    a = account_claims();
    a.operator_name = "alice";
    CHECK_FALSE(token::is_valid(a));
    ad = admin_claims();
    ad.kind = static_cast<token::kind>(99);
    CHECK_FALSE(token::is_valid(ad));
}

// --- base64url ---------------------------------------------------------------------------------

TEST_CASE("token: base64url matches RFC 4648 vectors without padding") {
    namespace d = token::detail;
    CHECK(d::base64url_encode("") == "");
    CHECK(d::base64url_encode("f") == "Zg");
    CHECK(d::base64url_encode("fo") == "Zm8");
    CHECK(d::base64url_encode("foo") == "Zm9v");
    CHECK(d::base64url_encode("foob") == "Zm9vYg");
    CHECK(d::base64url_encode("fooba") == "Zm9vYmE");
    CHECK(d::base64url_encode("foobar") == "Zm9vYmFy");
    CHECK(d::base64url_encode("\xfb\xff\xbf") == "-_-_");
    CHECK(*d::base64url_decode("Zm9vYmE") == "fooba");
    CHECK(*d::base64url_decode("-_-_") == "\xfb\xff\xbf");
    CHECK(*d::base64url_decode("") == "");
}

TEST_CASE("token: base64url decoding is strict and canonical") {
    namespace d = token::detail;
    CHECK_FALSE(d::base64url_decode("Zg==").has_value());
    CHECK_FALSE(d::base64url_decode("Z").has_value());
    CHECK_FALSE(d::base64url_decode("Zm9v Yg").has_value());
    CHECK_FALSE(d::base64url_decode("+/+/").has_value());
    CHECK_FALSE(d::base64url_decode("Zh").has_value());   // "Zg" with a non-zero unused bit
    CHECK_FALSE(d::base64url_decode("Zm9").has_value());  // "Zm8" with a non-zero unused bit
    // Every byte string round-trips, for all lengths 0..64 over all byte values.
    std::string bytes;
    for (int i = 0; i < 64; ++i) {
        bytes += static_cast<char>((i * 37 + 11) & 0xff);
        const auto back = d::base64url_decode(d::base64url_encode(bytes));
        REQUIRE(back.has_value());
        CHECK(*back == bytes);
    }
    std::string all;
    for (int b = 0; b < 256; ++b) {
        all += static_cast<char>(b);
    }
    CHECK(*d::base64url_decode(d::base64url_encode(all)) == all);
}

// --- Errors as text ----------------------------------------------------------------------------

TEST_CASE("token: describe gives a distinct sentence for every error") {
    std::set<std::string_view> seen;
    for (auto e : {verify_error::malformed, verify_error::bad_signature, verify_error::expired}) {
        const std::string_view text = token::describe(e);
        CHECK_FALSE(text.empty());
        CHECK(seen.insert(text).second);
    }
    const auto r = token::verify("x", only(secret), now_s);
    CHECK_THROWS_AS(r.value(), std::invalid_argument);
}
