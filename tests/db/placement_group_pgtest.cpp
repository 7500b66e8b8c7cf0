// fulltime_place_group (db/functions/fulltime_place_group.sql) against the real PostgreSQL: each
// outcome and response of a mixed group, the rows it writes, its equivalence with the per-item
// fulltime_place run one item after the other in one transaction (tests/db/reference_place.hpp),
// the one documented difference, keys with any characters, and the lock order that keeps two groups
// and a settlement batch out of a deadlock. Groups of the engine's path go through db::place_group
// on the placement pool (prepared statements); the reference runs as SQL. Every scenario ends with
// the money invariants of docs/design.md.

#include "db/db_support.hpp"
#include "db/reference_place.hpp"

#include "fulltime/core/bets_protocol.hpp"
#include "fulltime/db/placement_statements.hpp"
#include "fulltime/db/pool.hpp"
#include "fulltime/limits.hpp"
#include "support/engine_fixture.hpp"

#include <boost/asio/io_context.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace fulltime;
using namespace fulltime::test;
using asio::awaitable;
using nlohmann::json;

namespace {

using accept = bets::accept_policy;

/// Holds one answer of a group: its item, outcome and response.
struct answer {
    int item = 0;
    std::string outcome;
    json response;
};

/// Holds a group's answers, or the failure of its call.
struct group_result {
    std::vector<answer> answers;
    std::string error;     ///< empty on success
    std::string sqlstate;  ///< of the failure
};

/// Encodes `group` with the real fingerprints (bets::fingerprint), as the placement actor does.
db::place_group_params encode(const std::vector<bets::place_request>& group) {
    std::vector<std::string> fingerprints;
    fingerprints.reserve(group.size());
    for (const auto& r : group) {
        fingerprints.push_back(bets::fingerprint(r));
    }
    std::vector<db::place_group_item> items;
    for (std::size_t i = 0; i < group.size(); ++i) {
        items.push_back({&group[i], fingerprints[i]});
    }
    return db::encode_place_group(items);
}

group_result read_rows(const db::outcome<db::result>& rows) {
    group_result out;
    if (!rows) {
        out.error = db::describe(rows.error());
        out.sqlstate = rows.error().sqlstate;
        return out;
    }
    const db::place_group_rows read(*rows);
    for (int i = 0; i < read.size(); ++i) {
        auto row = read.at(i);
        if (!row) {
            out.error = db::describe(row.error());
            return out;
        }
        out.answers.push_back({row->item, std::string{row->outcome}, json::parse(row->response)});
    }
    return out;
}

/// Calls `function` (fulltime_place_group or reference_place_group, same parameters) as SQL.
awaitable<db::outcome<db::result>> call_sql(db::connection& conn, std::string function,
                                            db::place_group_params p, int lock_timeout_ms,
                                            int shard_hint) {
    co_return co_await conn.query(
        "SELECT item, outcome, response::text FROM " + function +
            "($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::integer, "
            "$7::bigint[], $8::text[], $9::integer, $10::integer)",
        db::params(p.accounts, p.keys, p.fingerprints, p.selections, p.stakes,
                   fulltime::limits::minor_digits_max, p.odds, p.accepts, lock_timeout_ms,
                   shard_hint),
        30s);
}

awaitable<group_result> engine_call(db::pool* pool, db::place_group_params p, int shard_hint) {
    auto conn = co_await pool->acquire();
    if (!conn) {
        co_return group_result{{}, db::describe(conn.error()), {}};
    }
    auto rows = co_await db::place_group(**conn, p, 1000, shard_hint, 30s);
    if (!rows) {
        co_return group_result{{}, db::describe(rows.error()), rows.error().sqlstate};
    }
    group_result out;
    for (int i = 0; i < rows->size(); ++i) {
        auto row = rows->at(i);
        if (!row) {
            out.error = db::describe(row.error());
            co_return out;
        }
        out.answers.push_back({row->item, std::string{row->outcome}, json::parse(row->response)});
    }
    co_return out;
}

awaitable<group_result> reference_call(db::pool* pool, db::place_group_params p, int shard_hint) {
    auto conn = co_await pool->acquire();
    if (!conn) {
        co_return group_result{{}, db::describe(conn.error()), {}};
    }
    co_return read_rows(co_await call_sql(**conn, "reference_place_group", p, 1000, shard_hint));
}

/// Places `group` with the engine's path: db::place_group on the placement pool.
std::vector<answer> place(engine& e, const std::vector<bets::place_request>& group,
                          int shard_hint = 0) {
    auto r = e.on_loop(engine_call(e.pools().placement.front().get(), encode(group), shard_hint));
    REQUIRE_MESSAGE(r.error.empty(), r.error);
    REQUIRE(r.answers.size() == group.size());
    for (std::size_t i = 0; i < r.answers.size(); ++i) {
        REQUIRE(r.answers[i].item == static_cast<int>(i + 1));
    }
    return r.answers;
}

/// Places `group` with the per-item reference, in one transaction.
std::vector<answer> place_reference(engine& e, const std::vector<bets::place_request>& group,
                                    int shard_hint = 0) {
    auto r =
        e.on_loop(reference_call(e.pools().placement.front().get(), encode(group), shard_hint));
    REQUIRE_MESSAGE(r.error.empty(), r.error);
    REQUIRE(r.answers.size() == group.size());
    return r.answers;
}

/// Returns `response` with the values that differ between two databases (bet ids, times)
/// replaced by "*", so that two databases' answers compare equal when they agree on the rest.
json comparable(json response) {
    for (const char* field : {"bet_id", "placed_at"}) {
        if (response.is_object() && response.contains(field)) {
            response[field] = "*";
        }
    }
    return response;
}

/// Returns one line per row of `sql`'s single text column.
std::string rows_text(const engine& e, const std::string& sql) {
    return e.text("SELECT coalesce(string_agg(x, E'\\n'), '') FROM (" + sql + ") AS r(x)");
}

/// Returns what a group changed, in a form two databases can compare: balances, exposure, bets
/// in bet order, their ledger legs and outbox rows, and the stored keys, with bet ids replaced by
/// the keys of their bets.
std::map<std::string, std::string> books(const engine& e) {
    std::map<std::string, std::string> out;
    out["accounts"] =
        rows_text(e,
                  "SELECT concat_ws(' ', account_id, available, reserved, owed) FROM accounts "
                  "ORDER BY account_id");
    out["exposure"] =
        rows_text(e,
                  "SELECT concat_ws(' ', market_id, shard, liability) FROM market_exposure "
                  "ORDER BY market_id, shard");
    out["bets"] = rows_text(
        e,
        "SELECT concat_ws(' ', account_id, market_id, selection_id, currency, stake, odds, "
        "idempotency_key) FROM bets ORDER BY bet_id");
    out["ledger"] = rows_text(
        e,
        "SELECT concat_ws(' ', b.account_id, b.idempotency_key, l.entry_key = 'bet:' || "
        "l.bet_id || ':reserve', l.currency, l.debit_side, l.debit_account_id, "
        "l.credit_side, l.credit_account_id, l.amount) FROM ledger_transfers l JOIN bets b "
        "ON b.bet_id = l.bet_id ORDER BY l.transfer_id");
    out["outbox"] =
        rows_text(e,
                  "SELECT concat_ws(' ', o.topic, o.account_id, b.idempotency_key, (o.payload - "
                  "'bet_id' - 'placed_at')::text, (o.payload->>'bet_id')::bigint = b.bet_id, "
                  "(o.payload->>'placed_at')::timestamptz = b.placed_at) FROM outbox o LEFT JOIN "
                  "bets b ON b.bet_id = (o.payload->>'bet_id')::bigint ORDER BY o.outbox_id");
    out["keys"] = rows_text(
        e,
        "SELECT concat_ws(' ', k.account_id, k.idempotency_key, k.fingerprint, "
        "(k.response - 'bet_id' - 'placed_at')::text, k.response ? 'bet_id', "
        "k.response ? 'placed_at', k.bet_id IS NOT NULL, b.idempotency_key = "
        "k.idempotency_key AND b.account_id = k.account_id AND (k.response->>'bet_id')::bigint "
        "= b.bet_id) FROM idempotency_keys k LEFT JOIN bets b ON b.bet_id = k.bet_id "
        "ORDER BY k.account_id, k.idempotency_key COLLATE \"C\"");
    return out;
}

/// Requires two databases' answers to agree item by item, bet ids and times aside.
void check_same_answers(const std::vector<answer>& got, const std::vector<answer>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i + 1);
        CHECK(got[i].item == want[i].item);
        CHECK(got[i].outcome == want[i].outcome);
        CHECK(comparable(got[i].response).dump() == comparable(want[i].response).dump());
    }
}

/// Requires two databases' books to agree.
void check_same_books(const engine& got, const engine& want) {
    const auto a = books(got);
    const auto b = books(want);
    for (const auto& [name, text] : a) {
        CAPTURE(name);
        CHECK(text == b.at(name));
    }
}

/// Checks the money invariants and the placement's own: no shard above its limit, exposure equal
/// to the bets' liabilities, every key with its stored response, a stored bet id that is its
/// bet's, and bet ids ascending with arrival (their keys' creation is one group at a time).
void check_invariants(const engine& e) {
    e.check_money_invariants();
    CHECK_MESSAGE(e.scalar("SELECT count(*) FROM market_exposure WHERE liability > "
                           "liability_limit OR liability < 0") == 0,
                  "an exposure shard above its limit");
    CHECK_MESSAGE(e.scalar("SELECT count(*) FROM markets m WHERE (SELECT coalesce(sum(liability), "
                           "0) FROM market_exposure e WHERE e.market_id = m.market_id) <> (SELECT "
                           "coalesce(sum(ceil(b.stake::numeric * (b.odds - 10000) / 10000)), 0) "
                           "FROM bets b WHERE b.market_id = m.market_id)") == 0,
                  "exposure differs from the bets' liabilities");
    CHECK_MESSAGE(e.scalar("SELECT count(*) FROM idempotency_keys WHERE response IS NULL") == 0,
                  "a key without its stored response");
    CHECK_MESSAGE(
        e.scalar("SELECT count(*) FROM idempotency_keys k LEFT JOIN bets b ON b.bet_id "
                 "= k.bet_id WHERE k.bet_id IS NOT NULL AND (b.bet_id IS NULL OR "
                 "b.account_id <> k.account_id OR b.idempotency_key <> "
                 "k.idempotency_key OR (k.response->>'bet_id')::bigint <> k.bet_id)") == 0,
        "a stored bet id that is not its key's bet");
    CHECK_MESSAGE(e.scalar("SELECT count(*) FROM bets b WHERE NOT EXISTS (SELECT 1 FROM "
                           "idempotency_keys k WHERE k.bet_id = b.bet_id)") == 0,
                  "a bet its key does not name");
}

/// Creates `n` accounts from `first` holding `amounts[i]` each, as seed deposits.
void open_accounts(const engine& e, std::int64_t first, const std::vector<std::int64_t>& amounts) {
    std::string values;
    for (std::size_t i = 0; i < amounts.size(); ++i) {
        values += (i == 0 ? "(" : ",(") + std::to_string(first + static_cast<std::int64_t>(i)) +
                  ", " + std::to_string(amounts[i]) + ")";
    }
    e.exec(
        "BEGIN; CREATE TEMP TABLE seed (a bigint, amount bigint) ON COMMIT DROP; "
        "INSERT INTO seed VALUES " +
        values +
        "; INSERT INTO accounts (account_id, currency, available) SELECT a, 'EUR', amount FROM "
        "seed; INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, "
        "credit_account_id, amount) SELECT 'deposit:' || a || ':seed', 'EUR', 'cash', "
        "'available', a, amount FROM seed WHERE amount > 0; COMMIT;");
}

/// A bet of `stake` minor units of EUR (the accounts' currency here), sent as thousandths.
bets::place_request bet(std::int64_t account, std::string key, std::int64_t selection,
                        std::int64_t stake, std::int64_t odds, accept policy = accept::any) {
    return bets::place_request{account, std::move(key), selection, stake * 10, odds, policy};
}

/// A bet of account 2 on selection 3001 at 1.50 whose stake, in thousandths, need not be whole
/// minor units of EUR.
bets::place_request thousandths_bet(std::string key, std::int64_t thousandths) {
    auto b = bet(2, std::move(key), 3001, 0, 15000);
    b.stake_thousandths = thousandths;
    return b;
}

/// A fresh database with the engine's schema (and so fulltime_place_group) and the reference.
struct database : engine {
    database() : engine(engine_parts{}) { exec(reference_place_sql); }
};

// --- A mixed group --------------------------------------------------------------------------

// Market 100: two shards of 10000, stakes 10..20000; 1001 at 2.00 (liability = stake), 1002 at
// 3.00 (liability = 2 x stake). Market 200 suspended. Market 300: four shards, ample, stakes
// 10..5000, 3001 at 1.50 (liability = stake / 2).
void mixed_catalog(const engine& e) {
    e.add_market(100, {{1001, 20000}, {1002, 30000}}, {10, 20000, 20000, 2});
    e.add_market(200, {{2001, 20000}}, {10, 5000, 1000000, 1});
    e.exec("UPDATE markets SET status = 'suspended' WHERE market_id = 200");
    e.add_market(300, {{3001, 15000}}, {10, 5000, 1'000'000'000, 4});
    open_accounts(e, 1, {10000, 1000, 100000, 5000});
}

const std::vector<bets::place_request> earlier_group{bet(3, "old", 3001, 100, 15000)};

std::vector<bets::place_request> mixed_group() {
    return {
        bet(1, "a1", 3001, 3000, 15000, accept::exact),   // 1 placed: 7000 / 3000
        bet(1, "a2", 3001, 4000, 14000, accept::better),  // 2 placed at 1.50: 3000 / 7000
        bet(1, "a3", 3001, 5000, 15000),                  // 3 insufficient_funds
        bet(1, "a4", 3001, 2500, 15000),                  // 4 placed all the same: 500 / 9500
        bet(3, "old", 3001, 100, 15000),                  // 5 replayed (earlier group)
        bet(3, "old", 3001, 101, 15000),                  // 6 key_reused
        bet(4, "dup", 3001, 1000, 15000),                 // 7 placed: 4000 / 1000
        bet(4, "dup", 3001, 1000, 15000),                 // 8 replayed: item 7's response
        bet(4, "dup", 3001, 999, 15000),                  // 9 key_reused
        bet(2, "u1", 9999, 100, 15000),                   // 10 unknown_selection
        bet(2, "s1", 2001, 100, 20000),                   // 11 market_suspended
        bet(2, "st1", 3001, 5, 15000),                    // 12 stake_limit (below)
        bet(2, "st2", 3001, 6000, 15000),                 // 13 stake_limit (above)
        bet(2, "o1", 3001, 100, 16000, accept::exact),    // 14 odds_changed
        bet(2, "o2", 3001, 100, 16000, accept::better),   // 15 odds_changed
        bet(99, "m1", 3001, 100, 15000),                  // 16 insufficient_funds (no account)
        bet(3, "L1", 1002, 4000, 30000),                  // 17 placed, shard 0: 8000
        bet(3, "L2", 1002, 1500, 30000),                  // 18 shard 0 full: shard 1, 3000
        bet(3, "L3", 1002, 10001, 30000),                 // 19 liability_limit (the market's)
        bet(3, "L4", 1002, 4000, 30000),                  // 20 liability_limit (both shards)
        bet(2, "L5", 1002, 1250, 30000),                  // 21 falls back, then no funds
        bet(2, "L6", 1001, 500, 20000),                   // 22 placed, shard 0: 8500
        thousandths_bet("d1", 1005),                      // 23 invalid: 1.005 EUR
        bet(2, "d1", 3001, 5, 15000),                     // 24 stake_limit: 23 took no key
    };
}

/// Holds the bets the mixed group placed: bet id by item number (1-based, as in mixed_group).
using mixed_bets = std::map<int, std::int64_t>;

// Checks that 1-based `item` was rejected with `code` (and `details`, an object, in its response).
void check_refused(const std::vector<answer>& a, std::size_t item, const std::string& code,
                   const json& details = {}) {
    CAPTURE(item);
    const auto& got = a[item - 1];
    CHECK(got.outcome == "rejected");
    json want = {{"outcome", "rejected"}, {"code", code}};
    if (details.is_object()) {
        want.update(details);
    }
    CHECK(got.response == want);
}

// Checks that 1-based `item` was placed as asked, with these balances after it, and that its
// row says the same; returns its bet.
std::int64_t check_placed(database& e, const std::vector<answer>& a,
                          const std::vector<bets::place_request>& group, std::size_t item,
                          std::int64_t available, std::int64_t reserved, std::int64_t market,
                          std::int64_t odds) {
    CAPTURE(item);
    const auto& got = a[item - 1];
    const auto& r = group[item - 1];
    REQUIRE(got.outcome == "placed");
    const auto& p = got.response;
    CHECK(p.size() == 11);
    CHECK(p["outcome"] == "placed");
    CHECK(p["account_id"] == r.account_id);
    CHECK(p["market_id"] == market);
    CHECK(p["selection_id"] == r.selection_id);
    CHECK(p["stake"] == r.stake_thousandths / 10);
    CHECK(p["odds"] == odds);
    CHECK(p["currency"] == "EUR");
    CHECK(p["available"] == available);
    CHECK(p["reserved"] == reserved);
    const auto bet_id = p["bet_id"].get<std::int64_t>();
    CHECK(std::regex_match(p["placed_at"].get<std::string>(),
                           std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
    CHECK(e.text("SELECT to_char(placed_at AT TIME ZONE 'UTC', "
                 "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM bets WHERE bet_id = " +
                 std::to_string(bet_id)) == p["placed_at"].get<std::string>());
    CHECK(e.text("SELECT concat_ws(' ', account_id, market_id, selection_id, stake, odds, "
                 "idempotency_key) FROM bets WHERE bet_id = " +
                 std::to_string(bet_id)) ==
          std::to_string(r.account_id) + " " + std::to_string(market) + " " +
              std::to_string(r.selection_id) + " " + std::to_string(r.stake_thousandths / 10) +
              " " + std::to_string(odds) + " " + r.idempotency_key);
    return bet_id;
}

// Checks each item's answer in the mixed group; returns the bets it placed.
mixed_bets check_mixed_answers(database& e, const std::vector<answer>& a,
                               const std::vector<bets::place_request>& group,
                               const std::vector<answer>& earlier) {
    mixed_bets ids;
    // Two placements of account 1, the second seeing the first's reservation; a refusal for
    // funds that leaves a later, smaller bet of the same account alone.
    ids[1] = check_placed(e, a, group, 1, 7000, 3000, 300, 15000);
    ids[2] = check_placed(e, a, group, 2, 3000, 7000, 300, 15000);
    check_refused(a, 3, "insufficient_funds");
    ids[4] = check_placed(e, a, group, 4, 500, 9500, 300, 15000);
    // A key stored by an earlier group: the identical response; other parameters: key_reused.
    CHECK(a[4].outcome == "replayed");
    CHECK(a[4].response == earlier[0].response);
    CHECK(a[5].outcome == "key_reused");
    CHECK(a[5].response == json{{"code", "idempotency_key_reused"}});
    // One key twice in the group: the second is a second request after the first.
    ids[7] = check_placed(e, a, group, 7, 4000, 1000, 300, 15000);
    CHECK(a[7].outcome == "replayed");
    CHECK(a[7].response == a[6].response);
    CHECK(a[8].outcome == "key_reused");
    CHECK(a[8].response == json{{"code", "idempotency_key_reused"}});
    check_refused(a, 10, "unknown_selection", {{"selection_id", 9999}});
    check_refused(a, 11, "market_suspended", {{"market_id", 200}, {"market_status", "suspended"}});
    check_refused(a, 12, "stake_limit",
                  {{"stake_min", 10}, {"stake_max", 5000}, {"currency", "EUR"}});
    check_refused(a, 13, "stake_limit",
                  {{"stake_min", 10}, {"stake_max", 5000}, {"currency", "EUR"}});
    check_refused(a, 14, "odds_changed", {{"odds", 15000}});
    check_refused(a, 15, "odds_changed", {{"odds", 15000}});
    check_refused(a, 16, "insufficient_funds", {{"account_missing", true}});
    // Liability on market 100: the preferred shard (0), the fallback, the market's limit, both
    // shards full, and a fallback refused for funds that gives its liability back.
    ids[17] = check_placed(e, a, group, 17, 95900, 4100, 100, 30000);
    ids[18] = check_placed(e, a, group, 18, 94400, 5600, 100, 30000);
    check_refused(a, 19, "liability_limit");
    check_refused(a, 20, "liability_limit");
    check_refused(a, 21, "insufficient_funds");
    ids[22] = check_placed(e, a, group, 22, 500, 500, 100, 20000);
    // More decimals than the currency: nothing stored, so the next item with its key claims it.
    CHECK(a[22].outcome == "invalid");
    CHECK(a[22].response ==
          json{{"outcome", "invalid"}, {"stake", 1005}, {"stake_digits", 3}, {"currency", "EUR"}});
    check_refused(a, 24, "stake_limit",
                  {{"stake_min", 10}, {"stake_max", 5000}, {"currency", "EUR"}});
    CHECK(e.text("SELECT fingerprint FROM idempotency_keys WHERE account_id = 2 AND "
                 "idempotency_key = 'd1'") == bets::fingerprint(group[23]));
    return ids;
}

// Checks the rows the mixed group wrote: balances, exposure, bets, ledger and outbox.
void check_mixed_rows(database& e, const mixed_bets& ids) {
    CHECK(rows_text(e,
                    "SELECT concat_ws(' ', account_id, available, reserved) FROM accounts "
                    "ORDER BY account_id") == "1 500 9500\n2 500 500\n3 94400 5600\n4 4000 1000");
    CHECK(rows_text(e,
                    "SELECT concat_ws(' ', market_id, shard, liability) FROM market_exposure "
                    "ORDER BY market_id, shard") ==
          "100 0 8500\n100 1 3000\n200 0 0\n300 0 5300\n300 1 0\n300 2 0\n300 3 0");
    CHECK(e.scalar("SELECT count(*) FROM bets") == 8);
    // One reservation per bet, available -> reserved of its account, in arrival order.
    CHECK(rows_text(e,
                    "SELECT concat_ws(' ', l.entry_key = 'bet:' || b.bet_id || ':reserve', "
                    "l.debit_side, l.debit_account_id, l.credit_side, l.credit_account_id, "
                    "l.amount, l.currency) FROM ledger_transfers l JOIN bets b USING (bet_id) "
                    "WHERE b.bet_id >= " +
                        std::to_string(ids.at(1)) + " ORDER BY l.transfer_id") ==
          "t available 1 reserved 1 3000 EUR\nt available 1 reserved 1 4000 EUR\n"
          "t available 1 reserved 1 2500 EUR\nt available 4 reserved 4 1000 EUR\n"
          "t available 3 reserved 3 4000 EUR\nt available 3 reserved 3 1500 EUR\n"
          "t available 2 reserved 2 500 EUR");
    // One bet_placed row per bet, in arrival order: account, odds, stake, item, market, selection.
    const auto placed = [&ids](int account, int odds, int stake, int item, int market,
                               int selection) {
        return "bet_placed " + std::to_string(account) + " {\"odds\": " + std::to_string(odds) +
               ", \"stake\": " + std::to_string(stake) +
               ", \"bet_id\": " + std::to_string(ids.at(item)) +
               ", \"currency\": \"EUR\", \"market_id\": " + std::to_string(market) +
               ", \"selection_id\": " + std::to_string(selection) + "}";
    };
    CHECK(rows_text(e,
                    "SELECT concat_ws(' ', o.topic, o.account_id, (o.payload - 'placed_at')::text) "
                    "FROM outbox o WHERE (o.payload->>'bet_id')::bigint >= " +
                        std::to_string(ids.at(1)) + " ORDER BY o.outbox_id") ==
          placed(1, 15000, 3000, 1, 300, 3001) + "\n" + placed(1, 15000, 4000, 2, 300, 3001) +
              "\n" + placed(1, 15000, 2500, 4, 300, 3001) + "\n" +
              placed(4, 15000, 1000, 7, 300, 3001) + "\n" + placed(3, 30000, 4000, 17, 100, 1002) +
              "\n" + placed(3, 30000, 1500, 18, 100, 1002) + "\n" +
              placed(2, 20000, 500, 22, 100, 1001));
    // Each payload's placed_at is its bet's, to the microsecond (the read model's projector
    // takes it from there).
    CHECK(e.scalar("SELECT count(*) FROM outbox o JOIN bets b ON b.bet_id = "
                   "(o.payload->>'bet_id')::bigint "
                   "WHERE o.topic = 'bet_placed' AND b.bet_id >= " +
                   std::to_string(ids.at(1)) +
                   " AND (o.payload->>'placed_at')::timestamptz = b.placed_at") == 7);
}

// Checks that each claimed key stores exactly the response its item got, with its bet.
void check_mixed_keys(database& e, const std::vector<answer>& a,
                      const std::vector<bets::place_request>& group,
                      const std::vector<answer>& earlier) {
    // Each claimed key stores exactly the response its item got, with its bet; the replayed and
    // reused keys keep what they stored first.
    std::set<std::string> seen;
    for (std::size_t i = 0; i < group.size(); ++i) {
        const auto& r = group[i];
        if (a[i].outcome == "invalid") {
            continue;  // stored nowhere
        }
        const auto where =
            " FROM idempotency_keys WHERE account_id = " + std::to_string(r.account_id) +
            " AND idempotency_key = '" + r.idempotency_key + "'";
        const auto stored = json::parse(e.text("SELECT response::text" + where));
        const bool first = seen.insert(std::to_string(r.account_id) + r.idempotency_key).second;
        CAPTURE(i + 1);
        if (r.idempotency_key == "old") {
            CHECK(stored == earlier[0].response);
        } else if (first) {
            CHECK(stored == a[i].response);
            CHECK(e.text("SELECT fingerprint" + where) == bets::fingerprint(r));
            CHECK(e.text("SELECT coalesce(bet_id::text, '')" + where) ==
                  (a[i].outcome == "placed" ? a[i].response["bet_id"].dump() : ""));
        }
    }
}

// Checks the group retried as a whole: every item replays its first answer.
void check_mixed_retry(database& e, const std::vector<answer>& a,
                       const std::vector<bets::place_request>& group) {
    // A lock timeout would do this.
    const auto again = place(e, group, 1);
    for (std::size_t i = 0; i < group.size(); ++i) {
        CAPTURE(i + 1);
        if (a[i].outcome == "key_reused" || a[i].outcome == "invalid") {
            CHECK(again[i].outcome == a[i].outcome);
            CHECK(again[i].response == a[i].response);
        } else {
            CHECK(again[i].outcome == "replayed");
            CHECK(again[i].response == a[i].response);
        }
    }
}

TEST_CASE("placement group: a mixed group gives each item its own outcome and writes its rows") {
    database e;
    mixed_catalog(e);
    const auto earlier = place(e, earlier_group);
    REQUIRE(earlier[0].outcome == "placed");
    const auto group = mixed_group();
    const auto a = place(e, group);

    const mixed_bets ids = check_mixed_answers(e, a, group, earlier);
    // Bet ids ascend with arrival.
    std::vector<std::int64_t> bet_ids;
    for (const auto& [item, bet_id] : ids) {
        bet_ids.push_back(bet_id);
    }
    CHECK(bet_ids.size() == 7);
    CHECK(std::is_sorted(bet_ids.begin(), bet_ids.end()));
    CHECK(std::adjacent_find(bet_ids.begin(), bet_ids.end()) == bet_ids.end());
    check_mixed_rows(e, ids);
    check_mixed_keys(e, a, group, earlier);
    CHECK(e.scalar("SELECT count(*) FROM idempotency_keys") == 20);
    check_invariants(e);

    // The same two groups, one item after the other, through the reference: the same answers
    // and the same books.
    database ref;
    mixed_catalog(ref);
    check_same_answers(place_reference(ref, earlier_group), earlier);
    check_same_answers(place_reference(ref, group), a);
    check_same_books(e, ref);

    check_mixed_retry(e, a, group);
    CHECK(e.scalar("SELECT count(*) FROM bets") == 8);
    check_invariants(e);
}

// --- Equivalence with the per-item placement ---------------------------------------------------

/// Describes one random scenario.
struct scenario {
    std::uint64_t seed = 1;
    std::int64_t funds_min = 0;  ///< each account's funds, uniform in [min, max]
    std::int64_t funds_max = 0;
    std::int64_t limit_1 = 0;  ///< market 1's liability limit (4 shards)
    std::int64_t limit_2 = 0;  ///< market 2's (2 shards)
    std::size_t items = 200;
};

constexpr std::int64_t accounts_n = 20;

void random_catalog(const engine& e, const scenario& s) {
    e.add_market(1, {{11, 20000}, {12, 35000}}, {10, 5000, s.limit_1, 4});
    e.add_market(2, {{21, 15000}, {22, 50000}}, {10, 5000, s.limit_2, 2});
    e.add_market(3, {{31, 20000}}, {10, 5000, 1'000'000'000, 4});
    e.exec("UPDATE markets SET status = 'suspended' WHERE market_id = 3");
    std::mt19937_64 rng(s.seed);
    std::uniform_int_distribution<std::int64_t> funds(s.funds_min, s.funds_max);
    std::vector<std::int64_t> amounts;
    for (std::int64_t a = 0; a < accounts_n; ++a) {
        amounts.push_back(funds(rng));
    }
    open_accounts(e, 1, amounts);
}

/// Returns a random group: mostly fresh keys over 20 accounts (and a missing one), some keys
/// repeated within the group or taken from `earlier` (same or other parameters), selections of
/// open, suspended and unknown markets, stakes inside and outside the limits, odds as asked or
/// not under each accept mode.
std::vector<bets::place_request> random_group(std::mt19937_64& rng, const std::string& prefix,
                                              std::size_t n,
                                              const std::vector<bets::place_request>& earlier) {
    const std::map<std::int64_t, std::int64_t> odds{{11, 20000}, {12, 35000}, {21, 15000},
                                                    {22, 50000}, {31, 20000}, {999, 20000}};
    auto pick = [&](std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    std::vector<bets::place_request> out;
    for (std::size_t i = 0; i < n; ++i) {
        const auto r = pick(0, 99);
        if (r < 8 && !out.empty()) {
            auto again = out[static_cast<std::size_t>(pick(0, std::ssize(out) - 1))];
            if (pick(0, 1) == 0) {
                again.stake_thousandths += 10;  // other parameters: key_reused
            }
            out.push_back(again);
            continue;
        }
        if (r < 12 && !earlier.empty()) {
            auto again = earlier[static_cast<std::size_t>(pick(0, std::ssize(earlier) - 1))];
            if (pick(0, 1) == 0) {
                again.odds_units += 1;
            }
            out.push_back(again);
            continue;
        }
        bets::place_request b;
        b.account_id = pick(0, 49) == 0 ? accounts_n + 1 : pick(1, accounts_n);
        b.idempotency_key = prefix + std::to_string(i);
        const auto s = pick(0, 99);
        constexpr std::int64_t open_selections[] = {11, 12, 21, 22};
        b.selection_id = s < 3   ? 999
                         : s < 8 ? 31
                                 : open_selections[static_cast<std::size_t>(s % 4)];
        const auto st = pick(0, 99);
        // Thousandths of EUR: 2% with a third decimal, invalid for EUR's two.
        b.stake_thousandths = st < 2   ? pick(100, 30000) * 10 + 5
                              : st < 6 ? 50
                              : st < 8 ? 60000
                                       : pick(10, 3000) * 10;
        b.accept = static_cast<accept>(pick(1, 3));
        const auto o = pick(0, 9);
        b.odds_units = odds.at(b.selection_id) + (o == 0 ? 500 : o == 1 ? -500 : 0);
        out.push_back(b);
    }
    return out;
}

void check_equivalent(const scenario& s) {
    CAPTURE(s.seed);
    database got;
    database want;
    random_catalog(got, s);
    random_catalog(want, s);
    std::mt19937_64 rng(s.seed * 7919);
    // An earlier group stores keys the main group replays or reuses.
    const auto first = random_group(rng, "e", 30, {});
    check_same_answers(place(got, first, 1), place_reference(want, first, 1));
    const auto group = random_group(rng, "g", s.items, first);
    const auto a = place(got, group, 1);
    check_same_answers(a, place_reference(want, group, 1));
    check_same_books(got, want);
    check_invariants(got);
    check_invariants(want);

    // The data reached every outcome it was made for.
    std::map<std::string, int> seen;
    for (const auto& x : a) {
        ++seen[x.outcome == "rejected" ? x.response["code"].get<std::string>() : x.outcome];
    }
    for (const auto& [k, v] : seen) {
        MESSAGE(k << ": " << v);
    }
    for (const char* outcome : {"placed", "replayed", "key_reused", "unknown_selection",
                                "market_suspended", "stake_limit", "odds_changed", "invalid"}) {
        CHECK_MESSAGE(seen[outcome] > 0, outcome);
    }
    if (s.funds_max < 100'000) {
        CHECK(seen["insufficient_funds"] > 0);
    } else {
        CHECK(seen["liability_limit"] > 0);
        // Preferred shard 1 of both markets filled up and spilled over to the others.
        CHECK(got.scalar("SELECT count(*) FROM market_exposure WHERE market_id IN (1, 2) AND "
                         "shard <> 1 AND liability > 0") > 0);
    }
}

TEST_CASE("placement group: random groups with tight funds decide as the items one by one") {
    // Ample liability limits: no shard ever fills, so deciding exposure before funds cannot
    // differ from the per-item order (the next test case shows the one way it can).
    for (std::uint64_t seed : {1, 2, 3}) {
        check_equivalent({seed, 0, 20000, 1'000'000'000, 1'000'000'000, 200});
    }
}

TEST_CASE("placement group: random groups with tight limits decide as the items one by one") {
    // Ample funds: no refusal for funds can give liability back, and the shards fill up, spill
    // over to the one with the most headroom and refuse.
    for (std::uint64_t seed : {4, 5, 6}) {
        check_equivalent({seed, 1'000'000'000, 1'000'000'000, 200000, 100000, 200});
    }
}

TEST_CASE("placement group: liability is decided before funds, on the safe side") {
    // One shard of 10000 at 2.00 (liability = stake). Item 1 fits, then has no funds; item 2
    // would fit once item 1 gave its liability back. One by one, item 2 is placed; in the group
    // it was decided while item 1 still held the headroom, and it is refused. Nothing is ever
    // over-committed, and the headroom is back for the next group.
    auto catalog = [](const engine& e) {
        e.add_market(10, {{101, 20000}}, {10, 100000, 10000, 1});
        open_accounts(e, 1, {100, 1'000'000});
    };
    const std::vector<bets::place_request> group{bet(1, "x1", 101, 6000, 20000),
                                                 bet(2, "x2", 101, 5000, 20000)};
    database got;
    database want;
    catalog(got);
    catalog(want);
    const auto a = place(got, group);
    const auto b = place_reference(want, group);
    CHECK(a[0].response == json{{"outcome", "rejected"}, {"code", "insufficient_funds"}});
    CHECK(b[0].response == json{{"outcome", "rejected"}, {"code", "insufficient_funds"}});
    CHECK(a[1].response == json{{"outcome", "rejected"}, {"code", "liability_limit"}});
    CHECK(b[1].outcome == "placed");
    CHECK(got.scalar("SELECT liability FROM market_exposure WHERE market_id = 10") == 0);
    CHECK(want.scalar("SELECT liability FROM market_exposure WHERE market_id = 10") == 5000);
    check_invariants(got);
    check_invariants(want);

    // The next group finds the headroom: the same bet under a new key is placed.
    const auto c = place(got, {bet(2, "x3", 101, 5000, 20000)});
    CHECK(c[0].outcome == "placed");
    CHECK(got.scalar("SELECT liability FROM market_exposure WHERE market_id = 10") == 5000);
    check_invariants(got);
}

// --- Keys with any characters ------------------------------------------------------------------

awaitable<std::vector<std::string>> read_back(db::pool* pool, std::string literal) {
    auto conn = co_await pool->acquire();
    FT_REQUIRE_OK(conn);
    auto r = co_await (*conn)->query(
        "SELECT x FROM unnest($1::text[]) WITH ORDINALITY AS u(x, o) ORDER BY o",
        db::params{literal});
    FT_REQUIRE_OK(r);
    std::vector<std::string> out;
    for (int i = 0; i < r->rows(); ++i) {
        out.emplace_back(r->text(i, 0));
    }
    co_return out;
}

TEST_CASE("placement group: keys with any characters round-trip and are placed as sent") {
    database e;
    e.add_market(100, {{1001, 20000}});
    open_accounts(e, 1, {1'000'000});
    const std::vector<std::string> keys{"a,b",
                                        "{braces}",
                                        R"("quoted")",
                                        R"(back\slash)",
                                        R"(\")",
                                        "NULL",
                                        "null",
                                        " spaced ",
                                        "tab\there",
                                        "new\nline",
                                        "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x8E\xB2",
                                        "'; DROP TABLE bets; --",
                                        "}",
                                        "{",
                                        ",",
                                        R"(\\)"};
    // The literal itself, the empty string included, reads back element for element.
    db::array_literal literal;
    for (const auto& k : keys) {
        literal.add(k);
    }
    literal.add("");
    auto with_empty = keys;
    with_empty.emplace_back();
    CHECK(e.on_loop(read_back(e.pools().read.get(), literal.str())) == with_empty);

    std::vector<bets::place_request> group;
    for (const auto& k : keys) {
        group.push_back(bet(1, k, 1001, 100, 20000));
    }
    const auto a = place(e, group);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        CAPTURE(i);
        CHECK(a[i].outcome == "placed");
    }
    CHECK(rows_text(e, "SELECT idempotency_key FROM bets ORDER BY bet_id") == [&] {
        std::string joined;
        for (const auto& k : keys) {
            joined += (joined.empty() ? "" : "\n") + k;
        }
        return joined;
    }());
    CHECK(e.scalar("SELECT count(*) FROM idempotency_keys") == std::ssize(keys));
    // Replayed under the same keys.
    const auto again = place(e, group);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        CAPTURE(i);
        CHECK(again[i].outcome == "replayed");
        CHECK(again[i].response == a[i].response);
    }
    check_invariants(e);
}

// --- A key claimed by a concurrent group -------------------------------------------------------

/// Waits until backend `pid` (and `other_pid`, unless 0) waits on a lock (true), or 30 s have
/// passed or the watch connection failed (false).
awaitable<bool> until_waiting_on_locks(db::connection& watch, int pid, int other_pid = 0) {
    const std::int64_t want = other_pid == 0 ? 1 : 2;
    const auto until = steady::now() + 30s;
    for (;;) {
        auto waiting = co_await watch.query(
            "SELECT count(*) FROM pg_stat_activity WHERE pid IN ($1, $2) AND "
            "wait_event_type = 'Lock'",
            db::params{pid, other_pid});
        if (!waiting || steady::now() > until) {
            co_return false;
        }
        if (waiting->get<std::int64_t>(0, 0).value() == want) {
            co_return true;
        }
        co_await sleep_for(5ms);  // polling the server's view of the waits
    }
}

/// Holds what the second group got and what ending the first one did.
struct race_result {
    group_result second;
    std::string first_end;
};

awaitable<group_result> second_group(db::connection& conn, db::place_group_params p) {
    co_return read_rows(co_await call_sql(conn, "fulltime_place_group", p, 30000, 1));
}

/// Ends the first group's transaction with `end` once the second group waits on a lock.
awaitable<group_result> end_first(db::connection& first, db::connection& watch, int pid,
                                  std::string end) {
    if (!co_await until_waiting_on_locks(watch, pid)) {
        co_await first.query("ROLLBACK");
        co_return group_result{{}, "the second group never waited on the key", {}};
    }
    auto ended = co_await first.query(end);
    co_return group_result{{}, ended ? "" : db::describe(ended.error()), {}};
}

awaitable<race_result> key_race(std::string url, std::string key, std::string end) {
    auto first = co_await open_connection(url, 60s);
    auto second = co_await open_connection(url, 60s);
    auto watch = co_await open_connection(url);
    const auto p = encode({bet(1, key, 1001, 100, 20000)});
    FT_AWAIT_OK(co_await first->query("BEGIN"));
    const auto claimed = read_rows(co_await call_sql(*first, "fulltime_place_group", p, 1000, 0));
    REQUIRE_MESSAGE(claimed.error.empty(), claimed.error);
    REQUIRE(claimed.answers.at(0).outcome == "placed");
    std::vector<awaitable<group_result>> parties;
    parties.push_back(second_group(*second, p));
    parties.push_back(end_first(*first, *watch, second->backend_pid(), end));
    auto done = co_await run_all(std::move(parties));
    co_return race_result{done[0], done[1].error};
}

TEST_CASE(
    "placement group: a key a concurrent group claimed is replayed once that one commits, "
    "and claimed again if it rolls back") {
    database e;
    e.add_market(100, {{1001, 20000}});
    open_accounts(e, 1, {10000});
    {
        asio::io_context ioc;
        const auto r = run(ioc, key_race(e.url(), "committed", "COMMIT"));
        CHECK(r.first_end.empty());
        REQUIRE_MESSAGE(r.second.error.empty(), r.second.error);
        CHECK(r.second.answers.at(0).outcome == "replayed");
        CHECK(r.second.answers.at(0).response ==
              json::parse(e.text("SELECT response::text FROM idempotency_keys WHERE "
                                 "idempotency_key = 'committed'")));
        CHECK(e.scalar("SELECT count(*) FROM bets") == 1);
    }
    {
        asio::io_context ioc;
        const auto r = run(ioc, key_race(e.url(), "rolled-back", "ROLLBACK"));
        CHECK(r.first_end.empty());
        REQUIRE_MESSAGE(r.second.error.empty(), r.second.error);
        CHECK(r.second.answers.at(0).outcome == "placed");
        CHECK(r.second.answers.at(0).response["available"] == 10000 - 100 - 100);
        CHECK(e.scalar("SELECT count(*) FROM bets") == 2);
    }
    check_invariants(e);
}

// --- Lock order ----------------------------------------------------------------------------

/// Holds what each party of the lock-order scenario ended with: "ok", or its failure.
struct cycle_result {
    std::string group_1;
    std::string group_2;
    std::string batch;
};

awaitable<std::string> run_group(db::connection& conn, std::string function,
                                 db::place_group_params p, int shard_hint) {
    // A generous lock timeout: only a deadlock could fail the group.
    const auto r = read_rows(co_await call_sql(conn, function, p, 30000, shard_hint));
    if (!r.error.empty()) {
        co_return r.error;
    }
    for (const auto& x : r.answers) {
        if (x.outcome != "placed") {
            co_return "item " + std::to_string(x.item) + ": " + x.response.dump();
        }
    }
    co_return "ok";
}

/// The settlement-like batch: it holds accounts 1 and 3 (ascending, as fulltime_settle_balances
/// locks them) until both groups wait on a lock, then takes account 5 and commits.
awaitable<std::string> run_batch(db::connection& batch, db::connection& watch, int pid_1,
                                 int pid_2) {
    if (!co_await until_waiting_on_locks(watch, pid_1, pid_2)) {
        co_await batch.query("ROLLBACK");
        co_return "the groups never both waited on a lock";
    }
    auto locked =
        co_await batch.query("SELECT fulltime_settle_balances(0, 0, '{5}', '{0}', '{0}')", {}, 30s);
    if (!locked) {
        co_await batch.query("ROLLBACK");
        co_return db::describe(locked.error());
    }
    auto committed = co_await batch.query("COMMIT");
    co_return committed ? "ok" : db::describe(committed.error());
}

awaitable<cycle_result> lock_cycle(std::string url, std::string function) {
    auto batch = co_await open_connection(url, 60s);
    auto group_1 = co_await open_connection(url, 60s);
    auto group_2 = co_await open_connection(url, 60s);
    auto watch = co_await open_connection(url);
    FT_AWAIT_OK(co_await batch->query("BEGIN"));
    FT_AWAIT_OK(
        co_await batch->query("SELECT fulltime_settle_balances(0, 0, '{1,3}', '{0,0}', '{0,0}')"));
    // Arrival orders that make a cycle when each bet locks its balance as it comes: group 1
    // takes 5 and waits for 3 (the batch's); group 2 waits for 1 (the batch's); the batch then
    // waits for 5 (group 1's).
    const auto p1 = encode({bet(5, function + "-1a", 1001, 100, 20000),
                            bet(3, function + "-1b", 1001, 100, 20000),
                            bet(1, function + "-1c", 1001, 100, 20000)});
    const auto p2 = encode({bet(1, function + "-2a", 1001, 100, 20000),
                            bet(3, function + "-2b", 1001, 100, 20000),
                            bet(5, function + "-2c", 1001, 100, 20000)});
    std::vector<awaitable<std::string>> parties;
    // Different shard hints, as two placement actors: the groups share balance rows only.
    parties.push_back(run_group(*group_1, function, p1, 0));
    parties.push_back(run_group(*group_2, function, p2, 1));
    parties.push_back(run_batch(*batch, *watch, group_1->backend_pid(), group_2->backend_pid()));
    const auto done = co_await run_all(std::move(parties));
    co_return cycle_result{done[0], done[1], done[2]};
}

void lock_catalog(const engine& e) {
    e.add_market(100, {{1001, 20000}}, {10, 100000, 1'000'000'000, 4});
    open_accounts(e, 1, {10000, 10000, 10000, 10000, 10000});
}

TEST_CASE(
    "placement group: two groups and a settlement batch on the same accounts never "
    "deadlock") {
    database e;
    lock_catalog(e);
    asio::io_context ioc;
    const auto r = run(ioc, lock_cycle(e.url(), "fulltime_place_group"));
    CHECK(r.group_1 == "ok");
    CHECK(r.group_2 == "ok");
    CHECK(r.batch == "ok");
    CHECK(e.scalar("SELECT count(*) FROM bets") == 6);
    check_invariants(e);
}

TEST_CASE("placement group: the same scenario deadlocks when each bet locks as it comes") {
    // The reference locks each balance row when its item comes: the scenario above is a cycle
    // for it, which is what makes the case above a test of the lock order.
    database e;
    lock_catalog(e);
    asio::io_context ioc;
    const auto r = run(ioc, lock_cycle(e.url(), "reference_place_group"));
    const std::string all = r.group_1 + " | " + r.group_2 + " | " + r.batch;
    CAPTURE(all);
    CHECK(all.find("[40P01]") != std::string::npos);
    check_invariants(e);
}

// A batch of many accounts (the one UPDATE of fulltime_settle_balances) locks them in ascending
// account_id too, whatever order the table holds them in: with account 200 of 400 held by
// another transaction, the batch waits there holding exactly 1..199. The accounts are inserted
// in descending order, so an update in the table's physical order (a hash join probed by a scan
// of accounts), as one in descending order, would hold 201..400 instead (and the probe find
// 200..400 held).
constexpr std::int64_t held_scenario_accounts = 400;
constexpr std::int64_t held_scenario_account = 200;

/// The batch: every account of the scenario in one fulltime_settle_balances call, in its
/// transaction, with nothing to add (the rows are still updated, and so locked).
awaitable<std::string> run_balances(db::connection& batch) {
    FT_AWAIT_OK(co_await batch.query("BEGIN"));
    auto done = co_await batch.query(
        "SELECT fulltime_settle_balances(0, 0, array_agg(a ORDER BY a), "
        "array_agg(0::bigint ORDER BY a), array_agg(0::bigint ORDER BY a)) "
        "FROM generate_series(1, $1::bigint) a",
        db::params{held_scenario_accounts}, 30s);
    if (!done) {
        co_await batch.query("ROLLBACK");
        co_return db::describe(done.error());
    }
    auto committed = co_await batch.query("COMMIT");
    co_return committed ? "ok" : db::describe(committed.error());
}

/// Once the batch waits on a lock: the accounts no one else can lock now, as runs "first-last"
/// (a probe that skips the rows others hold); then the holder commits and lets the batch go.
awaitable<std::string> probe_held(db::connection& holder, db::connection& probe, int batch_pid) {
    if (!co_await until_waiting_on_locks(probe, batch_pid)) {
        co_await holder.query("ROLLBACK");
        co_return "the batch never waited on the held account";
    }
    FT_AWAIT_OK(co_await probe.query("BEGIN"));
    auto free = co_await probe.query(
        "SELECT account_id FROM accounts ORDER BY account_id FOR NO KEY UPDATE SKIP LOCKED");
    FT_AWAIT_OK(co_await probe.query("ROLLBACK"));
    FT_AWAIT_OK(co_await holder.query("COMMIT"));
    if (!free) {
        co_return db::describe(free.error());
    }
    std::set<std::int64_t> free_ids;
    for (int i = 0; i < free->rows(); ++i) {
        free_ids.insert(free->get<std::int64_t>(i, 0).value());
    }
    std::string held;
    for (std::int64_t a = 1; a <= held_scenario_accounts; ++a) {
        if (free_ids.contains(a)) {
            continue;
        }
        auto last = a;
        while (last < held_scenario_accounts && !free_ids.contains(last + 1)) {
            ++last;
        }
        held += (held.empty() ? "" : " ") + std::to_string(a) + "-" + std::to_string(last);
        a = last;
    }
    co_return held;
}

awaitable<std::vector<std::string>> held_scenario(std::string url) {
    auto holder = co_await open_connection(url, 60s);
    auto batch = co_await open_connection(url, 60s);
    auto probe = co_await open_connection(url);
    FT_AWAIT_OK(co_await holder->query("BEGIN"));
    FT_AWAIT_OK(
        co_await holder->query("SELECT 1 FROM accounts WHERE account_id = $1 FOR NO KEY UPDATE",
                               db::params{held_scenario_account}));
    std::vector<awaitable<std::string>> parties;
    parties.push_back(run_balances(*batch));
    parties.push_back(probe_held(*holder, *probe, batch->backend_pid()));
    co_return co_await run_all(std::move(parties));
}

TEST_CASE("settlement balances: one batch of many accounts locks them in ascending order") {
    database e;
    e.exec(
        "INSERT INTO accounts (account_id, currency, available) SELECT a, 'EUR', 0 FROM "
        "generate_series(" +
        std::to_string(held_scenario_accounts) + ", 1, -1) a; ANALYZE accounts");
    asio::io_context ioc;
    const auto r = run(ioc, held_scenario(e.url()));
    CHECK(r.at(0) == "ok");
    CHECK(r.at(1) == "1-" + std::to_string(held_scenario_account));
    check_invariants(e);
}

// --- Plans that do not depend on statistics -------------------------------------------------

/// Runs the placements of the plan case on one connection, in one transaction, and returns the
/// outcomes (one string per call, items separated by spaces) and then the tables that were read
/// with a sequential scan in that transaction (pg_stat_xact_user_tables, "table:count").
awaitable<std::vector<std::string>> place_and_count_seq_scans(
    std::string url, std::vector<std::vector<bets::place_request>> calls) {
    auto conn = co_await open_connection(url, 30s);
    FT_AWAIT_OK(co_await conn->query("BEGIN"));
    std::vector<std::string> out;
    int hint = 0;
    for (const auto& group : calls) {
        auto rows = co_await db::place_group(*conn, encode(group), 1000, hint++, 30s);
        FT_REQUIRE_OK(rows);
        std::string outcomes;
        for (int i = 0; i < rows->size(); ++i) {
            auto row = rows->at(i);
            FT_REQUIRE_OK(row);
            outcomes += (i == 0 ? "" : " ") + std::string{row->outcome};
        }
        out.push_back(outcomes);
    }
    auto scans = co_await conn->query(
        "SELECT coalesce(string_agg(relname || ':' || seq_scan, ' ' ORDER BY relname), '') "
        "FROM pg_stat_xact_user_tables WHERE seq_scan > 0");
    FT_REQUIRE_OK(scans);
    out.emplace_back(scans->text(0, 0));
    FT_AWAIT_OK(co_await conn->query("COMMIT"));
    co_return out;
}

TEST_CASE("placement group: no sequential scan, even when planned on tables thought empty") {
    // A pool connection keeps the plans it made at its first placement. Made while the tables
    // were empty (here: vacuumed empty, as a new database or a quiet night leaves them), the old
    // statements stored keys and balances with a hash join over a sequential scan of the whole
    // table, and kept doing so as the tables grew. Every statement of both placement functions
    // must read by key whatever the statistics say.
    database e;
    e.add_market(100, {{1001, 20000}}, {10, 100000, 1'000'000'000, 4});
    // Two shards of 1000 at 3.00 (liability = 2 x stake). The fifth call prefers shard 0.
    e.add_market(200, {{2001, 30000}}, {10, 100000, 2000, 2});
    std::vector<std::int64_t> funds(200, 100000);
    funds[6] = 50;  // account 7
    open_accounts(e, 1, funds);
    for (const char* table : {"accounts", "idempotency_keys", "bets", "ledger_transfers", "outbox",
                              "market_exposure", "markets", "selections"}) {
        e.exec(std::string{"VACUUM ANALYZE "} + table);
    }
    const std::vector<std::vector<bets::place_request>> calls{
        // A group: two bets of one account and one of another.
        {bet(1, "p1", 1001, 100, 20000), bet(2, "p2", 1001, 100, 20000),
         bet(1, "p3", 1001, 100, 20000)},
        // A group of one (fulltime_place), then its replay, also alone.
        {bet(3, "q1", 1001, 100, 20000)},
        {bet(3, "q1", 1001, 100, 20000)},
        // A group with a replay, a reused key and a new bet.
        {bet(1, "p1", 1001, 100, 20000), bet(2, "p2", 1001, 101, 20000),
         bet(4, "r1", 1001, 100, 20000)},
        // 900 on the preferred shard; 800 does not fit there and falls back to shard 1; 150
        // falls back too, is refused for funds (account 7 has 50) and given back.
        {bet(5, "f1", 2001, 450, 30000), bet(6, "f2", 2001, 400, 30000),
         bet(7, "f3", 2001, 75, 30000)},
    };
    asio::io_context ioc;
    const auto out = run(ioc, place_and_count_seq_scans(e.url(), calls));
    REQUIRE(out.size() == calls.size() + 1);
    CHECK(out[0] == "placed placed placed");
    CHECK(out[1] == "placed");
    CHECK(out[2] == "replayed");
    CHECK(out[3] == "replayed key_reused placed");
    CHECK(out[4] == "placed placed rejected");
    CHECK(e.text("SELECT response->>'code' FROM idempotency_keys WHERE idempotency_key = 'f3'") ==
          "insufficient_funds");
    CHECK(e.text("SELECT string_agg(liability::text, ' ' ORDER BY shard) FROM market_exposure "
                 "WHERE market_id = 200") == "900 800");
    CHECK_MESSAGE(out.back().empty(), "sequential scans: " << out.back());
    check_invariants(e);
}

}  // namespace
