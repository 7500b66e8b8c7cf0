#include "fulltime/db/placement_statements.hpp"

#include "fulltime/db/read_router.hpp"
#include "fulltime/limits.hpp"

#include <functional>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// One statement, one round trip, its own transaction (autocommit): see
// db/functions/fulltime_place_group.sql. A prepared statement when the connection prepares
// statements: parsed and planned once per connection instead of at every group. The last column
// is the transaction's id when it wrote (NULL when every item was refused or replayed): a
// session's reads of the read model wait for the projector to pass it (docs/architecture.md,
// "Reads").
constexpr db::statement place_group_statement{
    "fulltime_place_group",
    "SELECT item, outcome, response::text, pg_current_xact_id_if_assigned()::text "
    "FROM fulltime_place_group($1::bigint[], $2::text[], $3::text[], $4::bigint[], "
    "$5::bigint[], $6::integer, $7::bigint[], $8::text[], $9::integer, $10::integer)"};

// A group of one: the per-item function, cheaper for one bet than the group's set-based
// bookkeeping (db/functions/fulltime_place.sql), fed from the same array parameters and answering
// with the same row shape.
constexpr db::statement place_one_statement{
    "fulltime_place",
    "SELECT 1, p.outcome, p.response::text, pg_current_xact_id_if_assigned()::text "
    "FROM fulltime_place(($1::bigint[])[1], ($2::text[])[1], ($3::text[])[1], "
    "($4::bigint[])[1], ($5::bigint[])[1], $6::integer, ($7::bigint[])[1], ($8::text[])[1], "
    "$9::integer, $10::integer) AS p"};

// Right after a commit, on the same session: the primary's WAL insert position is then past the
// commit record, so a standby that replayed up to it shows the commit.
constexpr const char* commit_lsn_sql = "SELECT pg_current_wal_insert_lsn()::text";

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

place_group_params encode_place_group(std::span<const place_group_item> items) {
    array_literal accounts;
    array_literal keys;
    array_literal fingerprints;
    array_literal selections;
    array_literal stakes;
    array_literal odds;
    array_literal accepts;
    for (const auto& it : items) {
        const auto& r = *it.request;
        accounts.add(r.account_id);
        keys.add(r.idempotency_key);
        fingerprints.add(it.fingerprint);
        selections.add(r.selection_id);
        stakes.add(r.stake_thousandths);
        odds.add(r.odds_units);
        accepts.add(bets::to_string(r.accept));
    }
    return place_group_params{accounts.str(), keys.str(), fingerprints.str(), selections.str(),
                              stakes.str(),   odds.str(), accepts.str(),      items.size()};
}

outcome<place_group_row> place_group_rows::at(int row) const {
    auto item = rows_.get<std::int32_t>(row, 0);
    auto outcome_text = rows_.get<std::string_view>(row, 1);
    auto response = rows_.get<std::string_view>(row, 2);
    // The transaction id is the statement's fourth column (place_group_statement); a caller's
    // own SELECT of the function's three columns (the tests') has none.
    auto xid = rows_.columns() > 3 ? rows_.get<std::optional<std::int64_t>>(row, 3)
                                   : outcome<std::optional<std::int64_t>>(std::nullopt);
    if (!item || !outcome_text || !response || !xid) {
        return failure{errc::bad_result, {}, "unexpected fulltime_place_group row"};
    }
    return place_group_row{*item, *outcome_text, *response,
                           static_cast<std::uint64_t>(xid->value_or(0))};
}

asio::awaitable<outcome<place_group_rows>> place_group(connection& conn,
                                                       const place_group_params& group,
                                                       std::int64_t lock_timeout_ms,
                                                       std::int64_t shard_hint,
                                                       std::chrono::milliseconds timeout) {
    auto rows = co_await conn.query_prepared(
        group.size == 1 ? place_one_statement : place_group_statement,
        params(group.accounts, group.keys, group.fingerprints, group.selections, group.stakes,
               limits::minor_digits_max, group.odds, group.accepts, lock_timeout_ms, shard_hint),
        timeout);
    if (!rows) {
        co_return rows.error();
    }
    co_return place_group_rows(std::move(*rows));
}

asio::awaitable<outcome<std::uint64_t>> read_commit_lsn(connection& conn) {
    auto rows = co_await conn.query(commit_lsn_sql);
    if (!rows) {
        co_return rows.error();
    }
    auto text = rows->get<std::string>(0, 0);
    auto lsn = text ? parse_lsn(*text) : std::nullopt;
    if (!lsn) {
        co_return failure{errc::bad_result, {}, "unexpected pg_current_wal_insert_lsn row"};
    }
    co_return *lsn;
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
