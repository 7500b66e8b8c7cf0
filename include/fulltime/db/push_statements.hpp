#pragma once
/// The outbox reads of the settlement push loop (net/settlement_pushes.cpp): where to start, and
/// the next page of rows after a cursor. The outbox is ordered by (xact_id, outbox_id); a page
/// holds only rows of transactions that have all finished, so no row can later appear behind the
/// cursor.

#include "fulltime/db/connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fulltime::db {

/// Returns the xmin of the current snapshot as decimal text: the first transaction whose outbox
/// rows are not yet history. nullopt when the server returned no value.
boost::asio::awaitable<outcome<std::optional<std::string>>> read_outbox_start(connection& conn);

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

/// Reads at most `rows_max` outbox rows after (`after_xact_id`, `after_outbox_id`) in order,
/// from transactions below the current snapshot's xmin.
boost::asio::awaitable<outcome<outbox_page>> read_outbox_page(connection& conn,
                                                              std::string after_xact_id,
                                                              std::int64_t after_outbox_id,
                                                              std::int64_t rows_max);

}  // namespace fulltime::db
