#include "fulltime/db/bets_statements.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

constexpr const char* balance_sql =
    "SELECT available, reserved, currency FROM accounts WHERE account_id = $1::bigint";

// The bet lists take the same parameters: $1 the account, $2 the status filter, $3 the page's
// limit plus one (the extra row only says whether more bets match), $4 before (NULL: from the
// newest). bigint's largest value stands in for "no bound": bet ids are an identity far below
// it.

// Newest first. A bet is settled when it has an effect (settle or cancel) that no reversal
// undid; its effective settlement is the highest such version (schema: bet_settlements).
constexpr const char* bets_sql =
    "SELECT b.bet_id, b.market_id, b.selection_id, b.stake, b.odds, b.currency, "
    "to_char(b.placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
    "e.version, e.outcome, e.payout "
    "FROM bets b LEFT JOIN LATERAL ("
    "  SELECT s.version, s.outcome, s.payout FROM bet_settlements s "
    "  WHERE s.bet_id = b.bet_id AND s.placed_at = b.placed_at AND NOT s.reversal "
    "  AND NOT EXISTS ("
    "    SELECT 1 FROM bet_settlements r "
    "    WHERE r.bet_id = s.bet_id AND r.placed_at = s.placed_at AND r.version = s.version "
    "      AND r.reversal) "
    "  ORDER BY s.version DESC LIMIT 1) e ON true "
    "WHERE b.account_id = $1::bigint "
    "AND b.bet_id < coalesce($4::bigint, 9223372036854775807) "
    "AND ($2::text <> 'open' OR e.version IS NULL) "
    "AND ($2::text <> 'settled' OR e.version IS NOT NULL) "
    "ORDER BY b.bet_id DESC LIMIT $3::bigint";

// The same rows from the read model (docs/schema.md, "Read model"): the bettor's range of
// bet_view_bets, each with its bet_view_results row (version, outcome and payout are the
// effective settlement; none: open).
constexpr const char* bet_views_sql =
    "SELECT b.bet_id, b.market_id, b.selection_id, b.stake, b.odds, b.currency, "
    "to_char(b.placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
    "r.version, r.outcome, r.payout "
    "FROM bet_view_bets b LEFT JOIN bet_view_results r ON r.bet_id = b.bet_id "
    "WHERE b.account_id = $1::bigint "
    "AND b.bet_id < coalesce($4::bigint, 9223372036854775807) "
    "AND ($2::text <> 'open' OR r.version IS NULL) "
    "AND ($2::text <> 'settled' OR r.version IS NOT NULL) "
    "ORDER BY b.bet_id DESC LIMIT $3::bigint";

// The open ones: the bettor's range of bet_view_open, which holds the open bets only, so that a
// bettor with thousands of settled bets and a few open ones reads those few. An open bet has no
// effective settlement. $2 is 'open'.
constexpr const char* open_bet_views_sql =
    "SELECT b.bet_id, b.market_id, b.selection_id, b.stake, b.odds, b.currency, "
    "to_char(b.placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
    "NULL::integer, NULL::text, NULL::bigint "
    "FROM bet_view_open o "
    "JOIN bet_view_bets b ON b.account_id = o.account_id AND b.bet_id = o.bet_id "
    "WHERE o.account_id = $1::bigint AND $2::text = 'open' "
    "AND o.bet_id < coalesce($4::bigint, 9223372036854775807) "
    "ORDER BY o.bet_id DESC LIMIT $3::bigint";

/// Runs one of the two bet lists and reads its rows into a page of at most `limit` lines.
asio::awaitable<outcome<bets::bets_page>> read_page(connection& conn, const char* sql,
                                                    std::int64_t account_id,
                                                    bets::status_filter status, std::int64_t limit,
                                                    std::optional<std::int64_t> before) {
    auto rows =
        co_await conn.query(sql, params(account_id, bets::to_string(status), limit + 1, before));
    if (!rows) {
        co_return rows.error();
    }
    bets::bets_page page;
    const int shown = static_cast<int>(std::min<std::int64_t>(rows->rows(), limit));
    page.lines.reserve(static_cast<std::size_t>(shown));
    for (int i = 0; i < shown; ++i) {
        bets::bet_line line;
        line.bet.account_id = account_id;
        auto bet_id = rows->get<std::int64_t>(i, 0);
        auto market_id = rows->get<std::int64_t>(i, 1);
        auto selection_id = rows->get<std::int64_t>(i, 2);
        auto stake = rows->get<std::int64_t>(i, 3);
        auto odds = rows->get<std::int64_t>(i, 4);
        auto currency = rows->get<std::string>(i, 5);
        auto placed_at = rows->get<std::string>(i, 6);
        auto version = rows->get<std::optional<std::int32_t>>(i, 7);
        auto outcome_text = rows->get<std::optional<std::string>>(i, 8);
        auto payout = rows->get<std::optional<std::int64_t>>(i, 9);
        if (!bet_id || !market_id || !selection_id || !stake || !odds || !currency || !placed_at ||
            !version || !outcome_text || !payout) {
            co_return failure{errc::bad_result, {}, "unexpected bets row"};
        }
        line.bet.bet_id = *bet_id;
        line.bet.market_id = *market_id;
        line.bet.selection_id = *selection_id;
        line.bet.stake_minor = *stake;
        line.bet.odds_units = *odds;
        line.bet.placed_at = std::move(*placed_at);
        line.currency = std::move(*currency);
        if (*version) {
            line.settled = true;
            line.version = **version;
            line.outcome = outcome_text->value_or("");
            line.payout_minor = payout->value_or(0);
        }
        page.lines.push_back(std::move(line));
    }
    if (rows->rows() > limit && !page.lines.empty()) {
        page.next_before = page.lines.back().bet.bet_id;
    }
    co_return page;
}

}  // namespace

asio::awaitable<outcome<std::optional<bets::balance>>> read_balance(connection& conn,
                                                                    std::int64_t account_id) {
    auto rows = co_await conn.query(balance_sql, params(account_id));
    if (!rows) {
        co_return rows.error();
    }
    if (rows->rows() == 0) {
        co_return std::optional<bets::balance>{};
    }
    auto available = rows->get<std::int64_t>(0, 0);
    auto reserved = rows->get<std::int64_t>(0, 1);
    auto currency = rows->get<std::string>(0, 2);
    if (!available || !reserved || !currency) {
        co_return failure{errc::bad_result, {}, "unexpected balance row"};
    }
    co_return std::optional<bets::balance>{
        bets::balance{*available, *reserved, std::move(*currency)}};
}

asio::awaitable<outcome<bets::bets_page>> list_bets(connection& conn, std::int64_t account_id,
                                                    bets::status_filter status, std::int64_t limit,
                                                    std::optional<std::int64_t> before) {
    co_return co_await read_page(conn, bets_sql, account_id, status, limit, before);
}

asio::awaitable<outcome<bets::bets_page>> list_bet_views(connection& conn, std::int64_t account_id,
                                                         bets::status_filter status,
                                                         std::int64_t limit,
                                                         std::optional<std::int64_t> before) {
    co_return co_await read_page(
        conn, status == bets::status_filter::open ? open_bet_views_sql : bet_views_sql, account_id,
        status, limit, before);
}

}  // namespace fulltime::db
