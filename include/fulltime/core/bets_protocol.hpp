#pragma once
/// The bet client's half of wire protocol v1 (docs/protocol.md) as pure functions:
/// parsing and validating `place`, `balance` and `bets` messages into typed requests, reading
/// the stored result of a placement, and rendering every reply. No socket, no database, no
/// actor: everything here is unit-tested on its own (tests/core/bets_protocol_test.cpp).
///
/// Unknown fields are refused, not ignored: a misspelt optional field ("acept") would otherwise
/// be dropped silently and the bet placed under a policy the client did not ask for. The gateway
/// has already checked "type" and "id" (net/ws_message.hpp) before a handler sees a message.

#include <boost/system/result.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulltime::bets {

/// Names how a placement treats odds that changed since the client saw them.
enum class accept_policy {
    exact = 1,  ///< only the asked odds
    better,     ///< the asked odds or higher (the bet takes the current odds)
    any,        ///< whatever the current odds are
};

/// Returns "exact", "better" or "any".
std::string_view to_string(accept_policy p) noexcept;

/// Holds a validated `place` request.
struct place_request {
    std::int64_t account_id = 0;  ///< from the token, never from the message
    std::string idempotency_key;  ///< 1..limits::idempotency_key_bytes_max bytes
    std::int64_t selection_id = 0;
    /// The stake in thousandths of the currency's major unit (money::parse_positive_thousandths):
    /// the account's currency, and so its decimals, are known only to the placement function,
    /// which converts it to minor units and refuses more decimals than the currency has.
    std::int64_t stake_thousandths = 0;  ///< > 0, at most limits::amount_thousandths_max
    std::int64_t odds_units = 0;         ///< money::odds_min..money::odds_max
    accept_policy accept = accept_policy::exact;
};

/// Holds a validated `balance` request (it has no parameters beyond the token's account).
struct balance_request {
    std::int64_t account_id = 0;
};

/// Names which bets a `bets` request lists.
enum class status_filter { open = 1, settled, all };

/// Returns "open", "settled" or "all".
std::string_view to_string(status_filter s) noexcept;

/// Default and largest `limit` of a `bets` request.
inline constexpr std::int64_t bets_limit_default = 50;
inline constexpr std::int64_t bets_limit_max = 200;

/// Holds a validated `bets` request.
struct bets_request {
    std::int64_t account_id = 0;
    status_filter status = status_filter::all;
    std::int64_t limit = bets_limit_default;  ///< 1..bets_limit_max
    /// Only bets with a smaller bet_id: the "next_before" of the previous page; none: the
    /// newest bets.
    std::optional<std::int64_t> before;
};

/// Describes why a request was refused as invalid_request; the message is fit for a client.
struct request_error {
    std::string message;
};

/// Holds a value or a request_error.
template <class T>
using checked = boost::system::result<T, request_error>;

/// Validates a `place` message for the account of the verified token. Requires idempotency_key
/// (string, 1..255 bytes), selection_id (positive JSON integer), stake (decimal string, > 0, at
/// most three decimals: the currency's own number is checked by the placement), odds (decimal
/// string, >= 1.01, at most four decimals); accepts accept
/// ("exact" | "better" | "any", default exact) and account_id (must equal the token's).
checked<place_request> parse_place(const nlohmann::json& message, std::int64_t token_account_id);

/// Validates a `balance` message; accepts only type, id and account_id (the token's).
checked<balance_request> parse_balance(const nlohmann::json& message,
                                       std::int64_t token_account_id);

/// Validates a `bets` message: status ("open" | "settled" | "all", default all), limit
/// (integer 1..200, default 50), before (positive integer, a bet_id from a previous reply's
/// "next_before"; absent: the newest bets), and account_id (the token's).
checked<bets_request> parse_bets(const nlohmann::json& message, std::int64_t token_account_id);

/// Returns the request fingerprint stored with the idempotency key: the lower-case hex SHA-256
/// of the canonical parameters "place/v1|selection|stake|odds_units|accept", the stake in
/// hundredths ("1050" for "10.5"), with a third decimal only when it has one ("1050.5" for
/// "10.505"): the form of the releases that parsed two decimals, so that a retry across an
/// upgrade still matches its key. Canonical means parsed: "10.0" and "10.00" are the same
/// stake, so they fingerprint alike. The account is not part of it because keys are already
/// scoped to the account.
std::string fingerprint(const place_request& request);

/// Holds a bet as the placement stored it.
struct placed_bet {
    std::int64_t bet_id = 0;
    std::int64_t account_id = 0;
    std::int64_t market_id = 0;
    std::int64_t selection_id = 0;
    std::int64_t stake_minor = 0;
    std::int64_t odds_units = 0;
    std::string placed_at;             ///< ISO 8601 UTC with microseconds
    std::int64_t available_minor = 0;  ///< the balance right after the placement
    std::int64_t reserved_minor = 0;
    std::string currency;
};

/// Holds what a placement came to, as the placement actor returns it.
struct place_result {
    /// Names the kind of answer.
    enum class status {
        placed = 1,  ///< bet holds the bet
        rejected,    ///< code and message hold the refusal
        invalid,     ///< an invalid_request error (message): the stake has more decimals than
                     ///< the account's currency; nothing was run or stored
        busy,        ///< not executed (or not known to be): retry with the same key
        failed,      ///< an unexpected error; the client gets an "internal" error
    };
    status kind = status::failed;
    /// Whether this is the key's stored first result returned again. Only meaningful for
    /// placed and for refusals that were stored (has_stored_result).
    bool replayed = false;
    /// Whether the reply is the key's stored result (placed, or a refusal of the function);
    /// false for busy, failed and idempotency_key_reused, which are never stored.
    bool stored = false;
    placed_bet bet;
    std::string code;     ///< refusal code (docs/protocol.md's list)
    std::string message;  ///< refusal message, decimals as strings
    /// What the session's later reads must see (read-your-writes; never sent to the client):
    /// the id of the transaction that wrote this placement, and the primary's WAL position
    /// right after its commit (0: not known, or nothing was written).
    std::uint64_t xid = 0;
    std::uint64_t commit_lsn = 0;
};

/// Builds the result of `SELECT outcome, response FROM fulltime_place(...)`: outcome is placed,
/// rejected, replayed, key_reused or invalid, response the function's JSON. A shape the engine
/// does not know is a request_error (the caller logs it and answers "internal").
checked<place_result> read_place_outcome(std::string_view outcome, std::string_view response);

/// Returns the reply to a place request: `placed`, `rejected` (with "replayed" when the refusal
/// is the key's stored result), `{"type":"error",...,"code":"invalid_request"}` for invalid, or
/// `{"type":"error",...,"code":"internal"}` for failed.
nlohmann::json render_place_result(const nlohmann::json& id, const place_result& result);

/// Returns `{"type":"error","id":id,"code":"invalid_request","message":message}`.
nlohmann::json render_invalid(const nlohmann::json& id, std::string_view message);

/// Returns `{"type":"rejected","id":id,"code":"busy","message":message}`.
nlohmann::json render_busy(const nlohmann::json& id, std::string_view message);

/// Holds an account's balance.
struct balance {
    std::int64_t available_minor = 0;
    std::int64_t reserved_minor = 0;
    std::string currency;
};

/// Returns `{"type":"balance","id":..,"available":"..","reserved":"..","currency":".."}`.
nlohmann::json render_balance(const nlohmann::json& id, const balance& b);

/// Holds one line of a `bets` reply.
struct bet_line {
    placed_bet bet;  ///< available/reserved/currency unused
    std::string currency;
    bool settled = false;
    std::int32_t version = 0;  ///< of the effective settlement, when settled
    std::string outcome;       ///< won, lost, void, half_won, half_lost, dead_heat
    std::int64_t payout_minor = 0;
};

/// Returns one bet of a `bets` reply: bet_id, account_id, market_id, selection_id, stake, odds,
/// currency, placed_at, status ("open" | "settled") and, when settled, version, outcome, payout.
nlohmann::json render_bet_line(const bet_line& line);

/// Holds one page of a `bets` reply: its lines, newest first, and where the next page starts.
struct bets_page {
    std::vector<bet_line> lines;
    /// The last line's bet_id when the page is full and more bets match (the next request's
    /// "before"); none when there are no more.
    std::optional<std::int64_t> next_before;
};

/// Returns `{"type":"bets","id":id,"bets":[...],"next_before":<bet_id or null>}`.
nlohmann::json render_bets(const nlohmann::json& id, const bets_page& page);

}  // namespace fulltime::bets

namespace fulltime::bets {
/// Throws a request error as std::invalid_argument; used by boost::system::result::value().
[[noreturn]] void throw_exception_from_error(const request_error& e,
                                             const boost::source_location& loc);
}  // namespace fulltime::bets
