#include "fulltime/db/projection_statements.hpp"

#include "fulltime/db/transaction.hpp"
#include "fulltime/limits.hpp"

#include <functional>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

constexpr const char* project_sql =
    "SELECT rows, caught_up, consumed_below::text FROM fulltime_project($1::text, $2::integer)";

constexpr const char* rebuild_sql =
    "SELECT bets_projected, bets_kept, markets, consumed_below::text "
    "FROM fulltime_project_rebuild($1::text)";

// Whether the projector's horizon passed a transaction. Read in a statement of its own before the
// page: a later statement's snapshot shows at least this much of the read model (the horizon and
// the rows it covers commit together, on the primary and, replayed, on a standby).
constexpr const char* passed_sql =
    "SELECT coalesce((SELECT consumed_below > $2::xid8 FROM projections WHERE name = $1::text), "
    "false)";

constexpr const char* summary_sql =
    "SELECT currency, bets, stake, open_bets, open_stake, settled_bets, payout, "
    "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') "
    "FROM market_views WHERE market_id = $1::bigint ORDER BY currency";

constexpr const char* verify_sql =
    "SELECT kind, bet_id, market_id, expected, actual FROM fulltime_project_verify($1::text)";

/// The body of verify_projection's transaction: the isolation level first (before any statement
/// takes a snapshot), then the check. No JIT: the plan's cost over the partitioned tables would
/// compile it, for a scan that compiling barely helps (as the audit's statements).
asio::awaitable<outcome<std::vector<projection_mismatch>>> verify_body(std::string consumer,
                                                                       connection& conn) {
    auto set = co_await conn.execute_script(
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET LOCAL jit = off");
    if (!set) {
        co_return set.error();
    }
    auto rows = co_await conn.query(verify_sql, params(consumer));
    if (!rows) {
        co_return rows.error();
    }
    std::vector<projection_mismatch> found;
    found.reserve(static_cast<std::size_t>(rows->rows()));
    for (int i = 0; i < rows->rows(); ++i) {
        auto kind = rows->get<std::string>(i, 0);
        auto bet_id = rows->get<std::optional<std::int64_t>>(i, 1);
        auto market_id = rows->get<std::optional<std::int64_t>>(i, 2);
        auto expected = rows->get<std::optional<std::string>>(i, 3);
        auto actual = rows->get<std::optional<std::string>>(i, 4);
        if (!kind || !bet_id || !market_id || !expected || !actual) {
            co_return failure{errc::bad_result, {}, "unexpected fulltime_project_verify row"};
        }
        found.push_back(projection_mismatch{std::move(*kind), *bet_id, *market_id,
                                            std::move(*expected), std::move(*actual)});
    }
    co_return found;
}

}  // namespace

asio::awaitable<outcome<bool>> projection_passed(connection& conn, std::string consumer,
                                                 std::uint64_t xid) {
    auto rows = co_await conn.query(passed_sql, params(consumer, static_cast<std::int64_t>(xid)));
    if (!rows) {
        co_return rows.error();
    }
    auto passed = rows->rows() == 1 ? rows->get<bool>(0, 0)
                                    : outcome<bool>(failure{errc::bad_result, {}, "no row"});
    if (!passed) {
        co_return failure{errc::bad_result, {}, "unexpected projections row"};
    }
    co_return *passed;
}

asio::awaitable<outcome<std::vector<market_summary>>> read_market_summary(connection& conn,
                                                                          std::int64_t market_id) {
    auto rows = co_await conn.query(summary_sql, params(market_id));
    if (!rows) {
        co_return rows.error();
    }
    std::vector<market_summary> out;
    for (int i = 0; i < rows->rows(); ++i) {
        market_summary m;
        auto currency = rows->get<std::string>(i, 0);
        auto updated_at = rows->get<std::string>(i, 7);
        std::int64_t* const counts[] = {&m.bets,       &m.stake,        &m.open_bets,
                                        &m.open_stake, &m.settled_bets, &m.payout};
        for (int c = 0; c < 6; ++c) {
            auto value = rows->get<std::int64_t>(i, c + 1);
            if (!value) {
                co_return value.error();
            }
            *counts[c] = *value;
        }
        if (!currency || !updated_at) {
            co_return failure{errc::bad_result, {}, "unexpected market_views row"};
        }
        m.currency = std::move(*currency);
        m.updated_at = std::move(*updated_at);
        out.push_back(std::move(m));
    }
    co_return out;
}

asio::awaitable<outcome<projection_step>> project_page(connection& conn, std::string consumer,
                                                       std::int64_t rows_max) {
    if (rows_max < 1 || rows_max > limits::projection_page_rows_max) {
        co_return failure{errc::bad_result,
                          {},
                          "projector page of " + std::to_string(rows_max) + " rows is outside 1.." +
                              std::to_string(limits::projection_page_rows_max)};
    }
    auto rows = co_await conn.query(project_sql, params(consumer, rows_max));
    if (!rows) {
        co_return rows.error();
    }
    if (rows->rows() != 1) {
        co_return failure{errc::bad_result, {}, "fulltime_project returned no row"};
    }
    auto applied = rows->get<std::int64_t>(0, 0);
    auto caught_up = rows->get<bool>(0, 1);
    auto below = rows->get<std::optional<std::string>>(0, 2);
    if (!applied || !caught_up || !below) {
        co_return failure{errc::bad_result, {}, "unexpected fulltime_project row"};
    }
    co_return projection_step{*applied, *caught_up, below->value_or("")};
}

asio::awaitable<outcome<rebuild_report>> rebuild_projection(connection& conn,
                                                            std::string consumer) {
    auto rows = co_await conn.query(rebuild_sql, params(consumer));
    if (!rows) {
        co_return rows.error();
    }
    if (rows->rows() != 1) {
        co_return failure{errc::bad_result, {}, "fulltime_project_rebuild returned no row"};
    }
    auto projected = rows->get<std::int64_t>(0, 0);
    auto kept = rows->get<std::int64_t>(0, 1);
    auto markets = rows->get<std::int64_t>(0, 2);
    auto below = rows->get<std::string>(0, 3);
    if (!projected || !kept || !markets || !below) {
        co_return failure{errc::bad_result, {}, "unexpected fulltime_project_rebuild row"};
    }
    co_return rebuild_report{*projected, *kept, *markets, std::move(*below)};
}

asio::awaitable<outcome<std::vector<projection_mismatch>>> verify_projection(connection& conn,
                                                                             std::string consumer) {
    co_return co_await in_transaction(conn, transaction_options{},
                                      std::bind_front(verify_body, std::move(consumer)));
}

}  // namespace fulltime::db
