#include "fulltime/db/reservation_statements.hpp"

#include "db/short_transaction.hpp"

#include <functional>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

using detail::discard;
using detail::keep;
using void_decided = detail::decision<void_overdue_record>;

// Timestamps travel as RFC 3339 text in UTC, as the wire formats write them.
#define FULLTIME_RFC3339(x) "to_char((" x ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

constexpr const char* close_gap_sql =
    "SELECT outcome, result_event_id, detail "
    "FROM fulltime_close_gap($1::bigint, $2::bigint, $3::bigint, $4::text, $5::text)";

constexpr const char* void_overdue_sql =
    "SELECT outcome, result_event_id, seq, " FULLTIME_RFC3339("deadline") ", detail "
    "FROM fulltime_void_overdue($1::bigint, $2::text, $3::text, $4::boolean, $5::bigint, "
    "$6::bigint)";

// One page of markets in id order, each with its deadline and what lets the sweeper skip a
// market it found clean before: its newest bet and its settlement progress. Index probes only.
constexpr const char* sweep_page_sql =
    "SELECT c.market_id, " FULLTIME_RFC3339("c.deadline") ", c.deadline < now(), "
    "  coalesce((SELECT max(b.bet_id) FROM bets b WHERE b.market_id = c.market_id), 0), "
    "  coalesce((SELECT p.applied_seq FROM settlement_progress p "
    "            WHERE p.market_id = c.market_id), 0), "
    "  EXISTS (SELECT 1 FROM incidents i WHERE i.kind = 'overdue_reservation' "
    "          AND i.subject = 'market:' || c.market_id AND i.resolved_at IS NULL) "
    "FROM (SELECT m.market_id, fulltime_reservation_deadline(m.market_id, $3::bigint, "
    "             $4::bigint) AS deadline "
    "      FROM markets m WHERE m.market_id > $1::bigint ORDER BY m.market_id "
    "      LIMIT $2::bigint) c "
    "ORDER BY c.market_id";

constexpr const char* open_chunk_sql =
    "SELECT last_bet_id, open_bets, reserved::text, " FULLTIME_RFC3339("oldest_placed_at") " "
    "FROM fulltime_open_bets_chunk($1::bigint, $2::bigint, $3::integer)";

constexpr const char* note_overdue_sql =
    "SELECT outcome FROM fulltime_note_overdue($1::bigint, $2::timestamptz, $3::bigint, "
    "$4::jsonb, $5::timestamptz)";

#undef FULLTIME_RFC3339

std::optional<void_overdue_status> void_status_from_string(std::string_view text) noexcept {
    for (auto s : {void_overdue_status::stored, void_overdue_status::duplicate,
                   void_overdue_status::conflict, void_overdue_status::unknown_market,
                   void_overdue_status::not_overdue, void_overdue_status::nothing_to_void,
                   void_overdue_status::feed_gap}) {
        if (to_string(s) == text) {
            return s;
        }
    }
    return std::nullopt;
}

std::string message_for(const void_overdue_record& r, std::int64_t market_id,
                        std::string_view detail) {
    const std::string market = "market " + std::to_string(market_id);
    switch (r.status) {
        case void_overdue_status::stored:
            return "stored the void of " + market + "'s open bets as seq " + std::to_string(r.seq) +
                   " (event_key \"" + r.event_key + "\"); its settlement applies it";
        case void_overdue_status::duplicate:
            return "event_key \"" + r.event_key + "\" was stored before for " + market +
                   " as seq " + std::to_string(r.seq) + "; nothing new was stored";
        case void_overdue_status::conflict:
            return "event_key \"" + r.event_key + "\" belongs to another event (" +
                   std::string(detail) + ")";
        case void_overdue_status::unknown_market:
            return market + " does not exist";
        case void_overdue_status::not_overdue:
            return market + "'s reservations are not overdue before " + r.deadline +
                   " (--force voids them anyway)";
        case void_overdue_status::nothing_to_void:
            return market + " holds no open bet";
        case void_overdue_status::feed_gap:
            return std::string(detail) +
                   ": the void would wait behind them; close the gap first "
                   "(POST /v1/markets/" +
                   std::to_string(market_id) + "/close-gap)";
    }
    return {};
}

asio::awaitable<outcome<void_decided>> void_body(void_overdue_request req, connection& conn) {
    auto called = co_await conn.query(
        void_overdue_sql, params{req.market_id, req.event_key, req.operator_name, req.force,
                                 req.grace_s, req.default_deadline_s});
    if (!called) {
        co_return called.error();
    }
    if (called->rows() != 1) {
        co_return failure{errc::bad_result, {}, "fulltime_void_overdue returned no row"};
    }
    auto outcome_text = called->get<std::string_view>(0, 0);
    auto event_id = called->get<std::optional<std::int64_t>>(0, 1);
    auto seq = called->get<std::optional<std::int64_t>>(0, 2);
    auto deadline = called->get<std::optional<std::string>>(0, 3);
    auto detail = called->get<std::optional<std::string>>(0, 4);
    if (!outcome_text || !event_id || !seq || !deadline || !detail) {
        co_return failure{errc::bad_result, {}, "unexpected fulltime_void_overdue row"};
    }
    const auto status = void_status_from_string(*outcome_text);
    if (!status) {
        co_return failure{errc::bad_result,
                          {},
                          "unknown fulltime_void_overdue outcome " + std::string(*outcome_text)};
    }
    void_overdue_record r;
    r.status = *status;
    r.result_event_id = event_id->value_or(0);
    r.seq = seq->value_or(0);
    r.event_key = req.event_key;
    r.deadline = deadline->value_or("");
    r.message = message_for(r, req.market_id, detail->value_or(""));
    if (*status == void_overdue_status::stored) {
        co_return keep(std::move(r));
    }
    co_return discard(std::move(r));
}

asio::awaitable<outcome<detail::decision<close_gap_record>>> close_gap_body(close_gap_request req,
                                                                            connection& conn) {
    auto called = co_await conn.query(close_gap_sql, params{req.market_id, req.from, req.through,
                                                            req.event_key, req.operator_name});
    if (!called) {
        co_return called.error();
    }
    if (called->rows() != 1) {
        co_return failure{errc::bad_result, {}, "fulltime_close_gap returned no row"};
    }
    auto outcome_text = called->get<std::string_view>(0, 0);
    auto event_id = called->get<std::optional<std::int64_t>>(0, 1);
    auto detail = called->get<std::optional<std::string>>(0, 2);
    if (!outcome_text || !event_id || !detail) {
        co_return failure{errc::bad_result, {}, "unexpected fulltime_close_gap row"};
    }
    std::optional<close_gap_status> status;
    for (auto s :
         {close_gap_status::stored, close_gap_status::duplicate, close_gap_status::conflict,
          close_gap_status::unknown_market, close_gap_status::not_a_gap}) {
        if (to_string(s) == *outcome_text) {
            status = s;
        }
    }
    if (!status) {
        co_return failure{errc::bad_result,
                          {},
                          "unknown fulltime_close_gap outcome " + std::string(*outcome_text)};
    }
    close_gap_record r;
    r.status = *status;
    r.result_event_id = event_id->value_or(0);
    r.event_key = req.event_key;
    const std::string market = "market " + std::to_string(req.market_id);
    const std::string range =
        "seq " + std::to_string(req.from) + " to " + std::to_string(req.through);
    switch (r.status) {
        case close_gap_status::stored:
            r.message = "closed " + range + " of " + market + "; its settlement moves past them";
            break;
        case close_gap_status::duplicate:
            r.message = "event_key \"" + r.event_key + "\" closed " + range + " of " + market +
                        " before; nothing new was stored";
            break;
        case close_gap_status::unknown_market:
            r.message = market + " does not exist";
            break;
        case close_gap_status::conflict:
        case close_gap_status::not_a_gap:
            r.message = range + " of " + market + " is not a gap to close: " + detail->value_or("");
            break;
    }
    if (r.status == close_gap_status::stored) {
        co_return detail::keep(std::move(r));
    }
    co_return detail::discard(std::move(r));
}

}  // namespace

std::string_view to_string(close_gap_status s) noexcept {
    switch (s) {
        case close_gap_status::stored:
            return "stored";
        case close_gap_status::duplicate:
            return "duplicate";
        case close_gap_status::conflict:
            return "conflict";
        case close_gap_status::unknown_market:
            return "unknown_market";
        case close_gap_status::not_a_gap:
            return "not_a_gap";
    }
    return "unknown";
}

asio::awaitable<outcome<close_gap_record>> close_gap(connection& conn, close_gap_request request,
                                                     transaction_options options,
                                                     std::size_t lock_retries_max) {
    if (request.event_key.empty()) {
        request.event_key = "operator:close-gap:" + std::to_string(request.market_id) + ":" +
                            std::to_string(request.from) + "-" + std::to_string(request.through);
    }
    auto done = co_await detail::run_short_transaction<close_gap_record>(
        conn, options, lock_retries_max, std::bind_front(close_gap_body, std::move(request)));
    co_return done;
}

std::string_view to_string(void_overdue_status s) noexcept {
    switch (s) {
        case void_overdue_status::stored:
            return "stored";
        case void_overdue_status::duplicate:
            return "duplicate";
        case void_overdue_status::conflict:
            return "conflict";
        case void_overdue_status::unknown_market:
            return "unknown_market";
        case void_overdue_status::not_overdue:
            return "not_overdue";
        case void_overdue_status::nothing_to_void:
            return "nothing_to_void";
        case void_overdue_status::feed_gap:
            return "feed_gap";
    }
    return "unknown";
}

std::string default_void_overdue_key(std::int64_t market_id) {
    return "operator:void-overdue:" + std::to_string(market_id);
}

asio::awaitable<outcome<void_overdue_record>> void_overdue(connection& conn,
                                                           void_overdue_request request,
                                                           transaction_options options,
                                                           std::size_t lock_retries_max) {
    if (request.event_key.empty()) {
        request.event_key = default_void_overdue_key(request.market_id);
    }
    auto done = co_await detail::run_short_transaction<void_overdue_record>(
        conn, options, lock_retries_max, std::bind_front(void_body, std::move(request)));
    co_return done;
}

asio::awaitable<outcome<std::vector<sweep_market>>> read_sweep_page(
    connection& conn, std::int64_t after_market_id, std::int64_t limit, std::int64_t grace_s,
    std::int64_t default_deadline_s) {
    auto rows = co_await conn.query(sweep_page_sql,
                                    params{after_market_id, limit, grace_s, default_deadline_s});
    if (!rows) {
        co_return rows.error();
    }
    std::vector<sweep_market> out;
    out.reserve(static_cast<std::size_t>(rows->rows()));
    for (int row = 0; row < rows->rows(); ++row) {
        auto id = rows->get<std::int64_t>(row, 0);
        auto deadline = rows->get<std::string>(row, 1);
        auto overdue = rows->get<bool>(row, 2);
        auto bet_max = rows->get<std::int64_t>(row, 3);
        auto applied = rows->get<std::int64_t>(row, 4);
        auto open = rows->get<bool>(row, 5);
        if (!id || !deadline || !overdue || !bet_max || !applied || !open) {
            co_return failure{errc::bad_result, {}, "unexpected sweep page row"};
        }
        out.push_back(sweep_market{*id, std::move(*deadline), *overdue, *bet_max, *applied, *open});
    }
    co_return out;
}

asio::awaitable<outcome<open_bets_chunk>> read_open_bets_chunk(connection& conn,
                                                               std::int64_t market_id,
                                                               std::int64_t after_bet_id,
                                                               std::int64_t limit) {
    auto rows = co_await conn.query(
        open_chunk_sql, params{market_id, after_bet_id, static_cast<std::int32_t>(limit)});
    if (!rows) {
        co_return rows.error();
    }
    if (rows->rows() != 1) {
        co_return failure{errc::bad_result, {}, "fulltime_open_bets_chunk returned no row"};
    }
    auto last = rows->get<std::optional<std::int64_t>>(0, 0);
    auto open = rows->get<std::int64_t>(0, 1);
    auto reserved = rows->get<std::string>(0, 2);
    auto oldest = rows->get<std::optional<std::string>>(0, 3);
    if (!last || !open || !reserved || !oldest) {
        co_return failure{errc::bad_result, {}, "unexpected fulltime_open_bets_chunk row"};
    }
    co_return open_bets_chunk{*last, *open, std::move(*reserved), std::move(*oldest)};
}

asio::awaitable<outcome<std::string>> note_overdue(connection& conn, std::int64_t market_id,
                                                   std::string deadline, std::int64_t open_bets,
                                                   std::string reserved_json,
                                                   std::optional<std::string> oldest) {
    auto rows = co_await conn.query(note_overdue_sql,
                                    params{market_id, deadline, open_bets, reserved_json, oldest});
    if (!rows) {
        co_return rows.error();
    }
    auto outcome_text = rows->get<std::string>(0, 0);
    if (!outcome_text) {
        co_return outcome_text.error();
    }
    co_return std::move(*outcome_text);
}

}  // namespace fulltime::db
