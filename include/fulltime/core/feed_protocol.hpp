#pragma once
/// Parsing and validation of the messages of the result feed (docs/protocol-feed.md): the catalog
/// messages (`market`, `odds`, `suspend`, `resume`) and the result events (`result`,
/// `rollback_result`, `cancel`, `rollback_cancel`), and of the operator API's bodies (create
/// account, deposit, withdrawal). Pure functions: no database, no sockets, so every rule is
/// unit-tested on its own.
///
/// Every refusal carries one English sentence naming the field and what is wrong with it, fit
/// for a client; the wire code is always `invalid_request`. Every text field keeps the rules of
/// client text (client_text::check: its length, UTF-8, no NUL) before it can reach SQL.

#include <boost/system/result.hpp>
#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulltime::feed {

/// Most selections one market message may carry.
inline constexpr std::size_t selections_per_message_max = 256;
/// Most exposure shard rows per market (the schema's CHECK and config's bound).
inline constexpr int exposure_shards_max = 64;

/// Describes why an input was refused.
struct input_error {
    std::string message;  ///< one sentence, e.g. "odds: must be at least 1.01"
};

/// Holds a parsed value or the reason it was refused.
template <class T>
using parsed = boost::system::result<T, input_error>;

/// Names a market's trading state. `closed` is terminal.
enum class market_status { open = 1, suspended, closed };

/// Returns "open", "suspended" or "closed".
std::string_view to_string(market_status s) noexcept;

/// Returns the status named by `text`, or nullopt.
std::optional<market_status> status_from_string(std::string_view text) noexcept;

/// Holds one selection of a market message.
struct selection_spec {
    std::int64_t selection_id = 0;
    std::string name;
    std::int64_t odds_units = 0;  ///< 1/10000 units (money::parse_odds)
};

/// Holds a validated `market` message. Optional fields left empty keep the stored value of an
/// existing market, or take the configured default (config `markets.*`) for a new one.
struct market_message {
    std::int64_t market_id = 0;
    std::int64_t event_id = 0;
    std::optional<std::string> event_name;
    std::string name;
    std::optional<market_status> status;
    std::vector<selection_spec> selections;  ///< 1..selections_per_message_max, distinct ids
    std::optional<std::int64_t> stake_min_minor;
    std::optional<std::int64_t> stake_max_minor;
    std::optional<std::int64_t> liability_limit_minor;
    std::optional<int> exposure_shards;
    /// Normalised to UTC as "YYYY-MM-DDTHH:MM:SS.ffffffZ", which PostgreSQL parses exactly.
    std::optional<std::string> settle_deadline_at;
};

/// Holds a validated `odds` message.
struct odds_message {
    std::int64_t market_id = 0;
    std::int64_t selection_id = 0;
    std::int64_t odds_units = 0;
};

/// Holds a validated `suspend` or `resume` message.
struct status_message {
    std::int64_t market_id = 0;
    market_status target = market_status::suspended;  ///< suspended (suspend) or open (resume)
};

/// Validates a `market` message (the whole JSON object, `type` and `id` included). Refuses
/// unknown fields so that a misspelt limit never silently falls back to a default.
parsed<market_message> parse_market(const nlohmann::json& message);

/// Validates an `odds` message.
parsed<odds_message> parse_odds(const nlohmann::json& message);

/// Validates a `suspend` or `resume` message; the target status follows its `type`.
parsed<status_message> parse_status(const nlohmann::json& message);

/// Most outcomes one `result` message may carry.
inline constexpr std::size_t outcomes_per_result_max = 256;
/// Largest `seq` a producer may send (result_events.seq is a PostgreSQL bigint): one below
/// bigint's largest, so that the operator's void of the market still has a seq after it.
inline constexpr std::int64_t seq_max = 9'223'372'036'854'775'806;
/// Units of one whole void or dead-heat factor: "0.5" is 5000, "1" is 10000. The settlement SQL
/// reads factors in these units.
inline constexpr std::int64_t factor_units = 10'000;

/// Names the kind of a result event; the wire `type` and result_events.kind use the same words.
enum class result_event_kind { result = 1, rollback_result, cancel, rollback_cancel };

/// Returns "result", "rollback_result", "cancel" or "rollback_cancel".
std::string_view to_string(result_event_kind k) noexcept;

/// Returns the kind named by `text` (a message `type`), or nullopt.
std::optional<result_event_kind> result_event_kind_from_string(std::string_view text) noexcept;

/// Holds one selection's outcome of a `result` message.
struct result_outcome {
    std::int64_t selection_id = 0;
    bool win = false;                                    ///< "result":"win" (else "lose")
    std::int64_t void_factor_units = 0;                  ///< 0..factor_units; default 0
    std::int64_t dead_heat_factor_units = factor_units;  ///< 1..factor_units; default 1
};

/// Holds a validated result event. `payload_json` is what result_events.payload stores and
/// what duplicates are compared on, so it is a deterministic function of the other fields.
struct result_event_message {
    std::int64_t market_id = 0;
    std::int64_t seq = 0;   ///< 1..seq_max
    std::string event_key;  ///< 1..limits::event_key_bytes_max bytes (client_text::check)
    result_event_kind kind = result_event_kind::result;
    /// `result` only: 1..outcomes_per_result_max, distinct ids, sorted by selection_id.
    std::vector<result_outcome> outcomes;
    /// `cancel` and `rollback_cancel` only, each optional: the window [start_time, end_time) of
    /// placement times, normalised like market_message::settle_deadline_at.
    std::optional<std::string> start_time;
    std::optional<std::string> end_time;
    /// The normalised payload (result_event_payload of the fields above).
    std::string payload_json;
};

/// Validates a `result`, `rollback_result`, `cancel` or `rollback_cancel` message (the whole
/// JSON object, `type` and `id` included); the kind follows its `type`. Refuses unknown fields.
/// Sorts a result's outcomes by selection_id and fills payload_json.
parsed<result_event_message> parse_result_event(const nlohmann::json& message);

/// Returns the normalised payload of `m` as compact JSON: for a result
/// `{"outcomes":[{"dead_heat_factor":10000,"selection_id":1001,"void_factor":0,"win":true},...]}`
/// with every key always present and the outcomes in the order of `m.outcomes`; for a cancel or
/// rollback_cancel `{}`, or `{"end_time":..,"start_time":..}` with the bounds given; for a
/// rollback_result `{}`. Keys are in sorted order, so equal messages give equal bytes.
std::string result_event_payload(const result_event_message& m);

/// Holds a validated `POST /v1/accounts` body.
struct account_request {
    std::int64_t account_id = 0;
    std::string currency;  ///< three upper-case ASCII letters, money::supported_currency
};

/// Holds a validated deposit or withdrawal body. The amount is in thousandths until the route
/// has read the account's currency (money::thousandths_to_minor).
struct transfer_request {
    std::int64_t amount_thousandths = 0;  ///< > 0, at most limits::amount_thousandths_max
    std::string key;                      ///< 1..limits::idempotency_key_bytes_max bytes
};

/// Holds a validated `POST /v1/markets/{id}/void-overdue` body.
struct void_request {
    /// The event key, 1..limits::event_key_bytes_max bytes; none: the engine's default key.
    std::optional<std::string> key;
    bool force = false;  ///< void even before the reservation deadline
};

/// Holds a validated `POST /v1/markets/{id}/close-gap` body: the seqs the operator declares
/// will never come.
struct close_gap_request {
    /// The event key, 1..limits::event_key_bytes_max bytes; none: the engine's default key.
    std::optional<std::string> key;
    std::int64_t from = 0;     ///< the hole's first seq, 1..seq_max
    std::int64_t through = 0;  ///< its last, from..seq_max
};

/// Validates a `POST /v1/accounts` body `{"account_id":42,"currency":"EUR"}`; a currency with
/// more decimals than the engine holds (CLF, UYW) is refused.
parsed<account_request> parse_account_request(const nlohmann::json& body);

/// Validates a deposit or withdrawal body `{"amount":"100.00","key":"k1"}`.
parsed<transfer_request> parse_transfer_request(const nlohmann::json& body);

/// Validates a void-overdue body `{"key":"v1","force":true}`; both fields are optional.
parsed<void_request> parse_void_request(const nlohmann::json& body);

/// Validates a close-gap body `{"from":1,"through":4,"key":"g1"}`; `key` is optional.
parsed<close_gap_request> parse_close_gap_request(const nlohmann::json& body);

/// Parses a positive decimal id as it appears in a path ("42"); refuses signs, leading zeros,
/// anything but digits, and values over INT64_MAX.
std::optional<std::int64_t> parse_path_id(std::string_view text) noexcept;

/// Parses an ISO 8601 / RFC 3339 date-time with a zone ("2025-05-01T18:30:00Z",
/// "2025-05-01T20:30:00.5+02:00") into microseconds since the Unix epoch, checking the calendar
/// (no 30 February). Years 1970..9999.
std::optional<std::int64_t> parse_timestamp_us(std::string_view text) noexcept;

/// Formats microseconds since the epoch as "YYYY-MM-DDTHH:MM:SS.ffffffZ".
std::string format_timestamp_us(std::int64_t us);

}  // namespace fulltime::feed
