#include "fulltime/core/feed_protocol.hpp"

#include "fulltime/core/client_text.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/limits.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <set>
#include <utility>

namespace fulltime::feed {

namespace {

using nlohmann::json;

input_error fail(std::string_view field, std::string_view what) {
    return input_error{std::string(field) + ": " + std::string(what)};
}

// Refuses fields this message type does not define. `type` and `id` belong to every message.
std::optional<input_error> refuse_unknown_fields(const json& message,
                                                 std::initializer_list<std::string_view> known) {
    for (const auto& [key, value] : message.items()) {
        if (key == "type" || key == "id") {
            continue;
        }
        bool found = false;
        for (auto k : known) {
            if (k == key) {
                found = true;
                break;
            }
        }
        if (!found) {
            return input_error{"unknown field " + client_text::quoted(key)};
        }
    }
    return std::nullopt;
}

// Refuses an operator API body that is not an object or has a field not in `known`.
std::optional<input_error> refuse_body(const json& body,
                                       std::initializer_list<std::string_view> known) {
    if (!body.is_object()) {
        return input_error{"body must be a JSON object"};
    }
    return refuse_unknown_fields(body, known);
}

// Reads a required positive integer id. JSON floats ("1.0") and numbers past INT64_MAX are
// refused rather than rounded.
parsed<std::int64_t> positive_id(const json& message, std::string_view field) {
    const auto it = message.find(field);
    if (it == message.end() || it->is_null()) {
        return fail(field, "is required");
    }
    if (it->is_number_unsigned()) {
        const auto v = it->get<std::uint64_t>();
        if (v == 0) {
            return fail(field, "must be a positive integer");
        }
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            return fail(field, "is too large (at most 9223372036854775807)");
        }
        return static_cast<std::int64_t>(v);
    }
    if (it->is_number_integer()) {
        const auto v = it->get<std::int64_t>();
        if (v <= 0) {
            return fail(field, "must be a positive integer");
        }
        return v;
    }
    return fail(field, "must be a positive integer");
}

// Reads a required string of 1..bytes_max bytes that keeps the rules of client text.
parsed<std::string> bounded_string(const json& message, std::string_view field,
                                   std::size_t bytes_max) {
    const auto it = message.find(field);
    if (it == message.end() || it->is_null()) {
        return fail(field, "is required");
    }
    if (!it->is_string()) {
        return fail(field, "must be a string");
    }
    const auto& value = it->get_ref<const std::string&>();
    if (const auto fault = client_text::check(value, bytes_max);
        fault != client_text::fault::none) {
        return fail(field, client_text::describe(fault, bytes_max));
    }
    // In place: input_error is constructible from a string too (C++20 aggregate init).
    return parsed<std::string>{boost::system::in_place_value, value};
}

// Reads a required decimal string with a money or odds parser.
template <class Parser>
parsed<std::int64_t> decimal(const json& message, std::string_view field, Parser parse) {
    const auto it = message.find(field);
    if (it == message.end() || it->is_null()) {
        return fail(field, "is required");
    }
    if (!it->is_string()) {
        // Numbers are refused: a JSON number may already have lost precision in some producer.
        return fail(field, "must be a decimal string such as \"10.00\"");
    }
    const auto value = parse(it->get<std::string>());
    if (!value) {
        return fail(field, money::describe(value.error()));
    }
    return *value;
}

// A market's limits: minor units of whichever currency a bet is in, written with two decimals
// (limits::market_amount_digits).
money::parsed<std::int64_t> market_amount(std::string_view text) {
    return money::parse_positive_amount(text, limits::market_amount_digits);
}

bool has(const json& message, std::string_view field) {
    const auto it = message.find(field);
    return it != message.end() && !it->is_null();
}

parsed<selection_spec> parse_selection(const json& item, std::size_t index) {
    const std::string where = "selections[" + std::to_string(index) + "]";
    if (!item.is_object()) {
        return input_error{where + ": must be an object"};
    }
    if (auto unknown = refuse_unknown_fields(item, {"selection_id", "name", "odds"})) {
        return input_error{where + ": " + unknown->message};
    }
    selection_spec s;
    auto id = positive_id(item, "selection_id");
    if (!id) {
        return input_error{where + "." + id.error().message};
    }
    s.selection_id = *id;
    auto name = bounded_string(item, "name", limits::catalog_name_bytes_max);
    if (!name) {
        return input_error{where + "." + name.error().message};
    }
    s.name = std::move(*name);
    auto odds = decimal(item, "odds", money::parse_odds);
    if (!odds) {
        return input_error{where + "." + odds.error().message};
    }
    s.odds_units = *odds;
    return s;
}

// --- Calendar arithmetic (Howard Hinnant's days_from_civil) -------------------------------------

constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct civil {
    std::int64_t year;
    unsigned month;
    unsigned day;
};

constexpr civil civil_from_days(std::int64_t z) noexcept {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return {y + (m <= 2 ? 1 : 0), m, d};
}

static_assert(days_from_civil(1970, 1, 1) == 0);
static_assert(days_from_civil(2000, 3, 1) == 11017);

constexpr bool is_leap(std::int64_t y) noexcept {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

constexpr unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
    constexpr std::array<unsigned, 12> days = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

// Reads exactly `count` digits at `pos` as an unsigned number.
std::optional<unsigned> digits(std::string_view text, std::size_t pos, std::size_t count) {
    if (pos + count > text.size()) {
        return std::nullopt;
    }
    unsigned v = 0;
    for (std::size_t i = pos; i < pos + count; ++i) {
        const char c = text[i];
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    return v;
}

parsed<std::string> optional_timestamp(const json& message, std::string_view field) {
    const auto& value = message.at(field);
    if (!value.is_string()) {
        return fail(field, "must be an ISO 8601 date-time string such as \"2025-05-01T18:30:00Z\"");
    }
    const auto us = parse_timestamp_us(value.get<std::string>());
    if (!us) {
        return fail(field,
                    "must be an ISO 8601 date-time with a zone, such as \"2025-05-01T18:30:00Z\"");
    }
    return parsed<std::string>{boost::system::in_place_value, format_timestamp_us(*us)};
}

// --- Result events -------------------------------------------------------------------------------

// Decimal places of a factor: factor_units is 10^factor_decimals.
constexpr int factor_decimals = 4;
static_assert(factor_units == 10'000 && limits::odds_decimals == 4,
              "the settlement SQL divides S * v * d * O by 10^12: factors and odds in 1/10^4");

// Reads an optional void or dead-heat factor: a decimal string [0-9]+(.[0-9]{1,4})? from 0 to 1,
// in factor_units. `field` is the full path for messages ("outcomes[0].void_factor"). Written
// here rather than in core/money: a factor is neither money nor odds, and nothing else parses
// one.
parsed<std::int64_t> factor(const json& outcome, std::string_view key, const std::string& field,
                            std::int64_t absent_units) {
    const auto it = outcome.find(key);
    if (it == outcome.end() || it->is_null()) {
        return absent_units;
    }
    constexpr std::string_view example = "\"0.5\"";
    if (!it->is_string()) {
        // Like money and odds: a JSON number may already have lost precision in some producer.
        return fail(field, "must be a decimal string such as " + std::string(example) +
                               ", not a JSON number or other value");
    }
    const auto& text = it->get_ref<const std::string&>();
    if (text.size() > limits::decimal_chars_max) {
        return fail(field,
                    "is longer than " + std::to_string(limits::decimal_chars_max) + " characters");
    }
    std::string_view body = text;
    const bool negative = !body.empty() && body.front() == '-';
    if (negative) {
        body.remove_prefix(1);
    }
    const std::size_t dot = body.find('.');
    const std::string_view whole = body.substr(0, dot);
    const std::string_view frac =
        dot == std::string_view::npos ? std::string_view{} : body.substr(dot + 1);
    const auto all_digits = [](std::string_view part) {
        return std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (whole.empty() || !all_digits(whole) || (dot != std::string_view::npos && frac.empty()) ||
        !all_digits(frac)) {
        return fail(field, "must be a decimal from 0 to 1 such as " + std::string(example));
    }
    if (negative) {
        return fail(field, "must not be negative");
    }
    if (frac.size() > static_cast<std::size_t>(factor_decimals)) {
        return fail(field, "must have at most " + std::to_string(factor_decimals) + " decimals");
    }
    // At most 32 digits: stop as soon as the whole part exceeds 1, before any overflow.
    std::int64_t whole_value = 0;
    for (char c : whole) {
        whole_value = whole_value * 10 + (c - '0');
        if (whole_value > 1) {
            return fail(field, "must not be above 1");
        }
    }
    std::int64_t frac_value = 0;
    for (char c : frac) {
        frac_value = frac_value * 10 + (c - '0');
    }
    for (std::size_t i = frac.size(); i < static_cast<std::size_t>(factor_decimals); ++i) {
        frac_value *= 10;
    }
    const std::int64_t units = whole_value * factor_units + frac_value;
    if (units > factor_units) {
        return fail(field, "must not be above 1");
    }
    return units;
}

parsed<result_outcome> parse_outcome(const json& item, std::size_t index) {
    const std::string where = "outcomes[" + std::to_string(index) + "]";
    if (!item.is_object()) {
        return input_error{where + ": must be an object"};
    }
    if (auto unknown = refuse_unknown_fields(
            item, {"selection_id", "result", "void_factor", "dead_heat_factor"})) {
        return input_error{where + ": " + unknown->message};
    }
    result_outcome o;
    auto id = positive_id(item, "selection_id");
    if (!id) {
        return input_error{where + "." + id.error().message};
    }
    o.selection_id = *id;
    const auto result = item.find("result");
    if (result == item.end() || result->is_null()) {
        return input_error{where + ".result: is required"};
    }
    if (!result->is_string() || (*result != "win" && *result != "lose")) {
        return input_error{where + ".result: must be \"win\" or \"lose\""};
    }
    o.win = *result == "win";
    auto void_units = factor(item, "void_factor", where + ".void_factor", 0);
    if (!void_units) {
        return void_units.error();
    }
    o.void_factor_units = *void_units;
    auto dead_heat_units =
        factor(item, "dead_heat_factor", where + ".dead_heat_factor", factor_units);
    if (!dead_heat_units) {
        return dead_heat_units.error();
    }
    if (*dead_heat_units == 0) {
        return input_error{where + ".dead_heat_factor: must be above 0"};
    }
    if (!o.win && *dead_heat_units != factor_units) {
        // A dead heat shares a win; on a losing selection it would mean nothing, and a producer
        // sending one has probably swapped "win" and "lose".
        return input_error{where +
                           ".dead_heat_factor: must be 1 (or absent) when the result is \"lose\""};
    }
    o.dead_heat_factor_units = *dead_heat_units;
    return o;
}

// Finds a required array of 1..entries_max entries.
parsed<const json*> required_array(const json& message, std::string_view field,
                                   std::size_t entries_max) {
    const auto it = message.find(field);
    if (it == message.end() || it->is_null()) {
        return fail(field, "is required");
    }
    if (!it->is_array()) {
        return fail(field, "must be an array");
    }
    if (it->empty()) {
        return fail(field, "must not be empty");
    }
    if (it->size() > entries_max) {
        return fail(field, "has more than " + std::to_string(entries_max) + " entries");
    }
    return &*it;
}

// Reads the result's outcomes: 1..outcomes_per_result_max, distinct selection ids, returned
// sorted by selection_id so that a resend listing them in another order is the same event.
parsed<std::vector<result_outcome>> parse_outcomes(const json& message) {
    const auto found = required_array(message, "outcomes", outcomes_per_result_max);
    if (!found) {
        return found.error();
    }
    const json* outcomes = *found;
    std::vector<result_outcome> out;
    out.reserve(outcomes->size());
    std::set<std::int64_t> seen;
    for (std::size_t i = 0; i < outcomes->size(); ++i) {
        auto o = parse_outcome((*outcomes)[i], i);
        if (!o) {
            return o.error();
        }
        if (!seen.insert(o->selection_id).second) {
            return input_error{"outcomes[" + std::to_string(i) + "].selection_id: " +
                               std::to_string(o->selection_id) + " appears twice"};
        }
        out.push_back(*o);
    }
    std::sort(out.begin(), out.end(), [](const result_outcome& a, const result_outcome& b) {
        return a.selection_id < b.selection_id;
    });
    return out;
}

parsed<std::int64_t> sequence_number(const json& message, const char* name = "seq") {
    const auto it = message.find(name);
    if (it == message.end() || it->is_null()) {
        return fail(name, "is required");
    }
    const std::string what = "must be an integer from 1 to " + std::to_string(seq_max);
    if (it->is_number_unsigned()) {
        const auto v = it->get<std::uint64_t>();
        if (v < 1 || v > static_cast<std::uint64_t>(seq_max)) {
            return fail(name, what);
        }
        return static_cast<std::int64_t>(v);
    }
    if (it->is_number_integer()) {
        const auto v = it->get<std::int64_t>();
        if (v < 1 || v > seq_max) {
            return fail(name, what);
        }
        return v;
    }
    return fail(name, what);
}

// Reads a market's optional status.
parsed<std::optional<market_status>> parse_market_status(const json& message) {
    if (!has(message, "status")) {
        return std::optional<market_status>{};
    }
    const auto& status = message.at("status");
    if (!status.is_string() || !status_from_string(status.get<std::string>())) {
        return fail("status", "must be \"open\", \"suspended\" or \"closed\"");
    }
    return status_from_string(status.get<std::string>());
}

// Reads a market's selections: 1..selections_per_message_max, distinct selection ids, in the
// message's order.
parsed<std::vector<selection_spec>> parse_selections(const json& message) {
    const auto found = required_array(message, "selections", selections_per_message_max);
    if (!found) {
        return found.error();
    }
    const json* selections = *found;
    std::vector<selection_spec> out;
    std::set<std::int64_t> seen;
    for (std::size_t i = 0; i < selections->size(); ++i) {
        auto s = parse_selection((*selections)[i], i);
        if (!s) {
            return s.error();
        }
        if (!seen.insert(s->selection_id).second) {
            return input_error{"selections[" + std::to_string(i) + "].selection_id: " +
                               std::to_string(s->selection_id) + " appears twice"};
        }
        out.push_back(std::move(*s));
    }
    return out;
}

// Reads an optional market amount (minor units); nullopt when absent.
parsed<std::optional<std::int64_t>> optional_market_amount(const json& message,
                                                           std::string_view field) {
    if (!has(message, field)) {
        return std::optional<std::int64_t>{};
    }
    auto v = decimal(message, field, market_amount);
    if (!v) {
        return v.error();
    }
    return std::optional<std::int64_t>{*v};
}

/// Holds a market message's optional limits.
struct market_limits {
    std::optional<std::int64_t> stake_min_minor;
    std::optional<std::int64_t> stake_max_minor;
    std::optional<std::int64_t> liability_limit_minor;
    std::optional<int> exposure_shards;
};

// Reads a market's optional limits and checks those given against one another (a message that
// leaves one out is checked against the stored or default value when applied).
parsed<market_limits> parse_limits(const json& message) {
    market_limits l;
    auto stake_min = optional_market_amount(message, "stake_min");
    if (!stake_min) {
        return stake_min.error();
    }
    l.stake_min_minor = *stake_min;
    auto stake_max = optional_market_amount(message, "stake_max");
    if (!stake_max) {
        return stake_max.error();
    }
    l.stake_max_minor = *stake_max;
    if (l.stake_min_minor && l.stake_max_minor && *l.stake_min_minor > *l.stake_max_minor) {
        return fail("stake_max", "must not be below stake_min");
    }
    auto liability_limit = optional_market_amount(message, "liability_limit");
    if (!liability_limit) {
        return liability_limit.error();
    }
    l.liability_limit_minor = *liability_limit;
    if (has(message, "exposure_shards")) {
        const auto& shards = message.at("exposure_shards");
        if (!shards.is_number_integer() || shards.get<std::int64_t>() < 1 ||
            shards.get<std::int64_t>() > exposure_shards_max) {
            return fail("exposure_shards",
                        "must be an integer from 1 to " + std::to_string(exposure_shards_max));
        }
        l.exposure_shards = static_cast<int>(shards.get<std::int64_t>());
    }
    if (l.liability_limit_minor && l.exposure_shards &&
        *l.liability_limit_minor < *l.exposure_shards) {
        // Every shard needs a limit of at least one minor unit (the schema's CHECK).
        return fail("liability_limit", "must be at least exposure_shards minor units");
    }
    return l;
}

}  // namespace

std::string_view to_string(market_status s) noexcept {
    switch (s) {
        case market_status::open:
            return "open";
        case market_status::suspended:
            return "suspended";
        case market_status::closed:
            return "closed";
    }
    return "unknown";
}

std::optional<market_status> status_from_string(std::string_view text) noexcept {
    if (text == "open") {
        return market_status::open;
    }
    if (text == "suspended") {
        return market_status::suspended;
    }
    if (text == "closed") {
        return market_status::closed;
    }
    return std::nullopt;
}

parsed<market_message> parse_market(const json& message) {
    if (!message.is_object()) {
        return input_error{"message must be a JSON object"};
    }
    if (auto unknown = refuse_unknown_fields(
            message,
            {"market_id", "event_id", "event_name", "name", "status", "selections", "stake_min",
             "stake_max", "liability_limit", "exposure_shards", "settle_deadline_at"})) {
        return *unknown;
    }
    market_message m;
    auto market_id = positive_id(message, "market_id");
    if (!market_id) {
        return market_id.error();
    }
    m.market_id = *market_id;
    auto event_id = positive_id(message, "event_id");
    if (!event_id) {
        return event_id.error();
    }
    m.event_id = *event_id;
    if (has(message, "event_name")) {
        auto event_name = bounded_string(message, "event_name", limits::catalog_name_bytes_max);
        if (!event_name) {
            return event_name.error();
        }
        m.event_name = std::move(*event_name);
    }
    auto name = bounded_string(message, "name", limits::catalog_name_bytes_max);
    if (!name) {
        return name.error();
    }
    m.name = std::move(*name);

    auto status = parse_market_status(message);
    if (!status) {
        return status.error();
    }
    m.status = *status;
    auto selections = parse_selections(message);
    if (!selections) {
        return selections.error();
    }
    m.selections = std::move(*selections);
    auto bounds = parse_limits(message);
    if (!bounds) {
        return bounds.error();
    }
    m.stake_min_minor = bounds->stake_min_minor;
    m.stake_max_minor = bounds->stake_max_minor;
    m.liability_limit_minor = bounds->liability_limit_minor;
    m.exposure_shards = bounds->exposure_shards;
    if (has(message, "settle_deadline_at")) {
        auto v = optional_timestamp(message, "settle_deadline_at");
        if (!v) {
            return v.error();
        }
        m.settle_deadline_at = std::move(*v);
    }
    return m;
}

parsed<odds_message> parse_odds(const json& message) {
    if (!message.is_object()) {
        return input_error{"message must be a JSON object"};
    }
    if (auto unknown = refuse_unknown_fields(message, {"market_id", "selection_id", "odds"})) {
        return *unknown;
    }
    odds_message o;
    auto market_id = positive_id(message, "market_id");
    if (!market_id) {
        return market_id.error();
    }
    o.market_id = *market_id;
    auto selection_id = positive_id(message, "selection_id");
    if (!selection_id) {
        return selection_id.error();
    }
    o.selection_id = *selection_id;
    auto odds = decimal(message, "odds", money::parse_odds);
    if (!odds) {
        return odds.error();
    }
    o.odds_units = *odds;
    return o;
}

parsed<status_message> parse_status(const json& message) {
    if (!message.is_object()) {
        return input_error{"message must be a JSON object"};
    }
    const auto type = message.find("type");
    if (type == message.end() || !type->is_string() || (*type != "suspend" && *type != "resume")) {
        return fail("type", "must be \"suspend\" or \"resume\"");
    }
    if (auto unknown = refuse_unknown_fields(message, {"market_id"})) {
        return *unknown;
    }
    status_message s;
    auto market_id = positive_id(message, "market_id");
    if (!market_id) {
        return market_id.error();
    }
    s.market_id = *market_id;
    s.target = *type == "suspend" ? market_status::suspended : market_status::open;
    return s;
}

std::string_view to_string(result_event_kind k) noexcept {
    switch (k) {
        case result_event_kind::result:
            return "result";
        case result_event_kind::rollback_result:
            return "rollback_result";
        case result_event_kind::cancel:
            return "cancel";
        case result_event_kind::rollback_cancel:
            return "rollback_cancel";
    }
    return "unknown";
}

std::optional<result_event_kind> result_event_kind_from_string(std::string_view text) noexcept {
    for (auto k : {result_event_kind::result, result_event_kind::rollback_result,
                   result_event_kind::cancel, result_event_kind::rollback_cancel}) {
        if (to_string(k) == text) {
            return k;
        }
    }
    return std::nullopt;
}

parsed<result_event_message> parse_result_event(const json& message) {
    if (!message.is_object()) {
        return input_error{"message must be a JSON object"};
    }
    const auto type = message.find("type");
    const auto kind = type != message.end() && type->is_string()
                          ? result_event_kind_from_string(type->get_ref<const std::string&>())
                          : std::nullopt;
    if (!kind) {
        return fail("type",
                    "must be \"result\", \"rollback_result\", \"cancel\" or "
                    "\"rollback_cancel\"");
    }
    const bool is_cancel =
        *kind == result_event_kind::cancel || *kind == result_event_kind::rollback_cancel;
    std::optional<input_error> unknown;
    if (*kind == result_event_kind::result) {
        unknown = refuse_unknown_fields(message, {"market_id", "seq", "event_key", "outcomes"});
    } else if (is_cancel) {
        unknown = refuse_unknown_fields(
            message, {"market_id", "seq", "event_key", "start_time", "end_time"});
    } else {
        unknown = refuse_unknown_fields(message, {"market_id", "seq", "event_key"});
    }
    if (unknown) {
        return *unknown;
    }

    result_event_message m;
    m.kind = *kind;
    auto market_id = positive_id(message, "market_id");
    if (!market_id) {
        return market_id.error();
    }
    m.market_id = *market_id;
    auto seq = sequence_number(message);
    if (!seq) {
        return seq.error();
    }
    m.seq = *seq;
    auto event_key = bounded_string(message, "event_key", limits::event_key_bytes_max);
    if (!event_key) {
        return event_key.error();
    }
    m.event_key = std::move(*event_key);

    if (*kind == result_event_kind::result) {
        auto outcomes = parse_outcomes(message);
        if (!outcomes) {
            return outcomes.error();
        }
        m.outcomes = std::move(*outcomes);
    } else if (is_cancel) {
        for (auto [field, target] :
             {std::pair{"start_time", &m.start_time}, std::pair{"end_time", &m.end_time}}) {
            if (has(message, field)) {
                auto v = optional_timestamp(message, field);
                if (!v) {
                    return v.error();
                }
                *target = std::move(*v);
            }
        }
        // Both parsed above, so the instants are there; compared as instants, not as text.
        if (m.start_time && m.end_time &&
            parse_timestamp_us(message.at("start_time").get_ref<const std::string&>()) >=
                parse_timestamp_us(message.at("end_time").get_ref<const std::string&>())) {
            return fail("end_time", "must be after start_time");
        }
    }
    m.payload_json = result_event_payload(m);
    return m;
}

std::string result_event_payload(const result_event_message& m) {
    // nlohmann::json keeps object keys sorted, so the text depends on the values only.
    json payload = json::object();
    switch (m.kind) {
        case result_event_kind::result: {
            json outcomes = json::array();
            for (const auto& o : m.outcomes) {
                outcomes.push_back({{"selection_id", o.selection_id},
                                    {"win", o.win},
                                    {"void_factor", o.void_factor_units},
                                    {"dead_heat_factor", o.dead_heat_factor_units}});
            }
            payload["outcomes"] = std::move(outcomes);
            break;
        }
        case result_event_kind::cancel:
        case result_event_kind::rollback_cancel:
            if (m.start_time) {
                payload["start_time"] = *m.start_time;
            }
            if (m.end_time) {
                payload["end_time"] = *m.end_time;
            }
            break;
        case result_event_kind::rollback_result:
            break;
    }
    return payload.dump();
}

parsed<account_request> parse_account_request(const json& body) {
    if (auto refused = refuse_body(body, {"account_id", "currency"})) {
        return *refused;
    }
    account_request r;
    auto id = positive_id(body, "account_id");
    if (!id) {
        return id.error();
    }
    r.account_id = *id;
    auto currency = bounded_string(body, "currency", 3);
    if (!currency) {
        return currency.error();
    }
    if (currency->size() != 3 || !std::all_of(currency->begin(), currency->end(),
                                              [](char c) { return c >= 'A' && c <= 'Z'; })) {
        return fail("currency", "must be three upper-case letters such as \"EUR\"");
    }
    if (!money::supported_currency(*currency)) {
        return fail("currency", "has " + std::to_string(money::minor_digits(*currency)) +
                                    " decimal places in ISO 4217; the engine holds at most " +
                                    std::to_string(limits::minor_digits_max));
    }
    r.currency = std::move(*currency);
    return r;
}

parsed<transfer_request> parse_transfer_request(const json& body) {
    if (auto refused = refuse_body(body, {"amount", "key"})) {
        return *refused;
    }
    transfer_request r;
    auto amount = decimal(body, "amount", money::parse_positive_thousandths);
    if (!amount) {
        return amount.error();
    }
    r.amount_thousandths = *amount;
    auto key = bounded_string(body, "key", limits::idempotency_key_bytes_max);
    if (!key) {
        return key.error();
    }
    r.key = std::move(*key);
    return r;
}

parsed<void_request> parse_void_request(const json& body) {
    if (auto refused = refuse_body(body, {"key", "force"})) {
        return *refused;
    }
    void_request r;
    if (has(body, "key")) {
        auto key = bounded_string(body, "key", limits::event_key_bytes_max);
        if (!key) {
            return key.error();
        }
        r.key = std::move(*key);
    }
    if (has(body, "force")) {
        const auto& force = body.at("force");
        if (!force.is_boolean()) {
            return fail("force", "must be true or false");
        }
        r.force = force.get<bool>();
    }
    return r;
}

parsed<close_gap_request> parse_close_gap_request(const json& body) {
    if (auto refused = refuse_body(body, {"key", "from", "through"})) {
        return *refused;
    }
    close_gap_request r;
    if (has(body, "key")) {
        auto key = bounded_string(body, "key", limits::event_key_bytes_max);
        if (!key) {
            return key.error();
        }
        r.key = std::move(*key);
    }
    auto from = sequence_number(body, "from");
    if (!from) {
        return from.error();
    }
    auto through = sequence_number(body, "through");
    if (!through) {
        return through.error();
    }
    if (*through < *from) {
        return fail("through", "must be at least \"from\"");
    }
    r.from = *from;
    r.through = *through;
    return r;
}

std::optional<std::int64_t> parse_path_id(std::string_view text) noexcept {
    constexpr std::size_t digits_max = 19;  // INT64_MAX has 19 digits
    if (text.empty() || text.size() > digits_max || text.front() == '0') {
        return std::nullopt;
    }
    std::uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
    }
    return static_cast<std::int64_t>(v);
}

std::optional<std::int64_t> parse_timestamp_us(std::string_view text) noexcept {
    // YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|+HH:MM|-HH:MM); 't' and 'z' as RFC 3339 allows.
    constexpr std::size_t chars_max = 40;
    if (text.size() < 20 || text.size() > chars_max) {
        return std::nullopt;
    }
    const auto year = digits(text, 0, 4);
    const auto month = digits(text, 5, 2);
    const auto day = digits(text, 8, 2);
    const auto hour = digits(text, 11, 2);
    const auto minute = digits(text, 14, 2);
    const auto second = digits(text, 17, 2);
    if (!year || !month || !day || !hour || !minute || !second || text[4] != '-' ||
        text[7] != '-' || (text[10] != 'T' && text[10] != 't') || text[13] != ':' ||
        text[16] != ':') {
        return std::nullopt;
    }
    if (*year < 1970 || *month < 1 || *month > 12 || *day < 1 ||
        *day > days_in_month(*year, *month) || *hour > 23 || *minute > 59 || *second > 59) {
        return std::nullopt;
    }
    std::size_t pos = 19;
    std::int64_t fraction_us = 0;
    if (pos < text.size() && text[pos] == '.') {
        ++pos;
        std::size_t count = 0;
        std::int64_t scale = 100'000;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
            if (++count > 6) {
                return std::nullopt;  // finer than microseconds would be silently truncated
            }
            fraction_us += (text[pos] - '0') * scale;
            scale /= 10;
            ++pos;
        }
        if (count == 0) {
            return std::nullopt;
        }
    }
    std::int64_t offset_s = 0;
    if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
        ++pos;
    } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
        const bool west = text[pos] == '-';
        const auto oh = digits(text, pos + 1, 2);
        const auto om = digits(text, pos + 4, 2);
        if (!oh || !om || pos + 3 >= text.size() || text[pos + 3] != ':' || *oh > 23 || *om > 59) {
            return std::nullopt;
        }
        offset_s = (static_cast<std::int64_t>(*oh) * 3600 + static_cast<std::int64_t>(*om) * 60) *
                   (west ? -1 : 1);
        pos += 6;
    } else {
        return std::nullopt;  // a time without a zone is ambiguous
    }
    if (pos != text.size()) {
        return std::nullopt;
    }
    const std::int64_t days = days_from_civil(*year, *month, *day);
    const std::int64_t local_s = days * 86'400 + static_cast<std::int64_t>(*hour) * 3600 +
                                 static_cast<std::int64_t>(*minute) * 60 + *second;
    const std::int64_t utc_s = local_s - offset_s;
    if (utc_s < 0) {
        return std::nullopt;
    }
    return utc_s * 1'000'000 + fraction_us;
}

std::string format_timestamp_us(std::int64_t us) {
    const std::int64_t s = us / 1'000'000;
    const std::int64_t fraction = us % 1'000'000;
    const std::int64_t days = s / 86'400;
    const std::int64_t in_day = s % 86'400;
    const civil c = civil_from_days(days);
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
                  static_cast<long long>(c.year), c.month, c.day,
                  static_cast<long long>(in_day / 3600), static_cast<long long>(in_day / 60 % 60),
                  static_cast<long long>(in_day % 60), static_cast<long long>(fraction));
    return buf.data();
}

}  // namespace fulltime::feed
