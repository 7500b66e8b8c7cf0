#include "fulltime/core/bets_protocol.hpp"

#include "fulltime/core/client_text.hpp"
#include "fulltime/core/errors.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/limits.hpp"

#include <openssl/evp.h>

#include <array>
#include <initializer_list>
#include <stdexcept>

namespace fulltime::bets {

namespace {

using json = nlohmann::json;

request_error invalid(std::string message) { return request_error{std::move(message)}; }

const std::string own_account_only = "a bet-client token acts on its own account only";

// Refuses any field not in `allowed`: see the header for why unknown fields are not ignored.
std::optional<request_error> refuse_unknown_fields(
    const json& message, std::initializer_list<std::string_view> allowed) {
    for (const auto& [name, value] : message.items()) {
        bool known = false;
        for (auto a : allowed) {
            if (name == a) {
                known = true;
                break;
            }
        }
        if (!known) {
            return invalid("unknown field " + client_text::quoted(name));
        }
    }
    return std::nullopt;
}

// A message may name its account, but only the token's own.
std::optional<request_error> check_account(const json& message, std::int64_t token_account_id) {
    auto it = message.find("account_id");
    if (it == message.end()) {
        return std::nullopt;
    }
    if (!it->is_number_integer()) {
        return invalid("\"account_id\" must be a positive integer");
    }
    if (it->is_number_unsigned()) {
        if (it->get<std::uint64_t>() != static_cast<std::uint64_t>(token_account_id)) {
            return invalid(own_account_only);
        }
        return std::nullopt;
    }
    if (it->get<std::int64_t>() != token_account_id) {
        return invalid(own_account_only);
    }
    return std::nullopt;
}

// Reads a required positive integer that fits int64. JSON floats ("1001.0", "1e3") and strings
// are refused: identifiers are integers on the wire.
checked<std::int64_t> positive_integer(const json& message, const char* name) {
    auto it = message.find(name);
    const std::string what = std::string("\"") + name + "\" must be a positive integer";
    if (it == message.end()) {
        return invalid(std::string("missing \"") + name + "\"");
    }
    if (!it->is_number_integer()) {
        return invalid(what);
    }
    if (it->is_number_unsigned()) {
        const auto v = it->get<std::uint64_t>();
        if (v == 0 || v > static_cast<std::uint64_t>(INT64_MAX)) {
            return invalid(what);
        }
        return static_cast<std::int64_t>(v);
    }
    const auto v = it->get<std::int64_t>();
    if (v <= 0) {
        return invalid(what);
    }
    return v;
}

checked<std::string_view> required_string(const json& message, const char* name) {
    auto it = message.find(name);
    if (it == message.end()) {
        return invalid(std::string("missing \"") + name + "\"");
    }
    if (!it->is_string()) {
        return invalid(std::string("\"") + name + "\" must be a string");
    }
    return std::string_view{it->get_ref<const std::string&>()};
}

std::string describe_amount_error(const char* name, money::parse_error e) {
    return std::string("\"") + name + "\": " + std::string(money::describe(e));
}

std::string describe_amount_error(const char* name, money::parse_error e,
                                  std::string_view currency) {
    return std::string("\"") + name + "\": " + money::describe(e, currency);
}

}  // namespace

std::string_view to_string(accept_policy p) noexcept {
    switch (p) {
        case accept_policy::exact:
            return "exact";
        case accept_policy::better:
            return "better";
        case accept_policy::any:
            return "any";
    }
    return "exact";
}

std::string_view to_string(status_filter s) noexcept {
    switch (s) {
        case status_filter::open:
            return "open";
        case status_filter::settled:
            return "settled";
        case status_filter::all:
            return "all";
    }
    return "all";
}

checked<place_request> parse_place(const json& message, std::int64_t token_account_id) {
    if (auto e = refuse_unknown_fields(message, {"type", "id", "account_id", "idempotency_key",
                                                 "selection_id", "stake", "odds", "accept"})) {
        return *e;
    }
    if (auto e = check_account(message, token_account_id)) {
        return *e;
    }
    place_request r;
    r.account_id = token_account_id;

    auto key = required_string(message, "idempotency_key");
    if (!key) {
        return key.error();
    }
    // One pass over at most 255 bytes, no allocation: the hot path can afford it, and a key the
    // database would refuse must never reach the placement group it would fail with it.
    if (const auto fault = client_text::check(*key, limits::idempotency_key_bytes_max);
        fault != client_text::fault::none) {
        return invalid("\"idempotency_key\" " +
                       client_text::describe(fault, limits::idempotency_key_bytes_max));
    }
    r.idempotency_key = std::string(*key);

    auto selection = positive_integer(message, "selection_id");
    if (!selection) {
        return selection.error();
    }
    r.selection_id = *selection;

    auto stake_text = required_string(message, "stake");
    if (!stake_text) {
        if (!message.contains("stake")) {
            return stake_text.error();
        }
        return request_error{stake_text.error().message +
                             " (money travels as a decimal string, e.g. \"10.00\")"};
    }
    // Thousandths: the account's currency, and so how many decimals it allows, is known only to
    // the placement function (fulltime_place_group.sql), which converts to minor units there.
    auto stake = money::parse_positive_thousandths(*stake_text);
    if (!stake) {
        return invalid(describe_amount_error("stake", stake.error()));
    }
    r.stake_thousandths = *stake;

    auto odds_text = required_string(message, "odds");
    if (!odds_text) {
        if (!message.contains("odds")) {
            return odds_text.error();
        }
        return request_error{odds_text.error().message +
                             " (odds travel as a decimal string, e.g. \"2.50\")"};
    }
    auto odds = money::parse_odds(*odds_text);
    if (!odds) {
        return invalid(describe_amount_error("odds", odds.error()));
    }
    r.odds_units = *odds;

    if (auto it = message.find("accept"); it != message.end()) {
        if (!it->is_string()) {
            return invalid("\"accept\" must be \"exact\", \"better\" or \"any\"");
        }
        const auto& a = it->get_ref<const std::string&>();
        if (a == "exact") {
            r.accept = accept_policy::exact;
        } else if (a == "better") {
            r.accept = accept_policy::better;
        } else if (a == "any") {
            r.accept = accept_policy::any;
        } else {
            return invalid("\"accept\" must be \"exact\", \"better\" or \"any\"");
        }
    }
    return r;
}

checked<balance_request> parse_balance(const json& message, std::int64_t token_account_id) {
    if (auto e = refuse_unknown_fields(message, {"type", "id", "account_id"})) {
        return *e;
    }
    if (auto e = check_account(message, token_account_id)) {
        return *e;
    }
    return balance_request{token_account_id};
}

checked<bets_request> parse_bets(const json& message, std::int64_t token_account_id) {
    if (auto e = refuse_unknown_fields(message,
                                       {"type", "id", "account_id", "status", "limit", "before"})) {
        return *e;
    }
    if (auto e = check_account(message, token_account_id)) {
        return *e;
    }
    bets_request r;
    r.account_id = token_account_id;
    if (auto it = message.find("status"); it != message.end()) {
        const std::string what = "\"status\" must be \"open\", \"settled\" or \"all\"";
        if (!it->is_string()) {
            return invalid(what);
        }
        const auto& s = it->get_ref<const std::string&>();
        if (s == "open") {
            r.status = status_filter::open;
        } else if (s == "settled") {
            r.status = status_filter::settled;
        } else if (s == "all") {
            r.status = status_filter::all;
        } else {
            return invalid(what);
        }
    }
    if (auto it = message.find("limit"); it != message.end()) {
        const std::string what =
            "\"limit\" must be an integer from 1 to " + std::to_string(bets_limit_max);
        if (!it->is_number_integer()) {
            return invalid(what);
        }
        if (it->is_number_unsigned()) {
            const auto v = it->get<std::uint64_t>();
            if (v < 1 || v > static_cast<std::uint64_t>(bets_limit_max)) {
                return invalid(what);
            }
            r.limit = static_cast<std::int64_t>(v);
        } else {
            const auto v = it->get<std::int64_t>();
            if (v < 1 || v > bets_limit_max) {
                return invalid(what);
            }
            r.limit = v;
        }
    }
    if (message.contains("before")) {
        auto before = positive_integer(message, "before");
        if (!before) {
            return invalid("\"before\" must be a positive integer (a bet_id from \"next_before\")");
        }
        r.before = *before;
    }
    return r;
}

std::string fingerprint(const place_request& request) {
    // Hundredths, as the releases that parsed two decimals wrote every stake, and a third
    // decimal only when there is one: a key stored before the upgrade still matches its retry.
    std::string stake = std::to_string(request.stake_thousandths / 10);
    if (const auto third = request.stake_thousandths % 10; third != 0) {
        stake += '.';
        stake += static_cast<char>('0' + third);
    }
    const std::string canonical = "place/v1|" + std::to_string(request.selection_id) + "|" + stake +
                                  "|" + std::to_string(request.odds_units) + "|" +
                                  std::string(to_string(request.accept));
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (EVP_Digest(canonical.data(), canonical.size(), digest.data(), &length, EVP_sha256(),
                   nullptr) != 1) {
        // Only an allocation failure or a broken OpenSSL gets here: nothing a client caused.
        throw std::runtime_error("SHA-256 failed");
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * length);
    for (unsigned int i = 0; i < length; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 0x0f];
    }
    return out;
}

namespace {

// Reads an integer member; a missing or mistyped one is a shape error.
std::optional<std::int64_t> int_member(const json& j, const char* name) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_number_integer()) {
        return std::nullopt;
    }
    return it->get<std::int64_t>();
}

std::optional<std::string> string_member(const json& j, const char* name) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string()) {
        return std::nullopt;
    }
    return it->get<std::string>();
}

// Composes the client's message for a stored refusal from its structured details, so that
// amounts and odds are formatted by core/money and never by SQL.
std::string refusal_message(const std::string& code, const json& details) {
    // A market's limits compare as minor units of the bet's currency, so they are shown in its
    // decimals. A refusal stored before currencies had their own decimals names none: it was
    // made, and is shown, with two.
    const auto currency = string_member(details, "currency");
    const auto amount = [&](std::int64_t minor) {
        return currency ? money::format_amount(minor, *currency)
                        : money::format_amount(minor, limits::market_amount_digits);
    };
    if (code == "insufficient_funds") {
        if (details.value("account_missing", false)) {
            return "the account does not exist";
        }
        return "the available balance is below the stake";
    }
    if (code == "unknown_selection") {
        if (auto s = int_member(details, "selection_id")) {
            return "selection " + std::to_string(*s) + " does not exist";
        }
        return "the selection does not exist";
    }
    if (code == "market_suspended") {
        auto m = int_member(details, "market_id");
        auto status = string_member(details, "market_status");
        if (m && status) {
            return "market " + std::to_string(*m) + " is " + *status;
        }
        return "the market is not open";
    }
    if (code == "odds_changed") {
        if (auto o = int_member(details, "odds")) {
            return "the odds are now " + money::format_odds(*o);
        }
        return "the odds have changed";
    }
    if (code == "stake_limit") {
        auto lo = int_member(details, "stake_min");
        auto hi = int_member(details, "stake_max");
        if (lo && hi) {
            return "the stake must be between " + amount(*lo) + " and " + amount(*hi);
        }
        return "the stake is outside the market's limits";
    }
    if (code == "liability_limit") {
        return "the market cannot take this bet's liability";
    }
    if (code == "idempotency_key_reused") {
        return "this idempotency key was used with different parameters";
    }
    return code;
}

bool is_refusal_code(const std::string& code) {
    for (std::string_view c : {"insufficient_funds", "unknown_selection", "market_suspended",
                               "odds_changed", "stake_limit", "liability_limit"}) {
        if (code == c) {
            return true;
        }
    }
    return false;
}

checked<place_result> read_stored(const json& stored, bool replayed) {
    place_result r;
    r.replayed = replayed;
    r.stored = true;
    const auto outcome = string_member(stored, "outcome");
    if (!outcome) {
        return invalid("stored response has no outcome");
    }
    if (*outcome == "rejected") {
        auto code = string_member(stored, "code");
        if (!code || !is_refusal_code(*code)) {
            return invalid("stored refusal has no known code");
        }
        r.kind = place_result::status::rejected;
        r.code = *code;
        r.message = refusal_message(*code, stored);
        return r;
    }
    if (*outcome != "placed") {
        return invalid("stored response has an unknown outcome");
    }
    r.kind = place_result::status::placed;
    auto& b = r.bet;
    auto bet_id = int_member(stored, "bet_id");
    auto account_id = int_member(stored, "account_id");
    auto market_id = int_member(stored, "market_id");
    auto selection_id = int_member(stored, "selection_id");
    auto stake = int_member(stored, "stake");
    auto odds = int_member(stored, "odds");
    auto available = int_member(stored, "available");
    auto reserved = int_member(stored, "reserved");
    auto placed_at = string_member(stored, "placed_at");
    auto currency = string_member(stored, "currency");
    if (!bet_id || !account_id || !market_id || !selection_id || !stake || !odds || !available ||
        !reserved || !placed_at || !currency) {
        return invalid("stored bet lacks a field");
    }
    b.bet_id = *bet_id;
    b.account_id = *account_id;
    b.market_id = *market_id;
    b.selection_id = *selection_id;
    b.stake_minor = *stake;
    b.odds_units = *odds;
    b.available_minor = *available;
    b.reserved_minor = *reserved;
    b.placed_at = *placed_at;
    b.currency = *currency;
    return r;
}

}  // namespace

checked<place_result> read_place_outcome(std::string_view outcome, std::string_view response) {
    const json stored = json::parse(response, nullptr, false);
    if (stored.is_discarded() || !stored.is_object()) {
        return invalid("placement response is not a JSON object");
    }
    if (outcome == "key_reused") {
        place_result r;
        r.kind = place_result::status::rejected;
        r.code = "idempotency_key_reused";
        r.message = refusal_message(r.code, stored);
        return r;
    }
    if (outcome == "placed" || outcome == "rejected") {
        return read_stored(stored, false);
    }
    if (outcome == "replayed") {
        return read_stored(stored, true);
    }
    if (outcome == "invalid") {
        // The stake has more decimals than the account's currency (or, in its minor units, is
        // over the bound): refused like a stake that does not parse, and nothing was stored.
        const auto currency = string_member(stored, "currency");
        const auto stake = int_member(stored, "stake");
        if (!currency || !stake) {
            return invalid("invalid placement lacks a field");
        }
        const auto minor = money::thousandths_to_minor(*stake, money::minor_digits(*currency));
        if (minor) {
            return invalid("the placement refused a stake its currency allows");
        }
        place_result r;
        r.kind = place_result::status::invalid;
        r.message = describe_amount_error("stake", minor.error(), *currency);
        return r;
    }
    return invalid("unknown placement outcome");
}

json render_invalid(const json& id, std::string_view message) {
    return json{{"type", "error"}, {"id", id}, {"code", "invalid_request"}, {"message", message}};
}

json render_busy(const json& id, std::string_view message) {
    return json{{"type", "rejected"},
                {"id", id},
                {"code", "busy"},
                {"message", message},
                {"retry_after_ms", errors::busy_retry_after_ms}};
}

json render_place_result(const json& id, const place_result& result) {
    switch (result.kind) {
        case place_result::status::placed: {
            const auto& b = result.bet;
            return json{{"type", "placed"},
                        {"id", id},
                        {"replayed", result.replayed},
                        {"bet",
                         {{"bet_id", b.bet_id},
                          {"account_id", b.account_id},
                          {"market_id", b.market_id},
                          {"selection_id", b.selection_id},
                          {"stake", money::format_amount(b.stake_minor, b.currency)},
                          {"odds", money::format_odds(b.odds_units)},
                          {"placed_at", b.placed_at}}},
                        {"balance",
                         {{"available", money::format_amount(b.available_minor, b.currency)},
                          {"reserved", money::format_amount(b.reserved_minor, b.currency)}}}};
        }
        case place_result::status::rejected: {
            json reply{{"type", "rejected"},
                       {"id", id},
                       {"code", result.code},
                       {"message", result.message}};
            if (result.stored) {
                reply["replayed"] = result.replayed;
            }
            return reply;
        }
        case place_result::status::invalid:
            return render_invalid(id, result.message);
        case place_result::status::busy:
            return render_busy(id, result.message.empty()
                                       ? "the placement could not run now: retry with the same "
                                         "idempotency_key"
                                       : result.message);
        case place_result::status::failed:
            break;
    }
    return json{{"type", "error"}, {"id", id}, {"code", "internal"}, {"message", "internal error"}};
}

json render_balance(const json& id, const balance& b) {
    return json{{"type", "balance"},
                {"id", id},
                {"available", money::format_amount(b.available_minor, b.currency)},
                {"reserved", money::format_amount(b.reserved_minor, b.currency)},
                {"currency", b.currency}};
}

json render_bet_line(const bet_line& line) {
    const auto& b = line.bet;
    json j{{"bet_id", b.bet_id},
           {"account_id", b.account_id},
           {"market_id", b.market_id},
           {"selection_id", b.selection_id},
           {"stake", money::format_amount(b.stake_minor, line.currency)},
           {"odds", money::format_odds(b.odds_units)},
           {"currency", line.currency},
           {"placed_at", b.placed_at},
           {"status", line.settled ? "settled" : "open"}};
    if (line.settled) {
        j["version"] = line.version;
        j["outcome"] = line.outcome;
        j["payout"] = money::format_amount(line.payout_minor, line.currency);
    }
    return j;
}

json render_bets(const json& id, const bets_page& page) {
    json list = json::array();
    for (const auto& line : page.lines) {
        list.push_back(render_bet_line(line));
    }
    json reply{{"type", "bets"}, {"id", id}, {"bets", std::move(list)}};
    reply["next_before"] = page.next_before ? json(*page.next_before) : json(nullptr);
    return reply;
}

void throw_exception_from_error(const request_error& e, const boost::source_location&) {
    throw std::invalid_argument(e.message);
}

}  // namespace fulltime::bets
