// The push loop's outbox statements (db/push_statements.cpp) on a scratch database with the real
// schema: its consumer's cursor in outbox_cursors (created at the tail, stored and read back, the
// same for processes opening it at once), and the purge of the rows every consumer has read.
//
// Transaction ids are the cluster's, shared with the tests running beside this one, and a page
// holds only rows of transactions below the snapshot's xmin, which their transactions may hold
// back: the cases wait for xmin to pass a row (with a deadline) instead of assuming it did.

#include "db/db_support.hpp"

#include "fulltime/db/migrations.hpp"
#include "fulltime/db/push_statements.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;

namespace {

constexpr std::int64_t id_max = std::numeric_limits<std::int64_t>::max();

awaitable<std::unique_ptr<db::connection>> migrated(std::string url) {
    auto conn = co_await open_connection(url);
    auto report = co_await db::migrate(*conn, resources::migrations());
    FT_REQUIRE_OK(report);
    // The cases are about the consumers they make. The read model's projector, whose cursor
    // migration 0006 makes and which no case here runs, would hold the purge at its cursor.
    FT_AWAIT_OK(co_await conn->query("DELETE FROM outbox_cursors WHERE consumer = 'projector'"));
    co_return conn;
}

/// Returns the first column of the first row of `sql` as text.
awaitable<std::string> text_scalar(db::connection& conn, std::string sql, db::params args = {}) {
    auto r = co_await conn.query(std::move(sql), std::move(args));
    FT_REQUIRE_OK(r);
    REQUIRE(r->rows() >= 1);
    co_return std::string{r->text(0, 0)};
}

/// Writes `rows` outbox rows in one transaction; returns their keys in order.
awaitable<std::vector<db::outbox_cursor>> write_rows(db::connection& conn, std::int64_t rows) {
    auto r = co_await conn.query(
        "INSERT INTO outbox (topic, account_id, payload) "
        "SELECT 'bet_placed', g, '{}' FROM generate_series(1, $1::bigint) g "
        "RETURNING xact_id::text, outbox_id",
        db::params(rows));
    FT_REQUIRE_OK(r);
    std::vector<db::outbox_cursor> keys;
    for (int i = 0; i < r->rows(); ++i) {
        keys.push_back({std::string{r->text(i, 0)}, r->get<std::int64_t>(i, 1).value()});
    }
    std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
        return a.outbox_id < b.outbox_id;  // one transaction: key order is id order
    });
    co_return keys;
}

/// Waits until the snapshot's xmin has passed transaction `xact_id` (all older transactions of
/// the cluster have finished), so its rows are history to a new cursor and readable after one.
awaitable<void> wait_xmin_past(db::connection& conn, std::string xact_id) {
    const auto until = steady::now() + 30s;
    for (;;) {
        const auto past = co_await text_scalar(
            conn, "SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8", db::params(xact_id));
        if (past == "t") {
            co_return;
        }
        REQUIRE_MESSAGE(steady::now() < until, "xmin never passed " << xact_id);
        co_await sleep_for(20ms);
    }
}

/// Returns the outbox ids of the rows a page after `after` reads, once `xact_id` is readable.
awaitable<std::vector<std::int64_t>> page_ids(db::connection& conn, db::outbox_cursor after,
                                              std::string xact_id) {
    co_await wait_xmin_past(conn, xact_id);
    auto page = co_await db::read_outbox_page(conn, after, 1000);
    FT_REQUIRE_OK(page);
    std::vector<std::int64_t> ids;
    for (const auto& row : page->rows) {
        ids.push_back(row.outbox_id);
    }
    co_return ids;
}

awaitable<std::int64_t> outbox_rows(db::connection& conn) {
    co_return std::stoll(co_await text_scalar(conn, "SELECT count(*) FROM outbox"));
}

awaitable<void> set_cursor(db::connection& conn, std::string consumer, db::outbox_cursor at) {
    FT_AWAIT_OK(
        co_await conn.query("INSERT INTO outbox_cursors (consumer, last_xact_id, last_outbox_id) "
                            "VALUES ($1, $2::xid8, $3::bigint)",
                            db::params(consumer, at.xact_id, at.outbox_id)));
}

awaitable<void> created_at_the_tail(std::string url) {
    auto conn = co_await migrated(url);
    const auto history = co_await write_rows(*conn, 3);
    co_await wait_xmin_past(*conn, history.back().xact_id);
    const auto xmin_before =
        std::stoull(co_await text_scalar(*conn, "SELECT pg_snapshot_xmin(pg_current_snapshot())"));

    auto opened = co_await db::open_outbox_cursor(*conn, "push");
    FT_REQUIRE_OK(opened);
    const auto xmin_after =
        std::stoull(co_await text_scalar(*conn, "SELECT pg_snapshot_xmin(pg_current_snapshot())"));
    // After the last possible row of the transaction before the xmin it was created with.
    const auto cursor_xact = std::stoull(opened->xact_id);
    CHECK(cursor_xact + 1 >= xmin_before);
    CHECK(cursor_xact + 1 <= xmin_after);
    CHECK(opened->outbox_id == id_max);
    const auto row = co_await text_scalar(
        *conn,
        "SELECT last_xact_id::text || ' ' || last_outbox_id FROM outbox_cursors "
        "WHERE consumer = 'push'");
    CHECK(row == opened->xact_id + " " + std::to_string(id_max));

    // The rows written before are history; a row written after is the first one read.
    const auto fresh = co_await write_rows(*conn, 1);
    const auto ids = co_await page_ids(*conn, *opened, fresh.back().xact_id);
    CHECK(ids == std::vector<std::int64_t>{fresh.back().outbox_id});
}

awaitable<void> stored_and_read_back(std::string url) {
    auto conn = co_await migrated(url);
    auto opened = co_await db::open_outbox_cursor(*conn, "push");
    FT_REQUIRE_OK(opened);
    const auto rows = co_await write_rows(*conn, 5);

    auto stored = co_await db::store_outbox_cursor(*conn, "push", rows[2]);
    FT_REQUIRE_OK(stored);
    CHECK(*stored);
    // Opening again (a restart) resumes after the stored cursor, not at the tail.
    auto again = co_await db::open_outbox_cursor(*conn, "push");
    FT_REQUIRE_OK(again);
    CHECK(again->xact_id == rows[2].xact_id);
    CHECK(again->outbox_id == rows[2].outbox_id);
    const auto ids = co_await page_ids(*conn, *again, rows.back().xact_id);
    CHECK(ids == std::vector<std::int64_t>{rows[3].outbox_id, rows[4].outbox_id});
    const auto consumers = co_await text_scalar(*conn, "SELECT count(*) FROM outbox_cursors");
    CHECK(consumers == "1");

    // A consumer without a row stores nothing and says so.
    auto missing = co_await db::store_outbox_cursor(*conn, "nobody", rows[2]);
    FT_REQUIRE_OK(missing);
    CHECK_FALSE(*missing);
}

awaitable<db::outbox_cursor> open_on_own_connection(std::string url) {
    auto conn = co_await open_connection(url);
    auto opened = co_await db::open_outbox_cursor(*conn, "push");
    FT_REQUIRE_OK(opened);
    co_return *opened;
}

awaitable<void> creators_agree(std::string url) {
    auto conn = co_await migrated(url);
    // Processes starting at once, each on its own connection: one row, one cursor for all.
    std::vector<awaitable<db::outbox_cursor>> openers;
    for (int i = 0; i < 6; ++i) {
        openers.push_back(open_on_own_connection(url));
    }
    const auto cursors = co_await run_all(std::move(openers));
    for (const auto& c : cursors) {
        CHECK(c.xact_id == cursors.front().xact_id);
        CHECK(c.outbox_id == cursors.front().outbox_id);
    }
    const auto consumers = co_await text_scalar(*conn, "SELECT count(*) FROM outbox_cursors");
    CHECK(consumers == "1");

    // A row another process created first is the one read, whatever the tail is now.
    // (Each cursor is built before the co_await: GCC 12 miscompiles a braced temporary in a
    // co_await's arguments.)
    const db::outbox_cursor created_first{"5", 7};
    co_await set_cursor(*conn, "late", created_first);
    auto late = co_await db::open_outbox_cursor(*conn, "late");
    FT_REQUIRE_OK(late);
    CHECK(late->xact_id == "5");
    CHECK(late->outbox_id == 7);
}

awaitable<void> purges_below_the_lowest_cursor(std::string url) {
    auto conn = co_await migrated(url);
    // 100 rows written by 10 transactions, in key order.
    std::vector<db::outbox_cursor> keys;
    for (int t = 0; t < 10; ++t) {
        const auto rows = co_await write_rows(*conn, 10);
        keys.insert(keys.end(), rows.begin(), rows.end());
    }
    auto purged = co_await db::purge_outbox(*conn, 10);
    FT_REQUIRE_OK(purged);
    CHECK(*purged == 0);  // no consumer: nothing is consumed
    const auto kept = co_await outbox_rows(*conn);
    CHECK(kept == 100);

    // Consumer a has read 73 rows, consumer b 41: rows 1..41 go, in order, 10 per batch.
    co_await set_cursor(*conn, "a", keys[72]);
    co_await set_cursor(*conn, "b", keys[40]);
    std::vector<std::int64_t> batches;
    for (int i = 0; i < 6; ++i) {
        auto deleted = co_await db::purge_outbox(*conn, 10);
        FT_REQUIRE_OK(deleted);
        batches.push_back(*deleted);
    }
    CHECK(batches == std::vector<std::int64_t>{10, 10, 10, 10, 1, 0});
    const auto left = co_await outbox_rows(*conn);
    CHECK(left == 59);
    const auto oldest = co_await text_scalar(*conn, "SELECT min(outbox_id) FROM outbox");
    CHECK(oldest == std::to_string(keys[41].outbox_id));

    // b reads on to the end of a transaction (the tail's form: the last possible id): now a's
    // cursor is the lowest, and the purge stops at it.
    const db::outbox_cursor transaction_end{keys[95].xact_id, id_max};
    FT_AWAIT_OK(co_await db::store_outbox_cursor(*conn, "b", transaction_end));
    auto deleted = co_await db::purge_outbox(*conn, 1000);
    FT_REQUIRE_OK(deleted);
    CHECK(*deleted == 73 - 41);
    const auto oldest_now = co_await text_scalar(*conn, "SELECT min(outbox_id) FROM outbox");
    CHECK(oldest_now == std::to_string(keys[73].outbox_id));
}

awaitable<void> purge_walks_the_key(std::string url) {
    auto conn = co_await migrated(url);
    std::vector<db::outbox_cursor> first;
    for (int t = 0; t < 100; ++t) {
        const auto rows = co_await write_rows(*conn, 1000);
        if (t == 0) {
            first = rows;
        }
    }
    FT_AWAIT_OK(co_await conn->query("ANALYZE outbox"));
    const auto middle = co_await text_scalar(
        *conn, "SELECT xact_id::text FROM outbox ORDER BY xact_id, outbox_id OFFSET 50000 LIMIT 1");
    const db::outbox_cursor half{middle, 0};
    co_await set_cursor(*conn, "push", half);

    // A connection of its own, so its transaction's table counters count the purge only.
    auto purger = co_await open_connection(url);
    FT_AWAIT_OK(co_await purger->query("BEGIN"));
    auto deleted = co_await db::purge_outbox(*purger, 1000);
    FT_REQUIRE_OK(deleted);
    CHECK(*deleted == 1000);
    // The outbox is partitioned (docs/schema.md, "Time partitions"): its partitions are scanned.
    const auto scans = co_await text_scalar(
        *purger,
        "SELECT sum(seq_scan) || ' ' || (sum(idx_scan) > 0) FROM pg_stat_xact_user_tables "
        "WHERE relid IN (SELECT relid FROM pg_partition_tree('outbox') WHERE isleaf)");
    CHECK(scans == "0 true");
    FT_AWAIT_OK(co_await purger->query("COMMIT"));
    // The oldest thousand: the first transaction's rows.
    const auto oldest = co_await text_scalar(*conn, "SELECT min(outbox_id) FROM outbox");
    CHECK(oldest == std::to_string(first.back().outbox_id + 1));
    const auto left = co_await outbox_rows(*conn);
    CHECK(left == 99'000);
}

/// Runs `scenario` on a database of its own, a copy of the migrated template.
void on_a_migrated_database(awaitable<void> (*scenario)(std::string)) {
    scratch_database db{scratch_contents::migrated};
    asio::io_context ioc;
    run(ioc, scenario(db.url()));
}

}  // namespace

TEST_CASE("outbox cursor: a consumer without a row gets one at the tail") {
    on_a_migrated_database(created_at_the_tail);
}

TEST_CASE("outbox cursor: stored, then read back by the next open") {
    on_a_migrated_database(stored_and_read_back);
}

TEST_CASE("outbox cursor: processes opening a missing cursor at once read the same row") {
    on_a_migrated_database(creators_agree);
}

TEST_CASE("outbox purge: at most N rows per batch, at or below the lowest cursor, none without") {
    on_a_migrated_database(purges_below_the_lowest_cursor);
}

TEST_CASE("outbox purge: a batch of 100,000 rows walks the key, no sequential scan") {
    on_a_migrated_database(purge_walks_the_key);
}
