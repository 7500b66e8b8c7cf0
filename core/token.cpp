#include "fulltime/core/token.hpp"

#include "core/token_detail.hpp"
#include "fulltime/core/assert.hpp"
#include "fulltime/core/strict_json.hpp"
#include "fulltime/limits.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <nlohmann/json.hpp>

#include <array>
#include <climits>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace fulltime::token {

namespace {

/// The version prefix; a token format change gets a new prefix rather than new fields.
constexpr std::string_view prefix = "ft1.";
/// Bytes of an HMAC-SHA256 tag.
constexpr std::size_t mac_bytes = 32;

constexpr std::string_view alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Returns the 6-bit value of a base64url character, or -1.
constexpr int sextet(char c) noexcept {
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '-') {
        return 62;
    }
    if (c == '_') {
        return 63;
    }
    return -1;
}

using mac = std::array<unsigned char, mac_bytes>;

/// Returns HMAC-SHA256(secret, data).
mac compute_mac(std::string_view secret, std::string_view data) {
    // Token secrets are short strings from the configuration; an int length is plenty, and the
    // assertion keeps the narrowing honest.
    FULLTIME_ASSERT(secret.size() <= static_cast<std::size_t>(INT_MAX));
    mac out{};
    unsigned int out_len = 0;
    const unsigned char* r = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                                  reinterpret_cast<const unsigned char*>(data.data()), data.size(),
                                  out.data(), &out_len);
    // HMAC-SHA256 fails only on allocation failure or a broken OpenSSL installation; a token
    // must never be issued or accepted with a partial tag.
    FULLTIME_ASSERT(r != nullptr && out_len == mac_bytes);
    return out;
}

std::string_view kind_name(kind k) noexcept {
    switch (k) {
        case kind::account:
            return "account";
        case kind::producer:
            return "producer";
        case kind::admin:
            return "admin";
    }
    return {};
}

std::optional<kind> kind_from_name(std::string_view name) noexcept {
    for (kind k : {kind::account, kind::producer, kind::admin}) {
        if (name == kind_name(k)) {
            return k;
        }
    }
    return std::nullopt;
}

bool is_valid_producer_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > limits::producer_name_bytes_max) {
        return false;
    }
    for (char c : name) {
        // Visible ASCII only: the name lands in logs, metrics labels and result_events.producer,
        // where spaces, control characters and odd encodings only cause trouble.
        if (c < 0x21 || c > 0x7e) {
            return false;
        }
    }
    return true;
}

/// Returns the integer at `key` when it is a JSON integer that fits in int64.
std::optional<std::int64_t> int64_field(const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) {
        return std::nullopt;  // Missing, or a float, string, bool, null, array or object.
    }
    if (it->is_number_unsigned() &&
        it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
        return std::nullopt;
    }
    return it->get<std::int64_t>();
}

/// Returns the string at `key` when it is a JSON string.
std::optional<std::string> string_field(const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) {
        return std::nullopt;
    }
    return it->get<std::string>();
}

/// Returns the claims in a decoded payload, or nullopt for anything but the exact fields of
/// its kind with the right types and valid values.
std::optional<claims> parse_payload(std::string_view json_text) {
    // The strict parser, as for every client's JSON: only a signer can make a payload, but a
    // key twice (which one counts?) or a NUL in a name (the operator's, the producer's, logged
    // and stored in events) is refused rather than read one way here and another elsewhere.
    const auto parsed = parse_strict_json(json_text, "token");
    if (!parsed || !parsed->is_object()) {
        return std::nullopt;
    }
    const nlohmann::json& j = *parsed;
    const auto k = j.find("k");
    if (k == j.end() || !k->is_string()) {
        return std::nullopt;
    }
    const auto which = kind_from_name(k->get_ref<const std::string&>());
    if (!which) {
        return std::nullopt;
    }
    const auto expires = int64_field(j, "e");
    if (!expires) {
        return std::nullopt;
    }
    claims c;
    c.kind = *which;
    c.expires_at_s = *expires;
    // Exactly the fields of the kind: a field we do not know means a signer we do not know, and
    // a new field would come with a new prefix (see `prefix`).
    std::size_t fields = 2;
    switch (c.kind) {
        case kind::account: {
            const auto a = int64_field(j, "a");
            if (!a) {
                return std::nullopt;
            }
            c.account_id = *a;
            fields = 3;
            break;
        }
        case kind::producer: {
            auto p = string_field(j, "p");
            if (!p) {
                return std::nullopt;
            }
            c.producer = std::move(*p);
            fields = 3;
            break;
        }
        case kind::admin: {
            // The operator's name: an admin token without one (made before names) is refused,
            // so that every operator action has someone to log.
            auto o = string_field(j, "o");
            if (!o) {
                return std::nullopt;
            }
            c.operator_name = std::move(*o);
            fields = 3;
            break;
        }
    }
    if (j.size() != fields || !is_valid(c)) {
        return std::nullopt;
    }
    return c;
}

}  // namespace

namespace detail {

std::string base64url_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() * 4 + 2) / 3);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                       static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 2]));
        out += alphabet[n >> 18 & 63];
        out += alphabet[n >> 12 & 63];
        out += alphabet[n >> 6 & 63];
        out += alphabet[n & 63];
    }
    const std::size_t rest = bytes.size() - i;
    if (rest == 1) {
        const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
        out += alphabet[n >> 18 & 63];
        out += alphabet[n >> 12 & 63];
    } else if (rest == 2) {
        const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
        out += alphabet[n >> 18 & 63];
        out += alphabet[n >> 12 & 63];
        out += alphabet[n >> 6 & 63];
    }
    return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) {
        return std::nullopt;  // No byte count encodes to this many characters.
    }
    std::string out;
    out.reserve(text.size() * 3 / 4);
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : text) {
        const int v = sextet(c);
        if (v < 0) {
            return std::nullopt;
        }
        acc = (acc << 6 | static_cast<std::uint32_t>(v)) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>(acc >> bits & 0xff);
        }
    }
    // Left-over bits must be zero, or two spellings would decode to the same bytes and a token
    // could be altered without changing what it says.
    if ((acc & ((1u << bits) - 1)) != 0) {
        return std::nullopt;
    }
    return out;
}

std::string tag(std::string_view signed_part, std::string_view secret) {
    FULLTIME_ASSERT(!secret.empty());
    const mac m = compute_mac(secret, signed_part);
    return base64url_encode(std::string_view(reinterpret_cast<const char*>(m.data()), m.size()));
}

std::string sign_payload(std::string_view payload_json, std::string_view secret) {
    std::string text(prefix);
    text += base64url_encode(payload_json);
    const std::string t = tag(text, secret);
    text += '.';
    text += t;
    return text;
}

}  // namespace detail

std::string_view describe(verify_error e) noexcept {
    switch (e) {
        case verify_error::malformed:
            return "the token is malformed";
        case verify_error::bad_signature:
            return "the token signature is not valid";
        case verify_error::expired:
            return "the token has expired";
    }
    return "the token is not valid";
}

bool is_valid(const claims& c) noexcept {
    if (c.expires_at_s <= 0) {
        return false;
    }
    switch (c.kind) {
        case kind::account:
            return c.account_id > 0 && c.producer.empty() && c.operator_name.empty();
        case kind::producer:
            return c.account_id == 0 && is_valid_producer_name(c.producer) &&
                   c.operator_name.empty();
        case kind::admin:
            return c.account_id == 0 && c.producer.empty() &&
                   is_valid_producer_name(c.operator_name);
    }
    return false;
}

std::string sign(const claims& c, std::string_view secret) {
    FULLTIME_ASSERT(is_valid(c));
    // ordered_json keeps "k" first, as in the header's examples; verify() does not care.
    nlohmann::ordered_json j;
    j["k"] = kind_name(c.kind);
    if (c.kind == kind::account) {
        j["a"] = c.account_id;
    } else if (c.kind == kind::producer) {
        j["p"] = c.producer;
    } else {
        j["o"] = c.operator_name;
    }
    j["e"] = c.expires_at_s;
    std::string text = detail::sign_payload(j.dump(), secret);
    // The longest valid claims give about 200 characters; verify() must accept what sign() makes.
    FULLTIME_ASSERT(text.size() <= limits::token_bytes_max);
    return text;
}

boost::system::result<verified, verify_error> verify(std::string_view text, const keyring& keys,
                                                     std::int64_t now_s) {
    // Shape first, on bounded input, before any decoding or hashing.
    if (text.size() > limits::token_bytes_max || !text.starts_with(prefix)) {
        return verify_error::malformed;
    }
    const std::size_t sig_dot = text.find('.', prefix.size());
    if (sig_dot == std::string_view::npos) {
        return verify_error::malformed;
    }
    const std::string_view signed_part = text.substr(0, sig_dot);
    const std::string_view payload_b64 = signed_part.substr(prefix.size());
    const std::string_view sig_b64 = text.substr(sig_dot + 1);
    if (payload_b64.empty() || sig_b64.find('.') != std::string_view::npos) {
        return verify_error::malformed;
    }
    const auto sig = detail::base64url_decode(sig_b64);
    if (!sig || sig->size() != mac_bytes) {
        return verify_error::malformed;
    }

    // The current secret first: outside a rollover it is the only one, and during one the
    // tokens signed with it are the ones that grow in number, so the second HMAC runs only for
    // the tokens that still need it.
    const auto signed_by = [&](std::string_view secret) {
        // An empty secret would let anyone compute the tag; it matches no token (the
        // configuration is meant to make an empty current secret impossible, and an empty
        // previous one means there is none).
        if (secret.empty()) {
            return false;
        }
        const mac expected = compute_mac(secret, signed_part);
        return CRYPTO_memcmp(expected.data(), sig->data(), mac_bytes) == 0;
    };
    key matched = key::current;
    if (!signed_by(keys.current)) {
        if (!signed_by(keys.previous)) {
            return verify_error::bad_signature;
        }
        matched = key::previous;
    }

    // Only now, with the payload known to come from a holder of a secret, decode and parse it.
    const auto payload = detail::base64url_decode(payload_b64);
    if (!payload) {
        return verify_error::malformed;
    }
    auto c = parse_payload(*payload);
    if (!c) {
        return verify_error::malformed;
    }
    if (now_s >= c->expires_at_s) {
        return verify_error::expired;
    }
    return verified{std::move(*c), matched};
}

void throw_exception_from_error(verify_error e, const boost::source_location&) {
    throw std::invalid_argument(std::string(describe(e)));
}

}  // namespace fulltime::token
