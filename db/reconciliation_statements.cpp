#include "fulltime/db/reconciliation_statements.hpp"

#include "db/short_transaction.hpp"

#include <charconv>
#include <functional>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// Each chunk is one function call, so one statement; the arrays come back joined with ',' (the
// elements are currency codes, [A-Z]{3}, and integers, so no element contains one).
const std::string accounts_chunk_sql =
    "SELECT r.last_account, r.accounts_checked, r.drifts, r.opened, r.seen_again, r.resolved, "
    "array_to_string(r.currencies, ','), array_to_string(r.currency_accounts, ',') "
    "FROM fulltime_reconcile_accounts($1::bigint, $2::integer, $3::timestamptz) r";

const std::string transfers_chunk_sql =
    "SELECT r.last_transfer, r.transfers_checked, r.mismatches, r.opened, r.seen_again, "
    "r.resolved, array_to_string(r.currencies, ','), array_to_string(r.imbalances, ',') "
    "FROM fulltime_reconcile_transfers($1::bigint, $2::integer, $3::timestamptz) r";

const std::string reconcile_currencies_sql =
    "SELECT r.opened, r.seen_again, r.resolved "
    "FROM fulltime_reconcile_currencies(string_to_array($1, ','), "
    "string_to_array($2, ',')::bigint[], $3::timestamptz) r";

// The open rows only: served by the partial unique index on (kind, subject).
const std::string open_counts_sql =
    "SELECT kind, count(*)::bigint FROM incidents WHERE resolved_at IS NULL GROUP BY kind";

#define FT_INCIDENT_TIME(column) \
    "to_char(" column " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

// Newest first by incident_id (the primary key, read backwards); the filters are bound
// parameters, NULL meaning "any".
const std::string list_sql =
    "SELECT incident_id, kind, subject, account_id, side, currency::text, market_id, bet_id, "
    "expected, actual, details::text, " FT_INCIDENT_TIME("first_seen") ", "
    FT_INCIDENT_TIME("last_seen") ", runs, " FT_INCIDENT_TIME("resolved_at") ", resolution "
    "FROM incidents "
    "WHERE ($1 = 'all' OR ($1 = 'open') = (resolved_at IS NULL)) "
    "AND ($2::text IS NULL OR kind = $2::text) "
    "AND ($3::bigint IS NULL OR account_id = $3::bigint) "
    "ORDER BY incident_id DESC LIMIT $4::integer";

#undef FT_INCIDENT_TIME

failure bad_row(std::string_view what) {
    return failure{errc::bad_result, {}, "unexpected row from " + std::string(what)};
}

// Splits "a,b,c" (empty: no element).
std::vector<std::string_view> split(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const auto comma = text.find(',');
        out.push_back(text.substr(0, comma));
        if (comma == std::string_view::npos) {
            break;
        }
        text.remove_prefix(comma + 1);
    }
    return out;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size()) {
        return std::nullopt;
    }
    return v;
}

// Pairs two parallel arrays returned as joined text: codes and integers.
std::optional<std::vector<std::pair<std::string, std::int64_t>>> zip(std::string_view codes,
                                                                     std::string_view numbers) {
    const auto c = split(codes);
    const auto n = split(numbers);
    if (c.size() != n.size()) {
        return std::nullopt;
    }
    std::vector<std::pair<std::string, std::int64_t>> out;
    out.reserve(c.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
        auto v = parse_integer(n[i]);
        if (!v) {
            return std::nullopt;
        }
        out.emplace_back(std::string(c[i]), *v);
    }
    return out;
}

outcome<incident_changes> read_changes(const result& r, int first_column) {
    auto opened = r.get<std::int32_t>(0, first_column);
    auto seen = r.get<std::int32_t>(0, first_column + 1);
    auto resolved = r.get<std::int32_t>(0, first_column + 2);
    if (!opened || !seen || !resolved) {
        return failure{errc::bad_result, {}, "unexpected incident counts"};
    }
    return incident_changes{*opened, *seen, *resolved};
}

// The row both chunk functions return: (last id, rows checked, problems found, three incident
// counts, currency codes, one integer per code).
struct chunk_row {
    std::optional<std::int64_t> last;
    std::int64_t checked = 0;
    std::int64_t found = 0;
    incident_changes changes;
    std::vector<std::pair<std::string, std::int64_t>> per_currency;
};

outcome<chunk_row> read_chunk_row(const result& r, std::string_view function) {
    if (r.rows() != 1) {
        return bad_row(function);
    }
    auto last = r.get<std::optional<std::int64_t>>(0, 0);
    auto checked = r.get<std::int32_t>(0, 1);
    auto found = r.get<std::int32_t>(0, 2);
    auto changes = read_changes(r, 3);
    auto codes = r.get<std::optional<std::string_view>>(0, 6);
    auto numbers = r.get<std::optional<std::string_view>>(0, 7);
    if (!last || !checked || !found || !changes || !codes || !numbers) {
        return bad_row(function);
    }
    auto per_currency = zip(codes->value_or(""), numbers->value_or(""));
    if (!per_currency) {
        return bad_row(function);
    }
    return chunk_row{*last, *checked, *found, *changes, std::move(*per_currency)};
}

asio::awaitable<outcome<detail::decision<accounts_chunk>>> accounts_body(
    std::int64_t after, std::int64_t limit, std::string run_started,
    std::chrono::milliseconds timeout, connection& conn) {
    auto r = co_await conn.query(accounts_chunk_sql, params{after, limit, run_started}, timeout);
    if (!r) {
        co_return r.error();
    }
    auto row = read_chunk_row(*r, "fulltime_reconcile_accounts");
    if (!row) {
        co_return row.error();
    }
    co_return detail::keep(accounts_chunk{row->last, row->checked, row->found, row->changes,
                                          std::move(row->per_currency)});
}

asio::awaitable<outcome<detail::decision<transfers_chunk>>> transfers_body(
    std::int64_t after, std::int64_t limit, std::string run_started,
    std::chrono::milliseconds timeout, connection& conn) {
    auto r = co_await conn.query(transfers_chunk_sql, params{after, limit, run_started}, timeout);
    if (!r) {
        co_return r.error();
    }
    auto row = read_chunk_row(*r, "fulltime_reconcile_transfers");
    if (!row) {
        co_return row.error();
    }
    co_return detail::keep(transfers_chunk{row->last, row->checked, row->found, row->changes,
                                           std::move(row->per_currency)});
}

asio::awaitable<outcome<detail::decision<incident_changes>>> currencies_body(
    std::string codes, std::string sums, std::string run_started, std::chrono::milliseconds timeout,
    connection& conn) {
    auto r =
        co_await conn.query(reconcile_currencies_sql, params{codes, sums, run_started}, timeout);
    if (!r) {
        co_return r.error();
    }
    if (r->rows() != 1) {
        co_return bad_row("fulltime_reconcile_currencies");
    }
    auto changes = read_changes(*r, 0);
    if (!changes) {
        co_return changes.error();
    }
    co_return detail::keep(*changes);
}

}  // namespace

asio::awaitable<outcome<accounts_chunk>> reconcile_accounts_chunk(connection& conn,
                                                                  std::int64_t after_account,
                                                                  std::int64_t limit,
                                                                  std::string run_started,
                                                                  reconcile_call_options options) {
    auto done = co_await detail::run_short_transaction<accounts_chunk>(
        conn, options.transaction, options.lock_retries_max,
        std::bind_front(accounts_body, after_account, limit, std::move(run_started),
                        options.query_timeout));
    co_return done;
}

asio::awaitable<outcome<transfers_chunk>> reconcile_transfers_chunk(
    connection& conn, std::int64_t after_transfer, std::int64_t limit, std::string run_started,
    reconcile_call_options options) {
    auto done = co_await detail::run_short_transaction<transfers_chunk>(
        conn, options.transaction, options.lock_retries_max,
        std::bind_front(transfers_body, after_transfer, limit, std::move(run_started),
                        options.query_timeout));
    co_return done;
}

asio::awaitable<outcome<incident_changes>> reconcile_currencies(
    connection& conn, std::vector<std::pair<std::string, std::int64_t>> sums,
    std::string run_started, reconcile_call_options options) {
    std::string codes;
    std::string amounts;
    for (const auto& [code, amount] : sums) {
        codes += (codes.empty() ? "" : ",") + code;
        amounts += (amounts.empty() ? "" : ",") + std::to_string(amount);
    }
    auto done = co_await detail::run_short_transaction<incident_changes>(
        conn, options.transaction, options.lock_retries_max,
        std::bind_front(currencies_body, std::move(codes), std::move(amounts),
                        std::move(run_started), options.query_timeout));
    co_return done;
}

asio::awaitable<outcome<std::array<std::int64_t, incident_kinds.size()>>> count_open_incidents(
    connection& conn, std::chrono::milliseconds query_timeout) {
    auto r = co_await conn.query(open_counts_sql, {}, query_timeout);
    if (!r) {
        co_return r.error();
    }
    std::array<std::int64_t, incident_kinds.size()> out{};
    for (int row = 0; row < r->rows(); ++row) {
        auto kind = r->get<std::string_view>(row, 0);
        auto n = r->get<std::int64_t>(row, 1);
        if (!kind || !n) {
            co_return bad_row("the open incident counts");
        }
        for (std::size_t k = 0; k < incident_kinds.size(); ++k) {
            if (incident_kinds[k] == *kind) {
                out[k] = *n;
            }
        }
    }
    co_return out;
}

asio::awaitable<outcome<std::vector<incident_row>>> list_incidents(connection& conn,
                                                                   incident_filter filter) {
    const char* status = filter.status == incident_status::open       ? "open"
                         : filter.status == incident_status::resolved ? "resolved"
                                                                      : "all";
    auto r =
        co_await conn.query(list_sql, params{status, filter.kind, filter.account_id, filter.limit});
    if (!r) {
        co_return r.error();
    }
    std::vector<incident_row> out;
    out.reserve(static_cast<std::size_t>(r->rows()));
    for (int row = 0; row < r->rows(); ++row) {
        incident_row i;
        auto id = r->get<std::int64_t>(row, 0);
        auto kind = r->get<std::string>(row, 1);
        auto subject = r->get<std::string>(row, 2);
        auto account = r->get<std::optional<std::int64_t>>(row, 3);
        auto side = r->get<std::optional<std::string>>(row, 4);
        auto currency = r->get<std::optional<std::string>>(row, 5);
        auto market = r->get<std::optional<std::int64_t>>(row, 6);
        auto bet = r->get<std::optional<std::int64_t>>(row, 7);
        auto expected = r->get<std::optional<std::int64_t>>(row, 8);
        auto actual = r->get<std::optional<std::int64_t>>(row, 9);
        auto details = r->get<std::string>(row, 10);
        auto first_seen = r->get<std::string>(row, 11);
        auto last_seen = r->get<std::string>(row, 12);
        auto runs = r->get<std::int32_t>(row, 13);
        auto resolved_at = r->get<std::optional<std::string>>(row, 14);
        auto resolution = r->get<std::optional<std::string>>(row, 15);
        if (!id || !kind || !subject || !account || !side || !currency || !market || !bet ||
            !expected || !actual || !details || !first_seen || !last_seen || !runs ||
            !resolved_at || !resolution) {
            co_return bad_row("incidents");
        }
        i.incident_id = *id;
        i.kind = std::move(*kind);
        i.subject = std::move(*subject);
        i.account_id = *account;
        i.side = std::move(*side);
        i.currency = std::move(*currency);
        i.market_id = *market;
        i.bet_id = *bet;
        i.expected = *expected;
        i.actual = *actual;
        i.details_json = std::move(*details);
        i.first_seen = std::move(*first_seen);
        i.last_seen = std::move(*last_seen);
        i.runs = *runs;
        i.resolved_at = std::move(*resolved_at);
        i.resolution = std::move(*resolution);
        out.push_back(std::move(i));
    }
    co_return out;
}

}  // namespace fulltime::db
