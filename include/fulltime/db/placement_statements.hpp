#pragma once
/// Placement in SQL: one call of fulltime_place_group per group of bets (natural group commit;
/// the rules are in db/functions/fulltime_place_group.sql), and the purge of expired idempotency
/// keys. The retries, deadlines and connection handling around them are the placement actor's
/// (actors/placement_worker.cpp).

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/db/connection.hpp"
#include "fulltime/db/params.hpp"
#include "fulltime/db/transaction.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace fulltime::db {

/// Holds one placement of a group: the validated request and its fingerprint, as
/// fulltime_place_group reads them. Both are borrowed from the caller for the encoding only.
struct place_group_item {
    const bets::place_request* request = nullptr;  ///< never null
    std::string_view fingerprint;
};

/// Holds a group as fulltime_place_group's seven item parameters: one PostgreSQL array literal
/// each (db::array_literal), element i of every array being item i of the group.
struct place_group_params {
    std::string accounts;      ///< bigint[]
    std::string keys;          ///< text[]: idempotency keys, any characters
    std::string fingerprints;  ///< text[]
    std::string selections;    ///< bigint[]
    std::string stakes;        ///< bigint[]: thousandths (p_stake_digits = 3)
    std::string odds;          ///< bigint[]: units of 1/10000
    std::string accepts;       ///< text[]: exact | better | any
    std::size_t size = 0;      ///< the number of items
};

/// Encodes a group as the array parameters fulltime_place_group reads (bound parameters, so keys
/// with any characters need no escaping beyond the array literal's). Encode once per group and
/// resend the same parameters after a retryable failure.
place_group_params encode_place_group(std::span<const place_group_item> items);

/// Holds one row of fulltime_place_group: the 1-based item of the group it answers, its outcome
/// (placed, rejected, replayed, key_reused) and the function's response JSON. The views point
/// into the place_group_rows they were read from.
struct place_group_row {
    std::int32_t item = 0;
    std::string_view outcome;
    std::string_view response;
    std::uint64_t xid = 0;  ///< the transaction's id when it wrote; 0 when it wrote nothing
};

/// Holds the rows of one fulltime_place_group call. Rows are read one at a time, so that a row
/// of unexpected shape fails alone and the others still answer their bets.
class place_group_rows {
public:
    /// Takes the result of the call.
    explicit place_group_rows(result rows) : rows_(std::move(rows)) {}

    /// Returns the number of rows.
    int size() const noexcept { return rows_.rows(); }

    /// Reads row `row` (0-based); errc::bad_result when a column is NULL or does not parse. The
    /// returned views are valid while this object lives.
    outcome<place_group_row> at(int row) const;

private:
    result rows_;
};

/// Calls fulltime_place_group once with `group` (from encode_place_group): one statement, one
/// round trip, its own transaction (autocommit), run as a prepared statement when the connection
/// prepares statements (connection::query_prepared). `lock_timeout_ms` is the function's own lock
/// wait, `shard_hint` the exposure shard it starts with; `timeout` bounds the round trip.
boost::asio::awaitable<outcome<place_group_rows>> place_group(connection& conn,
                                                              const place_group_params& group,
                                                              std::int64_t lock_timeout_ms,
                                                              std::int64_t shard_hint,
                                                              std::chrono::milliseconds timeout);

/// Returns the primary's WAL insert position, read on `conn` right after a placement committed
/// there: a standby that has replayed up to it shows that placement (read-your-writes).
boost::asio::awaitable<outcome<std::uint64_t>> read_commit_lsn(connection& conn);

/// Deletes at most `batch_max` idempotency keys older than `retention_s` seconds, oldest first,
/// in one short transaction with `options`' timeouts. Returns the number of keys deleted; fewer
/// than `batch_max` means no expired key is left.
boost::asio::awaitable<outcome<std::int64_t>> purge_idempotency_keys(connection& conn,
                                                                     std::int64_t retention_s,
                                                                     std::int64_t batch_max,
                                                                     transaction_options options);

}  // namespace fulltime::db
