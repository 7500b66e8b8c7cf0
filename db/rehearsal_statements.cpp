#include "fulltime/db/rehearsal_statements.hpp"

#include "fulltime/db/params.hpp"

#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// Sessions of this database only, never the caller's own. starts_with, not LIKE: an
// application name's '_' or '%' must not match anything but itself.
constexpr const char* terminate_sql =
    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "  AND starts_with(application_name, $1)";

constexpr const char* hold_sql =
    "SELECT count(*) FROM (SELECT 1 FROM accounts WHERE account_id = $1::bigint FOR UPDATE) x";

constexpr const char* keyed_bets_sql =
    "SELECT idempotency_key, bet_id FROM bets WHERE starts_with(idempotency_key, $1) "
    "ORDER BY idempotency_key, bet_id";

constexpr const char* unsettled_sql =
    "SELECT count(*) FROM bets b WHERE b.market_id = ANY($1::bigint[]) "
    "  AND NOT EXISTS (SELECT 1 FROM bet_settlements s WHERE s.bet_id = b.bet_id "
    "    AND s.placed_at = b.placed_at)";

asio::awaitable<outcome<std::int64_t>> one_count(connection& conn, const char* sql, params args) {
    auto rows = co_await conn.query(sql, std::move(args));
    if (!rows) {
        co_return rows.error();
    }
    co_return rows->get<std::int64_t>(0, 0);
}

}  // namespace

asio::awaitable<outcome<std::int64_t>> terminate_sessions(connection& conn,
                                                          std::string application_prefix) {
    co_return co_await one_count(conn, terminate_sql, params(application_prefix));
}

asio::awaitable<outcome<bool>> hold_account_row(connection& conn, std::int64_t account_id) {
    auto begin = co_await conn.query("BEGIN");
    if (!begin) {
        co_return begin.error();
    }
    auto held = co_await one_count(conn, hold_sql, params(account_id));
    if (!held) {
        co_return held.error();
    }
    co_return *held == 1;
}

asio::awaitable<outcome<void>> release_row(connection& conn) {
    auto done = co_await conn.query("ROLLBACK");
    if (!done) {
        co_return done.error();
    }
    co_return outcome<void>{};
}

asio::awaitable<outcome<std::vector<keyed_bet>>> read_keyed_bets(connection& conn,
                                                                 std::string key_prefix) {
    auto rows = co_await conn.query(keyed_bets_sql, params(key_prefix));
    if (!rows) {
        co_return rows.error();
    }
    std::vector<keyed_bet> out;
    out.reserve(static_cast<std::size_t>(rows->rows()));
    for (int row = 0; row < rows->rows(); ++row) {
        auto key = rows->get<std::string>(row, 0);
        auto id = rows->get<std::int64_t>(row, 1);
        if (key && id) {
            out.push_back(keyed_bet{std::move(*key), *id});
        }
    }
    co_return out;
}

asio::awaitable<outcome<std::int64_t>> count_unsettled_bets(connection& conn,
                                                            std::vector<std::int64_t> market_ids) {
    array_literal ids;
    for (auto id : market_ids) {
        ids.add(id);
    }
    co_return co_await one_count(conn, unsettled_sql, params(ids.str()));
}

}  // namespace fulltime::db
