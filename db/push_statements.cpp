#include "fulltime/db/push_statements.hpp"

#include "fulltime/db/params.hpp"

#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// A new consumer starts at the tail: after the last possible row (outbox_id's maximum) of the
// transaction before the snapshot's xmin. Transactions that were still running then, or began
// later, are read; everything older is history. ON CONFLICT DO NOTHING: of two processes
// creating the row at once, the first insert wins and both read it back (read_cursor_sql, a
// statement of its own, so its snapshot sees the winner's row).
constexpr const char* create_cursor_sql =
    "INSERT INTO outbox_cursors (consumer, last_xact_id, last_outbox_id) "
    "VALUES ($1::text, (pg_snapshot_xmin(pg_current_snapshot())::text::numeric - 1)::text::xid8, "
    "9223372036854775807) "
    "ON CONFLICT (consumer) DO NOTHING";

constexpr const char* read_cursor_sql =
    "SELECT last_xact_id::text, last_outbox_id FROM outbox_cursors WHERE consumer = $1::text";

constexpr const char* store_cursor_sql =
    "UPDATE outbox_cursors SET last_xact_id = $2::xid8, last_outbox_id = $3::bigint, "
    "updated_at = now() WHERE consumer = $1::text";

constexpr const char* purge_sql = "SELECT fulltime_purge_outbox($1::integer)";

// Rows after the cursor written by transactions that have all finished (xact_id below the
// snapshot's xmin), so no row can later appear behind the cursor. Only settlement_batch rows
// (and bet_settled rows written before migration 0004) are pushed, so only theirs carry a
// payload: every placement writes a bet_placed row, and converting and sending each one's
// payload only for the loop to skip it cost per bet.
constexpr const char* outbox_read_sql =
    "SELECT o.xact_id::text, o.outbox_id, o.topic, o.account_id, "
    "CASE WHEN o.topic IN ('settlement_batch', 'bet_settled') THEN o.payload::text END "
    "FROM outbox o "
    "WHERE (o.xact_id, o.outbox_id) > ($1::xid8, $2::bigint) "
    "  AND o.xact_id < pg_snapshot_xmin(pg_current_snapshot()) "
    "ORDER BY o.xact_id, o.outbox_id LIMIT $3::bigint";

constexpr const char* account_currencies_sql =
    "SELECT a.account_id, a.currency FROM accounts a WHERE a.account_id = ANY ($1::bigint[])";

template <class T>
std::optional<T> value_or_none(outcome<T> value) {
    if (!value) {
        return std::nullopt;
    }
    return std::move(*value);
}

}  // namespace

asio::awaitable<outcome<outbox_cursor>> open_outbox_cursor(connection& conn, std::string consumer) {
    auto created = co_await conn.query(create_cursor_sql, params(consumer));
    if (!created) {
        co_return created.error();
    }
    auto stored = co_await conn.query(read_cursor_sql, params(consumer));
    if (!stored) {
        co_return stored.error();
    }
    if (stored->rows() != 1) {
        // Deleted between the two statements: the caller tries again on its next pass.
        co_return failure{errc::bad_result, {}, "outbox cursor of " + consumer + " not found"};
    }
    auto xact = stored->get<std::string>(0, 0);
    if (!xact) {
        co_return xact.error();
    }
    auto id = stored->get<std::int64_t>(0, 1);
    if (!id) {
        co_return id.error();
    }
    outbox_cursor cursor{std::move(*xact), *id};
    co_return cursor;
}

asio::awaitable<outcome<bool>> store_outbox_cursor(connection& conn, std::string consumer,
                                                   outbox_cursor cursor) {
    auto stored =
        co_await conn.query(store_cursor_sql, params(consumer, cursor.xact_id, cursor.outbox_id));
    if (!stored) {
        co_return stored.error();
    }
    co_return stored->affected_rows() == 1;
}

asio::awaitable<outcome<std::int64_t>> purge_outbox(connection& conn, std::int64_t rows_max) {
    auto purged = co_await conn.query(purge_sql, params(rows_max));
    if (!purged) {
        co_return purged.error();
    }
    if (purged->rows() != 1) {
        co_return failure{errc::bad_result, {}, "fulltime_purge_outbox returned no row"};
    }
    co_return purged->get<std::int64_t>(0, 0);
}

asio::awaitable<outcome<outbox_page>> read_outbox_page(connection& conn, outbox_cursor after,
                                                       std::int64_t rows_max) {
    auto rows =
        co_await conn.query(outbox_read_sql, params(after.xact_id, after.outbox_id, rows_max));
    if (!rows) {
        co_return rows.error();
    }
    outbox_page page;
    page.rows.reserve(static_cast<std::size_t>(rows->rows()));
    for (int row = 0; row < rows->rows(); ++row) {
        auto xact = rows->get<std::string>(row, 0);
        auto id = rows->get<std::int64_t>(row, 1);
        if (!xact || !id) {
            continue;
        }
        page.rows.push_back(outbox_row{std::move(*xact), *id,
                                       value_or_none(rows->get<std::string>(row, 2)),
                                       value_or_none(rows->get<std::int64_t>(row, 3)),
                                       value_or_none(rows->get<std::string>(row, 4))});
    }
    page.full = rows->rows() >= rows_max;
    co_return page;
}

asio::awaitable<outcome<std::unordered_map<std::int64_t, std::string>>> read_account_currencies(
    connection& conn, const std::vector<std::int64_t>& account_ids) {
    std::unordered_map<std::int64_t, std::string> out;
    if (account_ids.empty()) {
        co_return out;
    }
    array_literal ids;
    for (auto id : account_ids) {
        ids.add(id);
    }
    auto rows = co_await conn.query(account_currencies_sql, params(ids.str()));
    if (!rows) {
        co_return rows.error();
    }
    for (int r = 0; r < rows->rows(); ++r) {
        auto id = rows->get<std::int64_t>(r, 0);
        auto currency = rows->get<std::string>(r, 1);
        if (!id || !currency) {
            co_return failure{errc::bad_result, {}, "unexpected accounts row"};
        }
        out.emplace(*id, std::move(*currency));
    }
    co_return out;
}

}  // namespace fulltime::db
