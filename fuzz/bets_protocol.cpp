/// Fuzzes the bet client's message parsers (place, balance, bets) on strictly parsed JSON, as
/// the WebSocket session feeds them.
///
/// Invariants: an accepted request carries the token's account and values inside the bounds
/// docs/protocol.md states.

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/core/money.hpp"
#include "fulltime/core/strict_json.hpp"
#include "fulltime/limits.hpp"

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

namespace bets = fulltime::bets;
namespace limits = fulltime::limits;
namespace money = fulltime::money;

constexpr std::int64_t token_account_id = 42;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto document = fulltime::parse_strict_json(text, "message");
    if (!document) {
        return 0;
    }
    const nlohmann::json& message = *document;

    if (const auto place = bets::parse_place(message, token_account_id)) {
        FUZZ_CHECK(place->account_id == token_account_id);
        FUZZ_CHECK(!place->idempotency_key.empty());
        FUZZ_CHECK(place->idempotency_key.size() <= limits::idempotency_key_bytes_max);
        FUZZ_CHECK(place->selection_id > 0);
        FUZZ_CHECK(place->stake_thousandths > 0);
        FUZZ_CHECK(place->stake_thousandths <= limits::amount_thousandths_max);
        FUZZ_CHECK(place->odds_units >= money::odds_min && place->odds_units <= money::odds_max);
        (void)bets::to_string(place->accept);
        FUZZ_CHECK(!bets::fingerprint(*place).empty());
    } else {
        FUZZ_CHECK(!place.error().message.empty());
    }

    if (const auto balance = bets::parse_balance(message, token_account_id)) {
        FUZZ_CHECK(balance->account_id == token_account_id);
    } else {
        FUZZ_CHECK(!balance.error().message.empty());
    }

    if (const auto list = bets::parse_bets(message, token_account_id)) {
        FUZZ_CHECK(list->account_id == token_account_id);
        FUZZ_CHECK(list->limit >= 1 && list->limit <= bets::bets_limit_max);
        FUZZ_CHECK(!list->before || *list->before > 0);
        (void)bets::to_string(list->status);
    } else {
        FUZZ_CHECK(!list.error().message.empty());
    }
    return 0;
}
