/// Fuzzes the feed producer's messages (market, odds, status, result events), the operator's
/// bodies (account, transfer, void, close-gap) on strictly parsed JSON, and the path and time
/// parsers on the raw text.
///
/// Invariants: accepted values keep the bounds feed_protocol.hpp states; a normalised time
/// parses back to the same instant; format_timestamp_us(parse_timestamp_us(x)) parses back to
/// the same value; a result event's normalised payload is JSON.

#include "fulltime/core/feed_protocol.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/core/strict_json.hpp"
#include "fulltime/limits.hpp"

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace {

namespace feed = fulltime::feed;
namespace limits = fulltime::limits;
namespace money = fulltime::money;

/// Checks that a time the parser normalised reads back as a timestamp.
void check_normalised_time(const std::optional<std::string>& text) {
    if (text) {
        FUZZ_CHECK(feed::parse_timestamp_us(*text).has_value());
    }
}

void check_message(const nlohmann::json& message) {
    if (const auto m = feed::parse_market(message)) {
        FUZZ_CHECK(m->market_id > 0);
        FUZZ_CHECK(!m->selections.empty());
        FUZZ_CHECK(m->selections.size() <= feed::selections_per_message_max);
        std::set<std::int64_t> ids;
        for (const auto& s : m->selections) {
            FUZZ_CHECK(s.odds_units >= money::odds_min && s.odds_units <= money::odds_max);
            FUZZ_CHECK(ids.insert(s.selection_id).second);
        }
        FUZZ_CHECK(!m->exposure_shards ||
                   (*m->exposure_shards >= 1 && *m->exposure_shards <= feed::exposure_shards_max));
        check_normalised_time(m->settle_deadline_at);
    }
    if (const auto o = feed::parse_odds(message)) {
        FUZZ_CHECK(o->odds_units >= money::odds_min && o->odds_units <= money::odds_max);
    }
    if (const auto s = feed::parse_status(message)) {
        (void)feed::to_string(s->target);
    }
    if (const auto r = feed::parse_result_event(message)) {
        FUZZ_CHECK(r->seq >= 1 && r->seq <= feed::seq_max);
        FUZZ_CHECK(!r->event_key.empty() && r->event_key.size() <= limits::event_key_bytes_max);
        FUZZ_CHECK(r->outcomes.size() <= feed::outcomes_per_result_max);
        for (std::size_t i = 0; i < r->outcomes.size(); ++i) {
            const auto& o = r->outcomes[i];
            FUZZ_CHECK(i == 0 || r->outcomes[i - 1].selection_id < o.selection_id);
            FUZZ_CHECK(o.void_factor_units >= 0 && o.void_factor_units <= feed::factor_units);
            FUZZ_CHECK(o.dead_heat_factor_units >= 1 &&
                       o.dead_heat_factor_units <= feed::factor_units);
        }
        check_normalised_time(r->start_time);
        check_normalised_time(r->end_time);
        FUZZ_CHECK(!nlohmann::json::parse(r->payload_json, nullptr, false).is_discarded());
        FUZZ_CHECK(feed::result_event_payload(*r) == r->payload_json);
    }
    if (const auto a = feed::parse_account_request(message)) {
        FUZZ_CHECK(a->account_id > 0);
        FUZZ_CHECK(money::supported_currency(a->currency));
    }
    if (const auto t = feed::parse_transfer_request(message)) {
        FUZZ_CHECK(t->amount_thousandths > 0 &&
                   t->amount_thousandths <= limits::amount_thousandths_max);
        FUZZ_CHECK(!t->key.empty() && t->key.size() <= limits::idempotency_key_bytes_max);
    }
    if (const auto v = feed::parse_void_request(message)) {
        FUZZ_CHECK(!v->key || (!v->key->empty() && v->key->size() <= limits::event_key_bytes_max));
    }
    if (const auto g = feed::parse_close_gap_request(message)) {
        FUZZ_CHECK(g->from >= 1 && g->from <= g->through && g->through <= feed::seq_max);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    if (const auto id = feed::parse_path_id(text)) {
        FUZZ_CHECK(*id > 0);
        FUZZ_CHECK(feed::parse_path_id(std::to_string(*id)) == id);
    }
    if (const auto us = feed::parse_timestamp_us(text)) {
        const std::string formatted = feed::format_timestamp_us(*us);
        FUZZ_CHECK(feed::parse_timestamp_us(formatted) == us);
    }

    const auto document = fulltime::parse_strict_json(text, "message");
    if (document) {
        check_message(*document);
    }
    return 0;
}
