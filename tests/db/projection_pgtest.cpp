// The read model (docs/schema.md, "Read model"; db/functions/fulltime_project*.sql,
// db/projection_statements.cpp) on a scratch database with the real schema: bets placed and
// settled by the engine's own SQL functions (a result, its correction, a cancel, a result rolled
// back so that its bets are open again), projected page by page with small pages; the read
// model equals the write tables (verify, and compared directly: the bettor's pages from both,
// the market summaries against an aggregate of their own); applying the outbox again changes
// nothing; a rebuild, from the live tables or from empty ones, gives the same rows; verify finds
// what was broken on purpose; and the bettor's pages by "before" walk every bet once. Also the
// plans that a connection keeps (a projector page's, a settlement step's, made on tables
// vacuumed empty) read by key: no sequential scan; and a page's probes of bet_view_open count
// its settled bets, not the table's rows, with the plan made when the table was small. A
// horizon left on a full page's last transaction moves past it at the next page, once.
//
// Transaction ids are the cluster's, shared with the tests running beside this one, and the
// projector reads only rows below the snapshot's xmin, which their transactions may hold back:
// the cases project until the cursor reaches the outbox's last row and the horizon
// (consumed_below) passes its transaction, with a deadline, instead of assuming one page reads
// everything.

#include "db/db_support.hpp"

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/db/bets_statements.hpp"
#include "fulltime/db/projection_statements.hpp"
#include "support/engine_fixture.hpp"

#include <boost/asio/io_context.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;
using nlohmann::json;

namespace {

constexpr const char* projector = "projector";

/// Stores a result event as the feed does; requires it stored.
void record(const engine& e, std::int64_t market, int seq, const std::string& kind,
            const std::string& payload = "{}") {
    const auto m = std::to_string(market);
    REQUIRE(e.text("SELECT outcome FROM fulltime_record_result(" + m + ", " + std::to_string(seq) +
                   ", 'm" + m + "-" + std::to_string(seq) + "', '" + kind + "', '" + payload +
                   "'::jsonb, 'test')") == "stored");
}

/// Returns a result payload in which `winner` wins and every other selection loses.
std::string winner(std::int64_t selection) {
    return R"({"outcomes":[{"selection_id":)" + std::to_string(selection) +
           R"(,"win":true,"void_factor":0,"dead_heat_factor":10000}]})";
}

/// Runs the settlement's own step on `market` in batches of 7 until it has nothing left.
void settle(const engine& e, std::int64_t market) {
    for (int step = 0; step < 2000; ++step) {
        const auto status = e.text("SELECT status FROM fulltime_settle_step(" +
                                   std::to_string(market) + ", 7, 1000)");
        if (status == "idle") {
            return;
        }
        if (status == "fenced") {
            std::this_thread::sleep_for(5ms);
        }
    }
    FAIL("market " << market << " never finished settling");
}

/// Returns the outbox's last row as "xact_id outbox_id" ("0 0" when it is empty): once the
/// projector's cursor reaches it and its horizon passes its transaction, every write committed
/// before this call is in the read model. (Not a fresh transaction id: the horizon only moves
/// past rows it applies, and while a transaction of another test holds the cluster's xmin back,
/// the last page's horizon can stay below an id taken after every write.)
std::string outbox_tail(const engine& e) {
    return e.text(
        "SELECT coalesce((SELECT xact_id::text || ' ' || outbox_id FROM outbox "
        "ORDER BY xact_id DESC, outbox_id DESC LIMIT 1), '0 0')");
}

/// Called after each page with the connection and what the page did.
using page_hook = std::function<awaitable<void>(db::connection&, const db::projection_step&)>;

/// Projects on `conn` in pages of `rows_max` until the cursor reaches `tail` (outbox_tail) and
/// the horizon passes its transaction, calling `after_page` after each; returns the pages run.
awaitable<int> project_past_on(db::connection& conn, std::string tail, std::int64_t rows_max,
                               page_hook after_page = {}) {
    const auto space = tail.find(' ');
    const auto xact = tail.substr(0, space);
    const auto id = tail.substr(space + 1);
    const auto until = steady::now() + 30s;
    int pages = 0;
    for (;;) {
        auto step = co_await db::project_page(conn, projector, rows_max);
        FT_REQUIRE_OK(step);
        ++pages;
        CHECK(step->rows <= rows_max);
        if (after_page) {
            co_await after_page(conn, *step);
        }
        auto past = co_await conn.query(
            "SELECT $1::xid8 > $2::xid8 AND (c.last_xact_id, c.last_outbox_id) >= "
            "($2::xid8, $3::bigint) FROM outbox_cursors c WHERE c.consumer = $4",
            db::params(step->consumed_below, xact, id, std::string(projector)));
        FT_REQUIRE_OK(past);
        if (step->caught_up && past->text(0, 0) == "t") {
            co_return pages;
        }
        REQUIRE_MESSAGE(steady::now() < until, "the projector never passed " << tail);
        if (step->caught_up) {
            co_await sleep_for(20ms);
        }
    }
}

/// The same on a connection of its own.
awaitable<int> project_past(std::string url, std::string tail, std::int64_t rows_max) {
    auto conn = co_await open_connection(url);
    co_return co_await project_past_on(*conn, std::move(tail), rows_max);
}

/// Projects everything written so far in pages of `rows_max`.
int project_all(const engine& e, std::int64_t rows_max = 7) {
    asio::io_context ioc;
    return run(ioc, project_past(e.url(), outbox_tail(e), rows_max));
}

awaitable<std::vector<db::projection_mismatch>> verify_on(std::string url) {
    auto conn = co_await open_connection(url);
    auto found = co_await db::verify_projection(*conn, projector);
    FT_REQUIRE_OK(found);
    co_return std::move(*found);
}

/// Returns verify's findings, one line each.
std::vector<std::string> verify(const engine& e) {
    asio::io_context ioc;
    std::vector<std::string> lines;
    for (const auto& m : run(ioc, verify_on(e.url()))) {
        lines.push_back(m.kind + " bet " + (m.bet_id ? std::to_string(*m.bet_id) : "-") +
                        " market " + (m.market_id ? std::to_string(*m.market_id) : "-") +
                        " expected " + m.expected.value_or("NULL") + " actual " +
                        m.actual.value_or("NULL"));
    }
    return lines;
}

awaitable<db::rebuild_report> rebuild_on(std::string url) {
    auto conn = co_await open_connection(url, 60s);
    auto report = co_await db::rebuild_projection(*conn, projector);
    FT_REQUIRE_OK(report);
    co_return std::move(*report);
}

db::rebuild_report rebuild(const engine& e) {
    asio::io_context ioc;
    return run(ioc, rebuild_on(e.url()));
}

/// Returns every column of every bet_views row, in key order.
std::string bet_views_rows(const engine& e) {
    return e.text(
        "SELECT coalesce(string_agg(v::text, E'\\n' ORDER BY v.account_id, v.bet_id), '') "
        "FROM bet_views v");
}

/// Returns market_views, every column but updated_at (the time of the row's last change, which
/// a rebuild is), or with it.
std::string market_views_rows(const engine& e, bool with_updated_at = false) {
    return e.text(std::string("SELECT coalesce(string_agg(ROW(m.market_id, m.currency, m.bets, "
                              "m.stake, m.open_bets, m.open_stake, m.settled_bets, m.payout") +
                  (with_updated_at ? ", m.updated_at" : "") +
                  ")::text, E'\\n' ORDER BY m.market_id, m.currency), '') FROM market_views m");
}

/// Returns the market summaries as the write tables give them, with the effective settlement
/// written as docs/schema.md's query (not through the read model's views), in
/// market_views_rows' shape.
std::string market_summaries_from_bets(const engine& e) {
    return e.text(
        "WITH eff AS (SELECT DISTINCT ON (s.bet_id) s.bet_id, s.payout FROM bet_settlements s "
        "  WHERE NOT s.reversal AND NOT EXISTS (SELECT 1 FROM bet_settlements r "
        "    WHERE r.bet_id = s.bet_id AND r.version = s.version AND r.reversal) "
        "  ORDER BY s.bet_id, s.version DESC), "
        "m AS (SELECT b.market_id, b.currency, count(*) AS bets, sum(b.stake) AS stake, "
        "  count(*) FILTER (WHERE eff.bet_id IS NULL) AS open_bets, "
        "  coalesce(sum(b.stake) FILTER (WHERE eff.bet_id IS NULL), 0) AS open_stake, "
        "  count(eff.bet_id) AS settled_bets, coalesce(sum(eff.payout), 0) AS payout "
        "  FROM bets b LEFT JOIN eff ON eff.bet_id = b.bet_id GROUP BY 1, 2) "
        "SELECT coalesce(string_agg(ROW(m.market_id, m.currency::text, m.bets, m.stake, "
        "m.open_bets, m.open_stake, m.settled_bets, m.payout)::text, E'\\n' "
        "ORDER BY m.market_id, m.currency), '') FROM m");
}

/// Names where a bettor's page is read from.
enum class source { write_tables, read_model };

/// Walks every page of `account`'s bets matching `status` by "before", `limit` per page.
awaitable<std::vector<bets::bets_page>> walk(std::string url, std::int64_t account,
                                             bets::status_filter status, std::int64_t limit,
                                             source from) {
    auto conn = co_await open_connection(url);
    std::vector<bets::bets_page> pages;
    std::optional<std::int64_t> before;
    for (int page = 0; page < 100; ++page) {
        // Not a conditional expression of two co_awaits: GCC 12 destroys its result twice.
        db::outcome<bets::bets_page> read;
        if (from == source::write_tables) {
            read = co_await db::list_bets(*conn, account, status, limit, before);
        } else {
            read = co_await db::list_bet_views(*conn, account, status, limit, before);
        }
        FT_REQUIRE_OK(read);
        pages.push_back(std::move(*read));
        before = pages.back().next_before;
        if (!before) {
            co_return pages;
        }
    }
    FAIL("more than 100 pages");
    co_return pages;
}

/// Returns a page's lines as the client sees them.
json rendered(const bets::bets_page& page) { return bets::render_bets(1, page); }

/// Requires the bettor's pages of every account to be the same from the write tables and from
/// the read model, for each status.
void same_pages(const engine& e, std::int64_t first_account, std::int64_t accounts) {
    asio::io_context ioc;
    for (auto status :
         {bets::status_filter::all, bets::status_filter::open, bets::status_filter::settled}) {
        for (auto account = first_account; account < first_account + accounts; ++account) {
            CAPTURE(account);
            CAPTURE(bets::to_string(status));
            auto written = run(ioc, walk(e.url(), account, status, 200, source::write_tables));
            auto projected = run(ioc, walk(e.url(), account, status, 200, source::read_model));
            REQUIRE(written.size() == projected.size());
            for (std::size_t i = 0; i < written.size(); ++i) {
                CHECK(rendered(written[i]) == rendered(projected[i]));
            }
        }
    }
}

/// Builds the scenario of the first cases: three markets, six accounts, bets placed and settled
/// (a result and its correction on market 1, a cancel on market 2, a result rolled back on
/// market 3, and bets placed after it), projected in pages of seven while it goes on. Verify
/// finds nothing at every step, before the projector catches up too (the bets still in the
/// outbox after its cursor are left out).
void build_scenario(const engine& e) {
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.add_market(2, {{21, 20000}, {22, 30000}});
    e.add_market(3, {{31, 20000}, {32, 30000}});
    e.fund(1, 6, 1'000'000);
    int key = 0;
    auto place_round = [&](std::int64_t stake) {
        for (std::int64_t account = 1; account <= 6; ++account) {
            for (std::int64_t selection : {11, 12, 21, 22, 31, 32}) {
                REQUIRE(e.place(account, "k" + std::to_string(++key), selection,
                                stake + account + selection) == "placed");
            }
        }
    };
    place_round(100);
    // Rows written before the payload carried placed_at and currency: the projector reads those
    // bets from bets.
    e.exec(
        "UPDATE outbox SET payload = payload - 'placed_at' - 'currency' "
        "WHERE topic = 'bet_placed' AND (payload->>'bet_id')::bigint % 5 = 0");
    CHECK(verify(e).empty());
    project_all(e);
    CHECK(verify(e).empty());

    place_round(200);
    record(e, 1, 1, "result", winner(11));
    settle(e, 1);
    CHECK(verify(e).empty());               // not projected yet: every changed bet is pending
    record(e, 1, 2, "result", winner(12));  // the correction: reverse v1, settle v2
    settle(e, 1);
    record(e, 2, 1, "cancel");
    settle(e, 2);
    project_all(e, 5);
    CHECK(verify(e).empty());

    record(e, 3, 1, "result", winner(31));
    settle(e, 3);
    project_all(e);
    record(e, 3, 2, "rollback_result");  // the bets are open again
    settle(e, 3);
    e.exec("UPDATE markets SET status = 'open'");
    place_round(300);
    CHECK(verify(e).empty());
    project_all(e, 7);
}

}  // namespace

TEST_CASE("the projector keeps the read model equal to the write tables, page by page") {
    engine e({});
    build_scenario(e);
    CHECK(verify(e).empty());

    // Compared directly: every bettor's pages, and the market summaries.
    same_pages(e, 1, 6);
    CHECK(market_views_rows(e) == market_summaries_from_bets(e));
    CHECK(e.scalar("SELECT count(*) FROM bet_views") == 3 * 36);
    CHECK(e.scalar("SELECT count(*) FROM bet_views WHERE version = 2 AND market_id = 1") == 24);
    CHECK(e.scalar("SELECT count(*) FROM bet_views WHERE outcome = 'void'") == 24);
    // Market 3's first rounds were settled and rolled back: open again, their last change the
    // reversal of version 1.
    CHECK(e.scalar("SELECT count(*) FROM bet_views WHERE market_id = 3 AND version IS NULL AND "
                   "applied_version = 1 AND applied_reversal") == 24);
    CHECK(e.scalar("SELECT open_bets FROM market_views WHERE market_id = 3") == 36);
    CHECK(e.scalar("SELECT settled_bets FROM market_views WHERE market_id = 1") == 24);
    // The horizon and the cursor moved with the pages.
    CHECK(e.scalar("SELECT rows_applied FROM projections WHERE name = 'projector'") ==
          e.scalar("SELECT count(*) FROM outbox"));
    e.check_money_invariants();
}

/// Returns the tables the transaction open on `conn` scanned sequentially, "relname:count" each
/// ("" when none), of those named LIKE any pattern of `tables` but none of `except` (text array
/// literals), and commits it.
awaitable<std::string> commit_seq_scans(db::connection& conn, std::string tables,
                                        std::string except) {
    auto scans = co_await conn.query(
        "SELECT coalesce(string_agg(relname || ':' || seq_scan, ' ' ORDER BY relname), '') "
        "FROM pg_stat_xact_user_tables WHERE seq_scan > 0 AND relname LIKE ANY ($1::text[]) "
        "AND relname <> ALL ($2::text[])",
        db::params(tables, except));
    FT_REQUIRE_OK(scans);
    std::string out{scans->text(0, 0)};
    FT_AWAIT_OK(co_await conn.query("COMMIT"));
    co_return out;
}

/// Projects past `tail` in pages of `rows_max` in one transaction on one connection (so its plans
/// are the ones it made at its first page) and returns the tables it scanned sequentially,
/// "relname:count" each ("" when none). Not outbox_cursors: one row per consumer, which the
/// loop's own check after each page reads.
awaitable<std::string> project_counting_seq_scans(std::string url, std::string tail,
                                                  std::int64_t rows_max) {
    auto conn = co_await open_connection(url, 30s);
    FT_AWAIT_OK(co_await conn->query("BEGIN"));
    co_await project_past_on(*conn, std::move(tail), rows_max);
    co_return co_await commit_seq_scans(*conn, "{%}", "{outbox_cursors}");
}

TEST_CASE("a projector page reads by key, even with plans made on a read model thought empty") {
    // A projector's connection plans each statement of its page once (a generic plan, made at
    // its first page) and keeps the plan. Made while the read model was empty (here: emptied
    // and vacuumed, as a new deployment leaves it), a plan with a sequential scan would read
    // the whole table at every page as the read model grows.
    engine e({});
    build_scenario(e);
    const auto bets_before = bet_views_rows(e);
    const auto markets_before = market_views_rows(e);
    e.exec("TRUNCATE bet_view_bets, bet_view_results, bet_view_open, market_views");
    e.exec(
        "UPDATE outbox_cursors SET last_xact_id = '0', last_outbox_id = 0 "
        "WHERE consumer = 'projector'");
    e.exec(
        "UPDATE projections SET consumed_below = '0', rows_applied = 0 "
        "WHERE name = 'projector'");
    for (const char* table : {"bet_view_bets", "bet_view_results", "bet_view_open", "market_views",
                              "outbox", "outbox_cursors", "projections", "bets"}) {
        e.exec(std::string{"VACUUM ANALYZE "} + table);
    }
    asio::io_context ioc;
    const auto scans = run(ioc, project_counting_seq_scans(e.url(), outbox_tail(e), 5));
    CHECK_MESSAGE(scans.empty(), "sequential scans: " << scans);
    // And the pages built the same read model.
    CHECK(bet_views_rows(e) == bets_before);
    CHECK(market_views_rows(e) == markets_before);
    CHECK(verify(e).empty());
}

/// Projects past `tail` on `conn` in one transaction and returns the index entries it read of
/// `table`'s indexes (idx_tup_read of this transaction, summed: PostgreSQL 15 has no
/// pg_stat_xact_user_indexes, but has the function behind it), and commits.
awaitable<std::int64_t> project_counting_index_reads(db::connection& conn, std::string tail,
                                                     std::int64_t rows_max, std::string table) {
    FT_AWAIT_OK(co_await conn.query("BEGIN"));
    co_await project_past_on(conn, std::move(tail), rows_max);
    auto reads = co_await conn.query(
        "SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0) "
        "FROM pg_index i WHERE i.indrelid = $1::regclass",
        db::params(table));
    FT_REQUIRE_OK(reads);
    const auto out = std::stoll(std::string{reads->text(0, 0)});
    FT_AWAIT_OK(co_await conn.query("COMMIT"));
    co_return out;
}

/// Opens a projector's connection and projects on it what `e` has so far (its plans are made
/// then, on a read model thought empty); lets `grow` write and projects that; lets `settle_some`
/// write, and returns the index entries of bet_view_open that the same connection's pages past
/// those writes read.
awaitable<std::int64_t> open_index_reads_after(std::string url, const engine& e,
                                               const std::function<void()>& grow,
                                               const std::function<void()>& settle_some) {
    auto conn = co_await open_connection(url, 30s);
    co_await project_past_on(*conn, outbox_tail(e), 50);
    grow();
    co_await project_past_on(*conn, outbox_tail(e), 50);
    settle_some();
    co_return co_await project_counting_index_reads(*conn, outbox_tail(e), 50, "bet_view_open");
}

TEST_CASE("a projector page's reads follow its rows, not the read model's size") {
    // The plans a projector's connection made at its first page, when bet_view_open was small,
    // stay in use as it grows. A page that settles bets deletes their bet_view_open rows: one
    // probe of the key each, whatever the table's size. (Joined instead, the plan made on the
    // small table read the whole index for every settled bet: 3 s a page of 200 beside 10,000
    // open bets while a market settled in lanes.) Index entries read are counted, not time.
    engine e({});
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.add_market(2, {{21, 20000}, {22, 30000}});
    constexpr std::int64_t accounts = 20;
    constexpr std::int64_t settled = 12;
    e.fund(1, accounts, 10'000'000);
    // No analyze while the test runs: a plan remade on the grown table would hide the case.
    for (const char* table : {"bet_view_bets", "bet_view_results", "bet_view_open"}) {
        e.exec(std::string{"ALTER TABLE "} + table + " SET (autovacuum_enabled = off)");
        e.exec(std::string{"VACUUM ANALYZE "} + table);
    }
    for (std::int64_t account = 1; account <= settled; ++account) {
        REQUIRE(e.place(account, "m1-" + std::to_string(account), 11, 100) == "placed");
    }
    asio::io_context ioc;
    const auto grow = [&] {
        // 600 open bets on market 2, placed by the placement's own function.
        CHECK(
            e.scalar("SELECT count(*) FILTER (WHERE outcome = 'placed') FROM generate_series(1, " +
                     std::to_string(accounts) +
                     ") a, generate_series(1, 30) i, LATERAL fulltime_place(a, 'm2-' || a || "
                     "'-' || i, 'fp', 21 + i % 2, 100, 2, 0, 'any', 1000, 0)") == 600);
    };
    const auto settle_market_1 = [&] {
        record(e, 1, 1, "result", winner(11));
        settle(e, 1);
    };
    const auto reads = run(ioc, open_index_reads_after(e.url(), e, grow, settle_market_1));
    CHECK(e.scalar("SELECT count(*) FROM bet_view_open") == 600);
    CHECK(e.scalar("SELECT settled_bets FROM market_views WHERE market_id = 1") == settled);
    // One entry per settled bet (its key's probe); the join read about 600 for each.
    CHECK_MESSAGE(reads <= 2 * settled, "bet_view_open index entries read: " << reads);
    CHECK(verify(e).empty());
    e.check_money_invariants();
}

/// Projects on a connection of its own in pages of `rows_max` until the horizon passes `xact`;
/// then two more pages, and returns whether they left the horizon's row unwritten (its xmin).
awaitable<bool> horizon_passes_then_rests(std::string url, std::string xact,
                                          std::int64_t rows_max) {
    auto conn = co_await open_connection(url, 30s);
    const auto until = steady::now() + 10s;
    for (;;) {
        auto step = co_await db::project_page(*conn, projector, rows_max);
        FT_REQUIRE_OK(step);
        auto past = co_await conn->query("SELECT $1::xid8 > $2::xid8",
                                         db::params(step->consumed_below, xact));
        FT_REQUIRE_OK(past);
        if (step->caught_up && past->text(0, 0) == "t") {
            break;
        }
        REQUIRE_MESSAGE(steady::now() < until,
                        "the horizon stayed at " << step->consumed_below << ", not past " << xact);
        if (step->caught_up) {
            co_await sleep_for(20ms);
        }
    }
    const auto row_version = [&]() -> awaitable<std::string> {
        auto v = co_await conn->query("SELECT xmin::text FROM projections WHERE name = $1",
                                      db::params(std::string(projector)));
        FT_REQUIRE_OK(v);
        co_return std::string{v->text(0, 0)};
    };
    const auto before = co_await row_version();
    for (int i = 0; i < 2; ++i) {
        auto step = co_await db::project_page(*conn, projector, rows_max);
        FT_REQUIRE_OK(step);
        CHECK(step->rows == 0);
    }
    co_return co_await row_version() == before;
}

TEST_CASE("a projector whose last page was full moves its horizon past it once, then rests") {
    // A full page's horizon is its last row's transaction (more of its rows may follow). When
    // nothing follows, the next page must still move it past that transaction, or the bettor
    // who wrote it would wait for the read model (read.ryw_wait_ms) until someone else wrote;
    // and the polls after that write nothing.
    engine e({});
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.fund(1, 2, 1'000'000);
    project_all(e);
    // Ten placements in one transaction: two full pages of five.
    REQUIRE(e.scalar("SELECT count(*) FILTER (WHERE outcome = 'placed') FROM generate_series(1, "
                     "10) i, LATERAL fulltime_place(1 + i % 2, 'k' || i, 'fp', 11, 100, 2, 0, "
                     "'any', 1000, 0)") == 10);
    const auto tail = outbox_tail(e);
    asio::io_context ioc;
    CHECK(run(ioc, horizon_passes_then_rests(e.url(), tail.substr(0, tail.find(' ')), 5)));
    CHECK(e.scalar("SELECT count(*) FROM bet_view_open") == 10);
    CHECK(verify(e).empty());
}

/// Returns the projector's cursor as "xact_id outbox_id".
awaitable<std::string> cursor_of(db::connection& conn) {
    auto c = co_await conn.query(
        "SELECT last_xact_id::text || ' ' || last_outbox_id FROM outbox_cursors "
        "WHERE consumer = $1",
        db::params(std::string(projector)));
    FT_REQUIRE_OK(c);
    co_return std::string{c->text(0, 0)};
}

/// Projects on a connection of its own in pages of `rows_max` past `tail` (project_past_on);
/// returns each page's rows and the bets they carry (a settlement batch's row one per bet, any
/// other row one), read from the outbox between the cursors before and after it.
awaitable<std::vector<std::pair<std::int64_t, std::int64_t>>> pages_with_bets(
    std::string url, std::string tail, std::int64_t rows_max) {
    auto conn = co_await open_connection(url, 30s);
    std::vector<std::pair<std::int64_t, std::int64_t>> pages;
    auto before = co_await cursor_of(*conn);
    co_await project_past_on(
        *conn, std::move(tail), rows_max,
        [&](db::connection& c, const db::projection_step& step) -> awaitable<void> {
            auto after = co_await cursor_of(c);
            if (step.rows > 0) {
                const auto b = before.find(' ');
                const auto a = after.find(' ');
                auto bets = co_await c.query(
                    "SELECT coalesce(sum(CASE WHEN topic = 'settlement_batch' THEN "
                    "jsonb_array_length(payload->'bet_id') ELSE 1 END), 0) FROM outbox "
                    "WHERE (xact_id, outbox_id) > ($1::xid8, $2::bigint) "
                    "AND (xact_id, outbox_id) <= ($3::xid8, $4::bigint)",
                    db::params(before.substr(0, b), before.substr(b + 1), after.substr(0, a),
                               after.substr(a + 1)));
                FT_REQUIRE_OK(bets);
                pages.emplace_back(step.rows, std::stoll(std::string{bets->text(0, 0)}));
            }
            before = std::move(after);
        });
    co_return pages;
}

TEST_CASE(
    "a projector page holds at most its limit of bets, a settlement batch's row counting each") {
    // A settlement batch's outbox row carries every bet of its batch: a page limited by rows
    // alone could hold rows_max batches, and its transaction all their bets.
    engine e({});
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.fund(1, 6, 1'000'000);
    for (int i = 0; i < 36; ++i) {
        REQUIRE(e.place(1 + i % 6, "k" + std::to_string(i), i % 2 == 0 ? 11 : 12, 100 + i) ==
                "placed");
    }
    project_all(e);
    record(e, 1, 1, "result", winner(11));
    settle(e, 1);  // batches of 7: rows of 7, 7, 7, 7, 7 and 1 bets
    asio::io_context ioc;
    const auto pages = run(ioc, pages_with_bets(e.url(), outbox_tail(e), 10));
    std::int64_t bets = 0;
    for (const auto& [rows, page_bets] : pages) {
        CAPTURE(rows);
        CAPTURE(page_bets);
        // Over the limit only when the page is its first row alone.
        CHECK((page_bets <= 10 || rows == 1));
        bets += page_bets;
    }
    // Each batch of 7 on a page of its own (7 + 7 > 10): the six rows take five pages at least
    // (limited by rows, one page took them all).
    CHECK(pages.size() >= 5);
    CHECK(e.scalar("SELECT settled_bets FROM market_views WHERE market_id = 1") == 36);
    CHECK(verify(e).empty());
    CHECK(bets >= 36);
}

/// Runs the settlement's steps on `market` in batches of 7 until it has nothing left, in one
/// transaction on one connection (its plans are the ones it made at its first step), and returns
/// the tables among `tables` it scanned sequentially, "relname:count" each ("" when none).
awaitable<std::string> settle_counting_seq_scans(std::string url, std::int64_t market,
                                                 std::string tables) {
    auto conn = co_await open_connection(url, 30s);
    FT_AWAIT_OK(co_await conn->query("BEGIN"));
    const auto until = steady::now() + 30s;
    for (;;) {
        auto step = co_await conn->query("SELECT status FROM fulltime_settle_step($1, 7, 1000)",
                                         db::params(market));
        FT_REQUIRE_OK(step);
        const std::string status{step->text(0, 0)};
        if (status == "idle") {
            break;
        }
        REQUIRE_MESSAGE(steady::now() < until, "market " << market << " never finished");
        if (status == "fenced") {
            co_await sleep_for(5ms);
        }
    }
    co_return co_await commit_seq_scans(*conn, std::move(tables), "{}");
}

TEST_CASE("a settlement step reads the bets by key, even with plans made on tables thought empty") {
    // A settlement connection plans the batch's statements once (generic plans, made at its
    // first step) and keeps them. Made while the tables were empty (vacuumed empty here, as a
    // new deployment leaves them), a plan with a sequential scan of bets, bet_settlements or
    // accounts would read the whole table at every step as they grow.
    engine e({});
    e.add_market(1, {{11, 20000}, {12, 30000}});
    e.fund(1, 6, 1'000'000);
    int key = 0;
    for (std::int64_t account = 1; account <= 6; ++account) {
        for (int i = 0; i < 6; ++i) {
            REQUIRE(e.place(account, "k" + std::to_string(++key), i % 2 == 0 ? 11 : 12, 100 + i) ==
                    "placed");
        }
    }
    for (const char* table :
         {"bets", "bet_settlements", "ledger_transfers", "accounts", "outbox"}) {
        e.exec(std::string{"VACUUM ANALYZE "} + table);
    }
    record(e, 1, 1, "result", winner(11));
    asio::io_context ioc;
    // Each partitioned table's partitions count under their own names. accounts: the balance
    // rows of a batch, one UPDATE along its accounts (fulltime_settle_balances).
    const auto scans =
        run(ioc, settle_counting_seq_scans(e.url(), 1,
                                           "{bets%,bet_settlements%,ledger_transfers%,accounts}"));
    CHECK_MESSAGE(scans.empty(), "sequential scans: " << scans);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements") == 36);
    CHECK(e.scalar("SELECT count(*) FROM bet_settlements WHERE outcome = 'won'") == 18);
    e.check_money_invariants();
}

TEST_CASE("applying the outbox again changes nothing") {
    engine e({});
    build_scenario(e);
    const auto bets_before = bet_views_rows(e);
    const auto markets_before = market_views_rows(e, true);
    REQUIRE_FALSE(bets_before.empty());

    // Back to the start: every row is applied a second time, in pages of other sizes.
    e.exec(
        "UPDATE outbox_cursors SET last_xact_id = '0', last_outbox_id = 0 "
        "WHERE consumer = 'projector'");
    project_all(e, 3);
    CHECK(bet_views_rows(e) == bets_before);
    CHECK(market_views_rows(e, true) == markets_before);  // not even updated_at moved

    // And from the middle, in one page.
    e.exec(
        "UPDATE outbox_cursors c SET last_xact_id = o.xact_id, last_outbox_id = o.outbox_id "
        "FROM (SELECT xact_id, outbox_id FROM outbox ORDER BY xact_id, outbox_id "
        "OFFSET 20 LIMIT 1) o WHERE c.consumer = 'projector'");
    project_all(e, 1000);
    CHECK(bet_views_rows(e) == bets_before);
    CHECK(market_views_rows(e, true) == markets_before);
    CHECK(verify(e).empty());
}

TEST_CASE("a rebuild gives the live projection's rows, from the live tables or from empty ones") {
    engine e({});
    build_scenario(e);
    const auto bets_live = bet_views_rows(e);
    const auto markets_live = market_views_rows(e);

    auto report = rebuild(e);
    CHECK(report.bets_projected == 3 * 36);
    CHECK(report.bets_kept == 0);
    CHECK(report.markets == 3);
    CHECK(bet_views_rows(e) == bets_live);
    CHECK(market_views_rows(e) == markets_live);
    CHECK(verify(e).empty());

    e.exec(
        "DELETE FROM bet_view_results; DELETE FROM bet_view_open; DELETE FROM bet_view_bets; "
        "DELETE FROM market_views");
    report = rebuild(e);
    CHECK(report.bets_projected == 3 * 36);
    CHECK(bet_views_rows(e) == bets_live);
    CHECK(market_views_rows(e) == markets_live);
    CHECK(verify(e).empty());

    // The cursor is at the tail: bets placed and settled from here on are projected on top.
    record(e, 2, 2, "rollback_cancel");
    settle(e, 2);
    e.exec("UPDATE markets SET status = 'open'");
    REQUIRE(e.place(1, "after-rebuild", 11, 555) == "placed");
    CHECK(verify(e).empty());
    project_all(e);
    CHECK(verify(e).empty());
    CHECK(market_views_rows(e) == market_summaries_from_bets(e));
    same_pages(e, 1, 6);
    e.check_money_invariants();
}

TEST_CASE("verify reports the rows that were broken on purpose") {
    engine e({});
    build_scenario(e);
    REQUIRE(verify(e).empty());
    const auto settled = e.scalar("SELECT min(bet_id) FROM bet_views WHERE version IS NOT NULL");
    const auto open = e.scalar("SELECT min(bet_id) FROM bet_views WHERE version IS NULL");
    const auto reopened = e.scalar("SELECT max(bet_id) FROM bet_views WHERE version IS NOT NULL");
    REQUIRE(reopened != settled);
    e.exec("UPDATE bet_view_results SET payout = payout + 1 WHERE bet_id = " +
           std::to_string(settled));
    e.exec("DELETE FROM bet_view_open WHERE bet_id = " + std::to_string(open));
    e.exec("DELETE FROM bet_view_bets WHERE bet_id = " + std::to_string(open));
    e.exec("UPDATE market_views SET stake = stake + 10 WHERE market_id = 2");
    // A settled bet marked open, and an open mark of a bet the read model lacks.
    e.exec(
        "INSERT INTO bet_view_open (account_id, bet_id) SELECT account_id, bet_id "
        "FROM bet_view_bets WHERE bet_id = " +
        std::to_string(reopened));
    e.exec("INSERT INTO bet_view_open (account_id, bet_id) VALUES (1, 999998)");
    // A settlement of a bet the read model lacks: bet_views cannot show it.
    e.exec(
        "INSERT INTO bet_view_results (bet_id, version, outcome, payout, applied_version, "
        "applied_reversal) VALUES (999997, 1, 'won', 200, 1, false)");

    const auto found = verify(e);
    std::string all;
    for (const auto& line : found) {
        all += line + "\n";
    }
    CAPTURE(all);
    auto has = [&](const std::string& start) {
        return std::any_of(found.begin(), found.end(),
                           [&](const std::string& line) { return line.rfind(start, 0) == 0; });
    };
    CHECK(has("bet_view_differs bet " + std::to_string(settled) + " "));
    CHECK(has("bet_view_missing bet " + std::to_string(open) + " "));
    CHECK(has("market_view_differs bet - market 2 "));
    CHECK(has("bet_open_extra bet " + std::to_string(reopened) + " "));
    CHECK(has("bet_open_extra bet 999998 market - "));
    CHECK(has("bet_result_extra bet 999997 market - "));
    // The deleted row's and the changed payout's markets no longer add up either.
    CHECK(found.size() >= 6);

    // A bet_views row whose bet is not in bets: reported while its period is kept. Open, it
    // has its open mark, so only the missing bet is reported.
    e.exec(
        "INSERT INTO bet_view_bets (account_id, bet_id, market_id, selection_id, currency, "
        "stake, odds, placed_at) VALUES (1, 999999, 1, 11, 'EUR', 100, 20000, now())");
    e.exec("INSERT INTO bet_view_open (account_id, bet_id) VALUES (1, 999999)");
    const auto orphan = verify(e);
    CHECK(std::any_of(orphan.begin(), orphan.end(), [](const std::string& line) {
        return line.rfind("bet_missing bet 999999 ", 0) == 0;
    }));
    CHECK_FALSE(std::any_of(orphan.begin(), orphan.end(), [](const std::string& line) {
        return line.rfind("bet_open", 0) == 0 && line.find(" 999999 ") != std::string::npos;
    }));
    e.exec("DELETE FROM bet_view_open WHERE bet_id = 999999");
    e.exec("DELETE FROM bet_view_bets WHERE bet_id = 999999");

    rebuild(e);
    CHECK(verify(e).empty());
}

TEST_CASE("verify refuses a transaction that is not REPEATABLE READ") {
    engine e({});
    CHECK_THROWS_WITH_AS(e.text("SELECT count(*) FROM fulltime_project_verify('projector')"),
                         doctest::Contains("REPEATABLE READ"), std::exception);
}

TEST_CASE("pages by before walk every bet once, from the write tables and the read model") {
    engine e({});
    e.add_market(5, {{51, 20000}, {52, 30000}});
    e.add_market(6, {{61, 20000}});
    e.fund(1, 2, 100'000'000);
    // 450 bets of account 1 (and a few of account 2 between them): a third on market 6, which
    // stays open, the rest on market 5, which settles.
    e.exec(
        "SELECT fulltime_place(CASE WHEN i % 50 = 0 THEN 2 ELSE 1 END, 'p' || i, 'fp', "
        "CASE i % 3 WHEN 0 THEN 61 WHEN 1 THEN 51 ELSE 52 END, 100 + i, 2, 0, 'any', 1000, 0) "
        "FROM generate_series(1, 459) i");
    REQUIRE(e.scalar("SELECT count(*) FROM bets WHERE account_id = 1") == 450);
    record(e, 5, 1, "result", winner(51));
    settle(e, 5);
    project_all(e, 100);
    REQUIRE(verify(e).empty());

    asio::io_context ioc;
    const std::vector<std::pair<bets::status_filter, std::string>> filters = {
        {bets::status_filter::all, "true"},
        {bets::status_filter::open, "market_id = 6"},
        {bets::status_filter::settled, "market_id = 5"}};
    for (const auto& [status, where] : filters) {
        CAPTURE(bets::to_string(status));
        const auto expected_ids = e.text(
            "SELECT string_agg(bet_id::text, ',' ORDER BY bet_id DESC) FROM bets "
            "WHERE account_id = 1 AND " +
            where);
        const auto count = e.scalar("SELECT count(*) FROM bets WHERE account_id = 1 AND " + where);
        for (auto from : {source::write_tables, source::read_model}) {
            CAPTURE(from == source::write_tables ? "write tables" : "read model");
            const auto pages = run(ioc, walk(e.url(), 1, status, 200, from));
            CHECK(static_cast<std::int64_t>(pages.size()) == (count + 199) / 200);
            std::string ids;
            for (std::size_t i = 0; i < pages.size(); ++i) {
                const auto& page = pages[i];
                const bool last = i + 1 == pages.size();
                CHECK(page.lines.size() ==
                      (last ? static_cast<std::size_t>(count - 200 * i) : 200));
                CHECK(page.next_before.has_value() == !last);
                if (!last) {
                    CHECK(*page.next_before == page.lines.back().bet.bet_id);
                }
                for (const auto& line : page.lines) {
                    ids += (ids.empty() ? "" : ",") + std::to_string(line.bet.bet_id);
                    CHECK(line.settled ==
                          (status == bets::status_filter::settled ||
                           (status == bets::status_filter::all && line.bet.market_id == 5)));
                }
            }
            CHECK(ids == expected_ids);  // newest first, each once, none missing
        }
    }
    // A page that ends exactly at the last bet says there are no more.
    const auto open_count = e.scalar(
        "SELECT count(*) FROM bet_views WHERE account_id = 1 AND "
        "version IS NULL");
    auto exact =
        run(ioc, walk(e.url(), 1, bets::status_filter::open, open_count, source::read_model));
    REQUIRE(exact.size() == 1);
    CHECK_FALSE(exact[0].next_before.has_value());
    e.check_money_invariants();
}

namespace {

awaitable<void> busy_and_missing(std::string url) {
    auto holder = co_await open_connection(url);
    auto conn = co_await open_connection(url);
    // A row to read (a batch that settled nothing): with none, a page answers caught up without
    // taking the lock at all.
    FT_AWAIT_OK(
        co_await conn->query("INSERT INTO outbox (topic, account_id, payload) VALUES "
                             "('settlement_batch', NULL, '{\"bet_id\": []}')"));
    // Another writer (a projector's page, a rebuild) holds the cursor: the page returns at once.
    FT_AWAIT_OK(co_await holder->query("BEGIN"));
    FT_AWAIT_OK(co_await holder->query(
        "SELECT 1 FROM outbox_cursors WHERE consumer = 'projector' FOR UPDATE"));
    auto busy = co_await db::project_page(*conn, projector, 10);
    FT_REQUIRE_OK(busy);
    CHECK(busy->rows == 0);
    CHECK_FALSE(busy->caught_up);
    CHECK_FALSE(busy->consumed_below.empty());
    FT_AWAIT_OK(co_await holder->query("ROLLBACK"));
    auto free = co_await db::project_page(*conn, projector, 10);
    FT_REQUIRE_OK(free);
    CHECK(free->rows == 1);
    CHECK(free->caught_up);
    // Idle: nothing after the cursor, so no lock and no write (the horizon stays).
    auto idle = co_await db::project_page(*conn, projector, 10);
    FT_REQUIRE_OK(idle);
    CHECK(idle->rows == 0);
    CHECK(idle->caught_up);
    CHECK(idle->consumed_below == free->consumed_below);

    // A consumer without a cursor is refused: a cursor made at the tail would skip what the read
    // model never got.
    auto missing = co_await db::project_page(*conn, "nobody", 10);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().sqlstate == "P0002");
    auto too_many = co_await db::project_page(*conn, projector, 10'001);
    CHECK_FALSE(too_many.has_value());
}

}  // namespace

TEST_CASE("a projector page finds the cursor held and returns busy; no cursor, no page") {
    engine e({});
    asio::io_context ioc;
    run(ioc, busy_and_missing(e.url()));
}
