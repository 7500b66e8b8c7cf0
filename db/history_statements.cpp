#include "fulltime/db/history_statements.hpp"

#include "fulltime/db/transaction.hpp"

#include <array>
#include <functional>
#include <sstream>
#include <utility>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// Times travel as RFC 3339 text in UTC; the first period starts at -infinity.
#define FT_HISTORY_TIME(x)                       \
    "CASE WHEN isfinite(" x ") THEN to_char((" x \
    ") AT TIME ZONE 'UTC', "                     \
    "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') ELSE (" x ")::text END"

constexpr const char* store_settings_sql =
    "UPDATE history_settings SET period = $1::interval, ahead_periods = $2::integer "
    "WHERE period IS DISTINCT FROM $1::interval OR ahead_periods IS DISTINCT FROM $2::integer";

constexpr const char* ensure_sql = "SELECT fulltime_history_ensure()";

constexpr const char* close_sql =
    "SELECT outcome, " FT_HISTORY_TIME("period_start") ", " FT_HISTORY_TIME("period_end")
    ", coalesce(accounts, 0) FROM fulltime_history_close(make_interval(secs => $1::bigint))";

// Each period with what holds it, the planner's row estimate of its bets partition and the size
// of its four partitions (an operator's listing: catalog reads, no scan of a partition).
constexpr const char* list_sql =
    "SELECT " FT_HISTORY_TIME("h.period_start") ", " FT_HISTORY_TIME("h.period_end") ", "
    FT_HISTORY_TIME("h.closed_at") ", h.dropping, array_to_string(h.holds, ','), "
    "h.open_bets, h.unsettled_markets, h.unconsumed_outbox, "
    "(SELECT greatest(c.reltuples, 0)::bigint FROM pg_class c "
    " WHERE c.oid = to_regclass('bets_' || fulltime_history_suffix(h.period_start))), "
    "(SELECT coalesce(sum(pg_total_relation_size(to_regclass(t || '_' || "
    "        fulltime_history_suffix(h.period_start)))), 0)::bigint "
    " FROM unnest(ARRAY['bets', 'bet_settlements', 'ledger_transfers', 'outbox']) t) "
    "FROM fulltime_history_holds($1::interval) h ORDER BY h.period_start";

// The oldest period not dropped: its start as the server prints it (an exact round trip, where
// the RFC 3339 form would round), whether a drop of it began, and its partitions' suffix.
constexpr const char* oldest_sql =
    "SELECT h.period_start::text, h.max_bet_id IS NOT NULL, "
    "fulltime_history_suffix(h.period_start), " FT_HISTORY_TIME("h.period_start") " "
    "FROM history_periods h WHERE h.dropped_at IS NULL ORDER BY h.period_start LIMIT 1";

constexpr const char* drop_begin_sql =
    "SELECT fulltime_history_drop_begin($1::timestamptz, $2::interval)";

constexpr const char* drop_end_sql = "SELECT fulltime_history_drop_end($1::timestamptz)";

// Where a partition stands: absent (no row), attached, attached with a detach pending (a
// CONCURRENTLY detach was interrupted), or detached (no pg_inherits row).
constexpr const char* partition_state_sql =
    "SELECT i.inhrelid IS NOT NULL, coalesce(i.inhdetachpending, false) "
    "FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid "
    "WHERE c.oid = to_regclass($1::text)";

constexpr const char* horizon_sql =
    "SELECT count(*) FILTER (WHERE dropped_at IS NULL), "
    "coalesce(extract(epoch FROM max(period_end) - now()), 0)::bigint FROM history_periods";

#undef FT_HISTORY_TIME

constexpr std::array<const char*, 4> partitioned_tables = {"bets", "bet_settlements",
                                                           "ledger_transfers", "outbox"};

std::vector<std::string> split_holds(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string one; std::getline(in, one, ',');) {
        if (!one.empty()) {
            out.push_back(std::move(one));
        }
    }
    return out;
}

asio::awaitable<outcome<std::int64_t>> ensure_body(history_settings settings, connection& conn) {
    auto stored =
        co_await conn.query(store_settings_sql, params{settings.period, settings.ahead_periods});
    if (!stored) {
        co_return stored.error();
    }
    auto added = co_await conn.query(ensure_sql);
    if (!added) {
        co_return added.error();
    }
    co_return added->get<std::int64_t>(0, 0);
}

asio::awaitable<outcome<period_close>> close_body(std::int64_t grace_s, connection& conn) {
    auto rows = co_await conn.query(close_sql, params{grace_s});
    if (!rows) {
        co_return rows.error();
    }
    auto outcome_text = rows->get<std::string>(0, 0);
    auto start = rows->get<std::optional<std::string>>(0, 1);
    auto end = rows->get<std::optional<std::string>>(0, 2);
    auto accounts = rows->get<std::int64_t>(0, 3);
    if (!outcome_text || !start || !end || !accounts) {
        co_return failure{errc::bad_result, {}, "unexpected fulltime_history_close row"};
    }
    period_close out;
    out.outcome = std::move(*outcome_text);
    out.period_start = std::move(*start);
    out.period_end = std::move(*end);
    out.accounts = *accounts;
    co_return out;
}

// Detaches (CONCURRENTLY, or FINALIZE after an interrupted one) and drops one partition; a
// partition already gone is done.
asio::awaitable<outcome<void>> drop_partition(connection& conn, const std::string& table,
                                              const std::string& partition) {
    auto state = co_await conn.query(partition_state_sql, params{partition});
    if (!state) {
        co_return state.error();
    }
    if (state->rows() == 0) {
        co_return outcome<void>{};
    }
    auto attached = state->get<bool>(0, 0);
    auto pending = state->get<bool>(0, 1);
    if (!attached || !pending) {
        co_return failure{errc::bad_result, {}, "unexpected partition state row"};
    }
    // Names come from history_periods through fulltime_history_suffix: quoted all the same.
    const std::string quoted_table = "\"" + table + "\"";
    const std::string quoted_partition = "\"" + partition + "\"";
    if (*attached) {
        auto detached =
            co_await conn.query("ALTER TABLE " + quoted_table + " DETACH PARTITION " +
                                quoted_partition + (*pending ? " FINALIZE" : " CONCURRENTLY"));
        if (!detached) {
            co_return detached.error();
        }
    }
    auto dropped = co_await conn.query("DROP TABLE " + quoted_partition);
    if (!dropped) {
        co_return dropped.error();
    }
    co_return outcome<void>{};
}

asio::awaitable<outcome<std::optional<std::string>>> drop_oldest_body(
    connection& conn, const history_settings& settings) {
    auto oldest = co_await conn.query(oldest_sql);
    if (!oldest) {
        co_return oldest.error();
    }
    if (oldest->rows() == 0) {
        co_return std::optional<std::string>{};
    }
    auto start = oldest->get<std::string>(0, 0);
    auto begun = oldest->get<bool>(0, 1);
    auto suffix = oldest->get<std::string>(0, 2);
    auto shown = oldest->get<std::string>(0, 3);
    if (!start || !begun || !suffix || !shown) {
        co_return failure{errc::bad_result, {}, "unexpected history_periods row"};
    }
    if (!*begun) {
        auto may = co_await conn.query(drop_begin_sql, params{*start, settings.retention});
        if (!may) {
            co_return may.error();
        }
        auto yes = may->get<bool>(0, 0);
        if (!yes) {
            co_return yes.error();
        }
        if (!*yes) {
            co_return std::optional<std::string>{};
        }
    }
    for (const char* table : partitioned_tables) {
        auto dropped = co_await drop_partition(conn, table, std::string{table} + "_" + *suffix);
        if (!dropped) {
            co_return dropped.error();
        }
    }
    auto ended = co_await conn.query(drop_end_sql, params{*start});
    if (!ended) {
        co_return ended.error();
    }
    co_return std::optional<std::string>{std::move(*shown)};
}

}  // namespace

asio::awaitable<outcome<std::int64_t>> ensure_periods(connection& conn,
                                                      const history_settings& settings) {
    transaction_options options;
    options.lock_timeout_ms = settings.lock_timeout_ms;
    options.statement_timeout_ms = settings.statement_timeout_ms;
    co_return co_await in_transaction(conn, options, std::bind_front(&ensure_body, settings));
}

asio::awaitable<outcome<period_close>> close_period(connection& conn,
                                                    const history_settings& settings) {
    transaction_options options;
    options.lock_timeout_ms = settings.lock_timeout_ms;
    options.statement_timeout_ms = settings.statement_timeout_ms;
    co_return co_await in_transaction(conn, options,
                                      std::bind_front(&close_body, settings.close_grace_s));
}

asio::awaitable<outcome<std::vector<history_period>>> list_periods(
    connection& conn, const history_settings& settings) {
    auto rows = co_await conn.query(list_sql, params{settings.retention});
    if (!rows) {
        co_return rows.error();
    }
    std::vector<history_period> out;
    for (int i = 0; i < rows->rows(); ++i) {
        auto start = rows->get<std::string>(i, 0);
        auto end = rows->get<std::string>(i, 1);
        auto closed = rows->get<std::optional<std::string>>(i, 2);
        auto dropping = rows->get<bool>(i, 3);
        auto holds = rows->get<std::string>(i, 4);
        auto open_bets = rows->get<std::optional<std::int64_t>>(i, 5);
        auto unsettled = rows->get<std::optional<std::int64_t>>(i, 6);
        auto unconsumed = rows->get<std::optional<std::int64_t>>(i, 7);
        auto bets = rows->get<std::optional<std::int64_t>>(i, 8);
        auto bytes = rows->get<std::int64_t>(i, 9);
        if (!start || !end || !closed || !dropping || !holds || !open_bets || !unsettled ||
            !unconsumed || !bets || !bytes) {
            co_return failure{errc::bad_result, {}, "unexpected fulltime_history_holds row"};
        }
        history_period p;
        p.period_start = std::move(*start);
        p.period_end = std::move(*end);
        p.closed_at = std::move(*closed);
        p.dropping = *dropping;
        p.holds = split_holds(*holds);
        p.open_bets = *open_bets;
        p.unsettled_markets = *unsettled;
        p.unconsumed_outbox = *unconsumed;
        p.bets = bets->value_or(0);
        p.bytes = *bytes;
        out.push_back(std::move(p));
    }
    co_return out;
}

asio::awaitable<outcome<std::optional<std::string>>> drop_oldest_period(
    connection& conn, const history_settings& settings) {
    // The detach waits for the transactions that may still read the partition; its lock wait is
    // bounded like the keeper's other statements, for this session's statements only.
    auto set = co_await conn.query("SELECT set_config('lock_timeout', $1::text, false)",
                                   params{std::to_string(settings.lock_timeout_ms) + "ms"});
    if (!set) {
        co_return set.error();
    }
    auto dropped = co_await drop_oldest_body(conn, settings);
    auto reset = co_await conn.query("RESET lock_timeout");
    if (dropped && !reset) {
        co_return reset.error();
    }
    co_return dropped;
}

asio::awaitable<outcome<history_horizon>> read_history_horizon(connection& conn) {
    auto rows = co_await conn.query(horizon_sql);
    if (!rows) {
        co_return rows.error();
    }
    auto kept = rows->get<std::int64_t>(0, 0);
    auto ahead = rows->get<std::int64_t>(0, 1);
    if (!kept || !ahead) {
        co_return failure{errc::bad_result, {}, "unexpected history_periods horizon row"};
    }
    co_return history_horizon{*kept, *ahead};
}

}  // namespace fulltime::db
