#pragma once
/// Reservation deadlines: the operator's void of a market's overdue open bets, and the reads and
/// writes of the overdue-reservation sweeper (the rules are in db/functions/:
/// fulltime_void_overdue.sql, fulltime_reservation_deadline.sql, fulltime_open_bets_chunk.sql
/// and fulltime_note_overdue.sql). Every function is one short statement or transaction; none
/// locks a balance row.

#include "fulltime/db/connection.hpp"
#include "fulltime/db/transaction.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulltime::db {

/// Names how a void-overdue request ended. Only `stored` wrote anything.
enum class void_overdue_status {
    stored = 1,       ///< the void_open event is stored; the market's settlement applies it
    duplicate,        ///< the key was stored before for this market: nothing new
    conflict,         ///< the key belongs to another event
    unknown_market,   ///< no such market
    not_overdue,      ///< the market's reservation deadline has not passed (force overrides)
    nothing_to_void,  ///< the market holds no open bet
    feed_gap,         ///< a hole in the market's seq would hold the void back (close-gap first)
};

/// Returns the snake_case name of a status, which for the refusals is their wire code.
std::string_view to_string(void_overdue_status s) noexcept;

/// Holds one void-overdue request.
struct void_overdue_request {
    std::int64_t market_id = 0;
    std::string event_key;                ///< empty: "operator:void-overdue:<market>"
    std::string operator_name;            ///< who asked, kept in the event's payload
    bool force = false;                   ///< void even before the deadline
    std::int64_t grace_s = 0;             ///< reservations.grace_s
    std::int64_t default_deadline_s = 0;  ///< reservations.default_deadline_s
};

/// Holds the answer to a void-overdue request.
struct void_overdue_record {
    void_overdue_status status = void_overdue_status::stored;
    std::int64_t result_event_id = 0;  ///< the stored (or earlier) event; 0 for a refusal
    std::int64_t seq = 0;              ///< its seq in the market
    std::string event_key;             ///< the key used
    std::string deadline;              ///< the market's reservation deadline (RFC 3339, UTC)
    std::string message;               ///< one sentence for the operator
};

/// Returns the event key void-overdue uses by default for `market_id`.
std::string default_void_overdue_key(std::int64_t market_id);

/// Stores the void_open event of `request` by calling fulltime_void_overdue in one transaction
/// (retried at most `lock_retries_max` times after a lock timeout); commits only `stored`.
boost::asio::awaitable<outcome<void_overdue_record>> void_overdue(connection& conn,
                                                                  void_overdue_request request,
                                                                  transaction_options options,
                                                                  std::size_t lock_retries_max);

/// Names how a close-gap request ended. Only `stored` wrote anything.
enum class close_gap_status {
    stored = 1,      ///< the gap_closed event is stored; the market's settlement moves past it
    duplicate,       ///< the key was stored before for the same range: nothing new
    conflict,        ///< the key belongs to another event, or a producer took the seq meanwhile
    unknown_market,  ///< no such market
    not_a_gap,       ///< a seq of the range is stored or applied, or no event follows it
};

/// Returns the snake_case name of a status, which for the refusals is their wire code.
std::string_view to_string(close_gap_status s) noexcept;

/// Holds one close-gap request: seqs `from` to `through` of the market will never come.
struct close_gap_request {
    std::int64_t market_id = 0;
    std::int64_t from = 0;
    std::int64_t through = 0;
    std::string event_key;      ///< empty: "operator:close-gap:<market>:<from>-<through>"
    std::string operator_name;  ///< who asked, kept in the event's payload
};

/// Holds the answer to a close-gap request.
struct close_gap_record {
    close_gap_status status = close_gap_status::stored;
    std::int64_t result_event_id = 0;  ///< the stored (or earlier) event; 0 for most refusals
    std::string event_key;             ///< the key used
    std::string message;               ///< one sentence for the operator
};

/// Stores the gap_closed event of `request` by calling fulltime_close_gap in one transaction
/// (retried at most `lock_retries_max` times after a lock timeout); commits only `stored`.
boost::asio::awaitable<outcome<close_gap_record>> close_gap(connection& conn,
                                                            close_gap_request request,
                                                            transaction_options options,
                                                            std::size_t lock_retries_max);

/// Holds one market of a sweep page.
struct sweep_market {
    std::int64_t market_id = 0;
    std::string deadline;          ///< RFC 3339, UTC
    bool overdue = false;          ///< the deadline has passed
    std::int64_t bet_id_max = 0;   ///< the market's newest bet (0: none)
    std::int64_t applied_seq = 0;  ///< its settlement progress
    bool incident_open = false;    ///< an overdue_reservation incident is open for it
};

/// Reads the next `limit` markets after `after_market_id` in id order, with their deadlines.
boost::asio::awaitable<outcome<std::vector<sweep_market>>> read_sweep_page(
    connection& conn, std::int64_t after_market_id, std::int64_t limit, std::int64_t grace_s,
    std::int64_t default_deadline_s);

/// Holds one chunk of a market's bets as fulltime_open_bets_chunk counts them.
struct open_bets_chunk {
    std::optional<std::int64_t> last_bet_id;  ///< nullopt: no bet after the cursor
    std::int64_t open_bets = 0;
    std::string reserved_json;  ///< {"EUR": minor units} of the open bets
    std::optional<std::string> oldest_placed_at;
};

/// Counts the open bets among the market's next `limit` bets after `after_bet_id`.
boost::asio::awaitable<outcome<open_bets_chunk>> read_open_bets_chunk(connection& conn,
                                                                      std::int64_t market_id,
                                                                      std::int64_t after_bet_id,
                                                                      std::int64_t limit);

/// Opens, updates or resolves the market's overdue_reservation incident (fulltime_note_overdue);
/// returns "opened", "updated", "resolved" or "none".
boost::asio::awaitable<outcome<std::string>> note_overdue(connection& conn, std::int64_t market_id,
                                                          std::string deadline,
                                                          std::int64_t open_bets,
                                                          std::string reserved_json,
                                                          std::optional<std::string> oldest);

}  // namespace fulltime::db
