#include "fulltime/db/push_statements.hpp"

#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// The first position not yet read: transactions that were still running when the loop
// started (or later) are read; everything older is history.
constexpr const char* start_sql = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text";

// Rows after the cursor written by transactions that have all finished (xact_id below the
// snapshot's xmin), so no row can later appear behind the cursor. Only settlement_batch rows
// (and bet_settled rows written before migration 0004) are pushed, so only theirs carry a
// payload: every placement writes a bet_placed row, and converting and sending each one's
// payload only for the loop to skip it cost per bet.
constexpr const char* read_sql =
    "SELECT o.xact_id::text, o.outbox_id, o.topic, o.account_id, "
    "CASE WHEN o.topic IN ('settlement_batch', 'bet_settled') THEN o.payload::text END "
    "FROM outbox o "
    "WHERE (o.xact_id, o.outbox_id) > ($1::xid8, $2::bigint) "
    "  AND o.xact_id < pg_snapshot_xmin(pg_current_snapshot()) "
    "ORDER BY o.xact_id, o.outbox_id LIMIT $3::bigint";

template <class T>
std::optional<T> value_or_none(outcome<T> value) {
    if (!value) {
        return std::nullopt;
    }
    return std::move(*value);
}

}  // namespace

asio::awaitable<outcome<std::optional<std::string>>> read_outbox_start(connection& conn) {
    auto start = co_await conn.query(start_sql);
    if (!start) {
        co_return start.error();
    }
    if (start->rows() != 1) {
        co_return std::optional<std::string>{};
    }
    co_return value_or_none(start->get<std::string>(0, 0));
}

asio::awaitable<outcome<outbox_page>> read_outbox_page(connection& conn, std::string after_xact_id,
                                                       std::int64_t after_outbox_id,
                                                       std::int64_t rows_max) {
    auto rows = co_await conn.query(read_sql, params(after_xact_id, after_outbox_id, rows_max));
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

}  // namespace fulltime::db
