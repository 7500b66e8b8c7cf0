// The engine's list of codes (include/fulltime/db/codes.hpp) against the schema's
// (fulltime_codes, db/migrations/0001_baseline.sql) on a scratch database with the real schema:
// the same domains with exactly the same codes, and every CHECK constraint that names codes
// names codes of its domain (exactly the domain, when it is the column's list).

#include "db/db_support.hpp"

#include "fulltime/db/codes.hpp"
#include "fulltime/db/migrations.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;

namespace {

/// Returns `codes` sorted (byte order, as COLLATE "C"), as strings.
std::vector<std::string> sorted(std::span<const std::string_view> codes) {
    std::vector<std::string> out(codes.begin(), codes.end());
    std::sort(out.begin(), out.end());
    return out;
}

/// Returns the codes of one domain of the header; fails the test for an unknown domain.
std::span<const std::string_view> find_domain(std::string_view name) {
    const auto it = std::find_if(db::codes::all_domains.begin(), db::codes::all_domains.end(),
                                 [&](const auto& d) { return d.name == name; });
    REQUIRE_MESSAGE(it != db::codes::all_domains.end(), std::string{name});
    return it->codes;
}

/// Returns the first column of every row of `sql`, in the order of the rows.
awaitable<std::vector<std::string>> column(db::connection& conn, std::string sql,
                                           db::params args = {}) {
    auto r = co_await conn.query(std::move(sql), std::move(args));
    FT_REQUIRE_OK(r);
    std::vector<std::string> out;
    for (int i = 0; i < r->rows(); ++i) {
        out.emplace_back(r->text(i, 0));
    }
    co_return out;
}

/// Returns the distinct text literals ('code'::text) of a CHECK constraint, sorted.
awaitable<std::vector<std::string>> literals(db::connection& conn, std::string constraint) {
    co_return co_await column(conn,
                              "SELECT DISTINCT m[1] COLLATE \"C\" FROM pg_constraint c "
                              "CROSS JOIN LATERAL regexp_matches(pg_get_constraintdef(c.oid), "
                              "'''([a-z_]+)''::text', 'g') AS m "
                              "WHERE c.conname = $1 AND c.connamespace = 'public'::regnamespace "
                              "ORDER BY 1",
                              db::params{std::move(constraint)});
}

awaitable<void> migrated(db::connection& conn) {
    auto report = co_await db::migrate(conn, resources::migrations());
    FT_REQUIRE_OK(report);
}

awaitable<void> lists_agree(std::string url) {
    auto conn = co_await open_connection(url);
    co_await migrated(*conn);

    std::set<std::string> header_domains;
    for (const auto& d : db::codes::all_domains) {
        const std::string domain_name{d.name};
        CAPTURE(domain_name);
        CHECK(header_domains.insert(std::string{d.name}).second);
        const auto header = sorted(d.codes);
        CHECK_MESSAGE(std::adjacent_find(header.begin(), header.end()) == header.end(),
                      "a code is listed twice");
        const auto table = co_await column(
            *conn, "SELECT code FROM fulltime_codes WHERE domain = $1 ORDER BY code COLLATE \"C\"",
            db::params{std::string{d.name}});
        CHECK(table == header);
    }
    const auto table_domains =
        co_await column(*conn, "SELECT DISTINCT domain FROM fulltime_codes ORDER BY 1");
    CHECK(std::set<std::string>(table_domains.begin(), table_domains.end()) == header_domains);
}

awaitable<void> checks_agree(std::string url) {
    auto conn = co_await open_connection(url);
    co_await migrated(*conn);

    // CHECK constraints that are a column's list of codes: exactly the domain.
    const std::vector<std::pair<std::string, std::string_view>> lists = {
        {"markets_status_check", "market_status"},
        {"bet_settlements_kind_check", "settlement_kind"},
        {"bet_settlements_outcome_check", "settlement_outcome"},
        {"ledger_transfers_debit_side_check", "ledger_side"},
        {"ledger_transfers_credit_side_check", "ledger_side"},
        {"result_events_kind_check", "result_event_kind"},
        {"result_events_refusal_check", "event_refusal"},
        {"incidents_kind_check", "incident_kind"},
        {"incidents_side_check", "incident_side"},
    };
    for (const auto& [name, domain] : lists) {
        CAPTURE(name);
        const auto listed = co_await literals(*conn, name);
        CHECK(listed == sorted(find_domain(domain)));
    }

    // CHECK constraints that state a rule about some codes: every code they name is in one of
    // their domains.
    const std::vector<std::pair<std::string, std::vector<std::string_view>>> rules = {
        {"ledger_debit_account_matches_side", {"ledger_side"}},
        {"ledger_credit_account_matches_side", {"ledger_side"}},
        {"bet_settlements_effect_has_outcome", {"settlement_kind"}},
        {"bet_settlements_reversal_is_bare", {"settlement_kind"}},
        {"bet_settlements_cancel_is_void", {"settlement_kind", "settlement_outcome"}},
        {"period_side_sums_side_check", {"ledger_side"}},
    };
    for (const auto& [name, domains] : rules) {
        CAPTURE(name);
        const auto named = co_await literals(*conn, name);
        CHECK_FALSE(named.empty());
        for (const auto& code : named) {
            CAPTURE(code);
            CHECK(std::any_of(domains.begin(), domains.end(), [&](std::string_view d) {
                return db::codes::contains(find_domain(d), code);
            }));
        }
    }

    // No other CHECK names a code: a new one must be added above, and its codes to the table and
    // the header.
    std::set<std::string> known;
    for (const auto& c : lists) {
        known.insert(c.first);
    }
    for (const auto& c : rules) {
        known.insert(c.first);
    }
    const auto naming =
        co_await column(*conn,
                        // DISTINCT: a partition's CHECKs carry its parent's names.
                        "SELECT DISTINCT c.conname FROM pg_constraint c "
                        "WHERE c.contype = 'c' AND c.connamespace = 'public'::regnamespace "
                        "AND pg_get_constraintdef(c.oid) ~ '''[a-z_]+''::text' ORDER BY 1");
    CHECK(naming.size() == known.size());
    for (const auto& name : naming) {
        CAPTURE(name);
        CHECK(known.count(name) == 1);
    }
}

}  // namespace

TEST_CASE("codes: include/fulltime/db/codes.hpp and fulltime_codes list the same codes") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, lists_agree(db.url()));
}

TEST_CASE("codes: every CHECK constraint that names codes names those of its domain") {
    scratch_database db;
    asio::io_context ioc;
    run(ioc, checks_agree(db.url()));
}
