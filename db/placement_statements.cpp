#include "fulltime/db/placement_statements.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// One statement, one round trip, its own transaction (autocommit): see
// db/functions/fulltime_place_group.sql.
constexpr const char* place_group_sql =
    "SELECT item, outcome, response::text "
    "FROM fulltime_place_group($1::jsonb, $2::integer, $3::integer)";

constexpr const char* purge_sql =
    "DELETE FROM idempotency_keys WHERE (account_id, idempotency_key) IN ("
    "SELECT account_id, idempotency_key FROM idempotency_keys "
    "WHERE created_at < now() - make_interval(secs => $1::bigint) "
    "ORDER BY created_at LIMIT $2::bigint)";

asio::awaitable<outcome<std::int64_t>> purge_body(std::int64_t retention_s, std::int64_t batch_max,
                                                  connection& conn) {
    auto deleted = co_await conn.query(purge_sql, params(retention_s, batch_max));
    if (!deleted) {
        co_return deleted.error();
    }
    co_return deleted->affected_rows();
}

}  // namespace

std::string encode_place_group(std::span<const place_group_item> items) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& it : items) {
        const auto& r = *it.request;
        array.push_back({{"a", r.account_id},
                         {"k", r.idempotency_key},
                         {"f", it.fingerprint},
                         {"s", r.selection_id},
                         {"st", r.stake_minor},
                         {"o", r.odds_units},
                         {"ac", bets::to_string(r.accept)}});
    }
    return array.dump();
}

outcome<place_group_row> place_group_rows::at(int row) const {
    auto item = rows_.get<std::int32_t>(row, 0);
    auto outcome_text = rows_.get<std::string_view>(row, 1);
    auto response = rows_.get<std::string_view>(row, 2);
    if (!item || !outcome_text || !response) {
        return failure{errc::bad_result, {}, "unexpected fulltime_place_group row"};
    }
    return place_group_row{*item, *outcome_text, *response};
}

asio::awaitable<outcome<place_group_rows>> place_group(connection& conn, std::string group_json,
                                                       std::int64_t lock_timeout_ms,
                                                       std::int64_t shard_hint,
                                                       std::chrono::milliseconds timeout) {
    auto rows = co_await conn.query(place_group_sql,
                                    params(group_json, lock_timeout_ms, shard_hint), timeout);
    if (!rows) {
        co_return rows.error();
    }
    co_return place_group_rows(std::move(*rows));
}

asio::awaitable<outcome<std::int64_t>> purge_idempotency_keys(connection& conn,
                                                              std::int64_t retention_s,
                                                              std::int64_t batch_max,
                                                              transaction_options options) {
    auto deleted = co_await in_transaction(conn, options,
                                           std::bind_front(&purge_body, retention_s, batch_max));
    co_return deleted;
}

}  // namespace fulltime::db
