#pragma once
/// Parsing and validation of the catalog messages of the result feed (`market`, `odds`,
/// `suspend`, `resume`; DESIGN.md "Result-feed producers") and of the operator API's bodies
/// (create account, deposit, withdrawal). Pure functions: no database, no sockets, so every rule
/// is unit-tested on its own. Result events (`result`, `cancel`, their rollbacks) come later and
/// get their own message structs next to these.
///
/// Every refusal carries one English sentence naming the field and what is wrong with it, fit
/// for a client; the wire code is always `invalid_request`.

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
/// Longest event, market or selection name, in bytes (the schema's CHECK).
inline constexpr std::size_t name_bytes_max = 200;
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

/// Holds a validated `POST /v1/accounts` body.
struct account_request {
    std::int64_t account_id = 0;
    std::string currency;  ///< three upper-case ASCII letters
};

/// Holds a validated deposit or withdrawal body.
struct transfer_request {
    std::int64_t amount_minor = 0;  ///< > 0, at most limits::amount_minor_max
    std::string key;                ///< 1..limits::idempotency_key_bytes_max bytes
};

/// Validates a `POST /v1/accounts` body `{"account_id":42,"currency":"EUR"}`.
parsed<account_request> parse_account_request(const nlohmann::json& body);

/// Validates a deposit or withdrawal body `{"amount":"100.00","key":"k1"}`.
parsed<transfer_request> parse_transfer_request(const nlohmann::json& body);

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
