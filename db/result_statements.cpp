#include "fulltime/db/result_statements.hpp"

#include "db/short_transaction.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

using detail::discard;
using detail::keep;
using event_decided = detail::decision<result_event_record>;

// One statement: the market and selection checks, the insert (ON CONFLICT DO NOTHING), the
// duplicate-or-conflict comparison on the stored row, and for a result or cancel the market's
// suspension, all in the function (db/functions/fulltime_record_result.sql).
constexpr const char* record_result_sql =
    "SELECT outcome, result_event_id, detail "
    "FROM fulltime_record_result($1::bigint, $2::bigint, $3::text, $4::text, $5::jsonb, $6::text)";

// The market's newest events with their outcomes, as one JSON document built by PostgreSQL.
constexpr const char* list_events_sql =
    "SELECT coalesce(jsonb_agg(x ORDER BY x.seq DESC), '[]'::jsonb)::text FROM ("
    "  SELECT e.seq, e.event_key, e.kind, e.producer, e.received_at, e.applied_at, "
    "         coalesce(e.skipped, '{}'::jsonb) AS skipped, e.refusal "
    "  FROM result_events e WHERE e.market_id = $1::bigint "
    "  ORDER BY e.seq DESC LIMIT $2::integer) x";

std::optional<result_event_status> event_status_from_string(std::string_view text) noexcept {
    for (auto s : {result_event_status::stored, result_event_status::duplicate,
                   result_event_status::conflict, result_event_status::unknown_market,
                   result_event_status::unknown_selection}) {
        if (to_string(s) == text) {
            return s;
        }
    }
    return std::nullopt;
}

std::string market_text(std::int64_t market_id) { return "market " + std::to_string(market_id); }

// Words the refusal for a producer. The conflict names what this message claimed and what the
// stored event under that key or (market, seq) is, so the producer can tell which one clashed.
std::string refusal_message(result_event_status status, const feed::result_event_message& m,
                            std::string_view detail) {
    switch (status) {
        case result_event_status::conflict:
            return std::string(feed::to_string(m.kind)) + " event_key \"" + m.event_key +
                   "\" for " + market_text(m.market_id) + " seq " + std::to_string(m.seq) +
                   " conflicts with a stored event (" + std::string(detail) +
                   "); a resend must repeat the event exactly, a new event needs a new "
                   "event_key and seq";
        case result_event_status::unknown_market:
            return market_text(m.market_id) + " does not exist";
        case result_event_status::unknown_selection:
            return "selection " + std::string(detail) + " is not a selection of " +
                   market_text(m.market_id);
        case result_event_status::stored:
        case result_event_status::duplicate:
            break;
    }
    return {};
}

asio::awaitable<outcome<event_decided>> record_body(feed::result_event_message m,
                                                    std::string producer, connection& conn) {
    auto called = co_await conn.query(
        record_result_sql, params{m.market_id, m.seq, m.event_key,
                                  std::string(feed::to_string(m.kind)), m.payload_json, producer});
    if (!called) {
        co_return called.error();
    }
    if (called->rows() != 1) {
        co_return failure{errc::bad_result, {}, "fulltime_record_result returned no row"};
    }
    auto outcome_text = called->get<std::string_view>(0, 0);
    auto event_id = called->get<std::optional<std::int64_t>>(0, 1);
    auto detail = called->get<std::optional<std::string>>(0, 2);
    if (!outcome_text || !event_id || !detail) {
        co_return failure{errc::bad_result, {}, "unexpected fulltime_record_result row"};
    }
    const auto status = event_status_from_string(*outcome_text);
    if (!status) {
        co_return failure{errc::bad_result,
                          {},
                          "unknown fulltime_record_result outcome " + std::string(*outcome_text)};
    }
    result_event_record r;
    r.status = *status;
    r.result_event_id = event_id->value_or(0);
    r.message = refusal_message(*status, m, detail->value_or(""));
    if (*status == result_event_status::stored) {
        co_return keep(std::move(r));
    }
    // Nothing was written; rolling back rather than committing keeps that obvious.
    co_return discard(std::move(r));
}

}  // namespace

std::string_view to_string(result_event_status s) noexcept {
    switch (s) {
        case result_event_status::stored:
            return "stored";
        case result_event_status::duplicate:
            return "duplicate";
        case result_event_status::conflict:
            return "conflict";
        case result_event_status::unknown_market:
            return "unknown_market";
        case result_event_status::unknown_selection:
            return "unknown_selection";
    }
    return "unknown";
}

asio::awaitable<outcome<result_event_record>> record_result_event(
    connection& conn, feed::result_event_message message, std::string producer,
    transaction_options options, std::size_t lock_retries_max) {
    auto done = co_await detail::run_short_transaction<result_event_record>(
        conn, options, lock_retries_max,
        std::bind_front(record_body, std::move(message), std::move(producer)));
    co_return done;
}

asio::awaitable<outcome<std::string>> list_result_events_json(connection& conn,
                                                              std::int64_t market_id,
                                                              std::int64_t limit) {
    auto rows = co_await conn.query(list_events_sql, params(market_id, limit));
    if (!rows) {
        co_return rows.error();
    }
    auto text = rows->get<std::string>(0, 0);
    if (!text) {
        co_return text.error();
    }
    co_return std::move(*text);
}

}  // namespace fulltime::db
