#pragma once
/// The outbox statements of the settlement push loop (net/settlement_pushes.cpp): its consumer's
/// cursor in outbox_cursors (opened at start, stored after each page), the next page of rows
/// after it, the currencies of the accounts a page pushes to, and the purge of rows every
/// consumer has read. The outbox is ordered by
/// (xact_id, outbox_id); a page holds only rows of transactions that have all finished, so no
/// row can later appear behind the cursor.

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace fulltime::db {

/// Holds a position in the outbox: the last row a consumer has read.
struct outbox_cursor {
    std::string xact_id;  ///< the row's writing transaction (xid8), as decimal text
    std::int64_t outbox_id = 0;
};

/// Returns `consumer`'s stored cursor. A consumer without a row gets one at the tail (after the
/// last possible row of the transaction before the snapshot's xmin: only rows written from then
/// on are read), inserted unless another process inserted it first, so two processes starting
/// at once read the same cursor.
boost::asio::awaitable<outcome<outbox_cursor>> open_outbox_cursor(connection& conn,
                                                                  std::string consumer);

/// Stores `cursor` as `consumer`'s (one UPDATE, its own transaction). Returns false when the
/// consumer has no row (it was deleted since open_outbox_cursor).
boost::asio::awaitable<outcome<bool>> store_outbox_cursor(connection& conn, std::string consumer,
                                                          outbox_cursor cursor);

/// Deletes at most `rows_max` (>= 1) outbox rows at or below the lowest cursor of all consumers,
/// oldest first, in one transaction (db/functions/fulltime_purge_outbox.sql); returns how many.
/// Without a consumer row nothing is deleted.
boost::asio::awaitable<outcome<std::int64_t>> purge_outbox(connection& conn, std::int64_t rows_max);

/// Holds one outbox row. Columns that are NULL (or do not parse) are nullopt.
struct outbox_row {
    std::string xact_id;  ///< the writing transaction's xid8, as decimal text
    std::int64_t outbox_id = 0;
    std::optional<std::string> topic;
    std::optional<std::int64_t> account_id;
    std::optional<std::string> payload;  ///< JSON text; settlement_batch and bet_settled rows only
};

/// Holds one page of the outbox.
struct outbox_page {
    std::vector<outbox_row> rows;  ///< rows without an xact_id or outbox_id are left out
    bool full = false;             ///< the page reached its bound: more rows may follow
};

/// Reads at most `rows_max` outbox rows after `after` in order, from transactions below the
/// current snapshot's xmin.
boost::asio::awaitable<outcome<outbox_page>> read_outbox_page(connection& conn, outbox_cursor after,
                                                              std::int64_t rows_max);

/// Reads the currency of each of `account_ids` (one statement; an account that does not exist
/// is left out). A settlement's outbox entry carries no currency, and a payout is formatted with
/// its account's decimals; an account's currency never changes.
boost::asio::awaitable<outcome<std::unordered_map<std::int64_t, std::string>>>
read_account_currencies(connection& conn, const std::vector<std::int64_t>& account_ids);

}  // namespace fulltime::db
