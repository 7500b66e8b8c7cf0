#include "fulltime/db/audit_statements.hpp"

#include "fulltime/db/transaction.hpp"

#include <array>
#include <functional>

namespace fulltime::db {

namespace asio = boost::asio;

namespace {

// Every leg of every kept transfer that names an account, signed: a side's balance is its
// credits minus its debits (the owed side is read the other way round: debits minus credits).
#define FT_ACCOUNT_LEGS                                                                   \
    "(SELECT transfer_id, credit_account_id AS account_id, credit_side AS side, bet_id, " \
    " currency, amount FROM ledger_transfers WHERE credit_account_id IS NOT NULL "        \
    " UNION ALL "                                                                         \
    " SELECT transfer_id, debit_account_id, debit_side, bet_id, currency, -amount "       \
    " FROM ledger_transfers WHERE debit_account_id IS NOT NULL)"

// The latest closed period (docs/schema.md, "Closing a period"): its stored balances, and the
// time after which the ledger's legs are not in them. NULL and -infinity before any is closed.
#define FT_CLOSED_PERIOD \
    "(SELECT max(period_start) FROM history_periods WHERE closed_at IS NOT NULL)"
#define FT_CLOSED_END                                                      \
    "(SELECT coalesce(max(period_end), '-infinity') FROM history_periods " \
    " WHERE closed_at IS NOT NULL)"

// The legs after the latest closed period, as FT_ACCOUNT_LEGS: the money invariants check the
// stored balances plus these, so their cost does not grow with the years of history.
#define FT_OPEN_ACCOUNT_LEGS                                                              \
    "(SELECT transfer_id, credit_account_id AS account_id, credit_side AS side, bet_id, " \
    " currency, amount FROM ledger_transfers WHERE credit_account_id IS NOT NULL "        \
    " AND created_at >= " FT_CLOSED_END                                                   \
    " UNION ALL "                                                                         \
    " SELECT transfer_id, debit_account_id, debit_side, bet_id, currency, -amount "       \
    " FROM ledger_transfers WHERE debit_account_id IS NOT NULL "                          \
    " AND created_at >= " FT_CLOSED_END ")"

constexpr std::array<audit_invariant, 10> invariants = {{
    {"ledger_sums_to_zero",
     "every currency's ledger sums to zero, each side counted in its owner's currency (an "
     "account's side in the account's currency, house and cash in the transfer's)",
     "WITH s AS ("
     " SELECT coalesce(a.currency, t.currency) AS currency, t.amount AS amount"
     " FROM ledger_transfers t LEFT JOIN accounts a ON a.account_id = t.credit_account_id"
     " WHERE t.created_at >= " FT_CLOSED_END " UNION ALL"
     " SELECT coalesce(a.currency, t.currency), -t.amount"
     " FROM ledger_transfers t LEFT JOIN accounts a ON a.account_id = t.debit_account_id"
     " WHERE t.created_at >= " FT_CLOSED_END " UNION ALL"
     " SELECT a.currency, b.available + b.reserved - b.owed FROM period_balances b"
     " JOIN accounts a ON a.account_id = b.account_id WHERE b.period_start = " FT_CLOSED_PERIOD
     " UNION ALL"
     " SELECT currency, balance FROM period_side_sums WHERE period_start = " FT_CLOSED_PERIOD "),"
     " bad AS (SELECT currency, sum(amount) AS total FROM s GROUP BY currency"
     " HAVING sum(amount) <> 0)"
     " SELECT count(*), string_agg(format('%s sums to %s minor units', currency, total), '; '"
     " ORDER BY currency) FROM bad"},
    {"balances_match_ledger",
     "every account's available, reserved and owed equal the sums of its ledger sides",
     "WITH l AS (SELECT account_id, side, amount FROM " FT_OPEN_ACCOUNT_LEGS " o"
     " UNION ALL SELECT b.account_id, v.side, v.amount FROM period_balances b"
     " CROSS JOIN LATERAL (VALUES ('available', b.available), ('reserved', b.reserved),"
     " ('owed', -b.owed)) v(side, amount) WHERE b.period_start = " FT_CLOSED_PERIOD "),"
     " s AS (SELECT account_id,"
     " coalesce(sum(amount) FILTER (WHERE side = 'available'), 0) AS available,"
     " coalesce(sum(amount) FILTER (WHERE side = 'reserved'), 0) AS reserved,"
     " -coalesce(sum(amount) FILTER (WHERE side = 'owed'), 0) AS owed"
     " FROM l GROUP BY account_id),"
     " bad AS (SELECT a.account_id, a.available, a.reserved, a.owed,"
     " coalesce(s.available, 0) AS la, coalesce(s.reserved, 0) AS lr, coalesce(s.owed, 0) AS lo"
     " FROM accounts a LEFT JOIN s ON s.account_id = a.account_id"
     " WHERE a.available <> coalesce(s.available, 0) OR a.reserved <> coalesce(s.reserved, 0)"
     " OR a.owed <> coalesce(s.owed, 0))"
     " SELECT (SELECT count(*) FROM bad), (SELECT string_agg(format("
     "'account %s: row available/reserved/owed %s/%s/%s, ledger %s/%s/%s', account_id,"
     " available, reserved, owed, la, lr, lo), '; ') FROM (SELECT * FROM bad"
     " ORDER BY account_id LIMIT 5) x)"},
    {"no_negative_balance", "no account's available, reserved or owed is negative",
     "SELECT (SELECT count(*) FROM accounts WHERE available < 0 OR reserved < 0 OR owed < 0),"
     " (SELECT string_agg(format('account %s: %s/%s/%s', account_id, available, reserved,"
     " owed), '; ') FROM (SELECT * FROM accounts WHERE available < 0 OR reserved < 0"
     " OR owed < 0 ORDER BY account_id LIMIT 5) x)"},
    {"ledger_accounts_exist", "every account the ledger names exists",
     "WITH bad AS (SELECT DISTINCT l.account_id FROM " FT_OPEN_ACCOUNT_LEGS
     " l WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = l.account_id))"
     " SELECT (SELECT count(*) FROM bad), (SELECT string_agg(account_id::text, ', ') FROM"
     " (SELECT account_id FROM bad ORDER BY account_id LIMIT 5) x)"},
    {"transfer_currency_matches_account",
     "every transfer is in the currency of each account it names",
     "WITH bad AS (SELECT DISTINCT l.transfer_id, l.currency, a.account_id,"
     " a.currency AS account_currency FROM " FT_OPEN_ACCOUNT_LEGS " l JOIN accounts a"
     " ON a.account_id = l.account_id WHERE a.currency <> l.currency)"
     " SELECT (SELECT count(DISTINCT transfer_id) FROM bad), (SELECT string_agg(format("
     "'transfer %s in %s names account %s in %s', transfer_id, currency, account_id,"
     " account_currency), '; ') FROM (SELECT * FROM bad ORDER BY transfer_id LIMIT 5) x)"},
    {"bet_has_one_reservation",
     "every bet has exactly one reservation, of its stake from its account's available to its "
     "reserved, and every reservation belongs to a bet",
     "WITH bad AS (SELECT b.bet_id FROM bets b WHERE NOT EXISTS (SELECT 1 FROM"
     " ledger_transfers t WHERE t.entry_key = 'bet:' || b.bet_id || ':reserve'"
     " AND t.bet_id = b.bet_id AND t.amount = b.stake AND t.currency = b.currency"
     " AND t.debit_side = 'available' AND t.debit_account_id = b.account_id"
     " AND t.credit_side = 'reserved' AND t.credit_account_id = b.account_id)"
     " UNION"
     " SELECT t.bet_id FROM ledger_transfers t WHERE t.entry_key LIKE 'bet:%:reserve'"
     " AND NOT EXISTS (SELECT 1 FROM bets b WHERE b.bet_id = t.bet_id))"
     " SELECT (SELECT count(*) FROM bad), (SELECT string_agg(coalesce(bet_id::text, 'none'),"
     " ', ') FROM (SELECT bet_id FROM bad ORDER BY bet_id LIMIT 5) x)"},
    {"bet_settlements_consistent",
     "every settlement row belongs to a bet, every bet has at most one effect in force, and "
     "every reversal undoes an effect of its kind (reverse a settle, uncancel a cancel)",
     "WITH bad AS (SELECT e.bet_id FROM bet_settlements e WHERE NOT e.reversal"
     " AND NOT EXISTS (SELECT 1 FROM bet_settlements r WHERE r.bet_id = e.bet_id"
     " AND r.version = e.version AND r.reversal) GROUP BY e.bet_id HAVING count(*) > 1"
     " UNION"
     " SELECT r.bet_id FROM bet_settlements r WHERE r.reversal AND NOT EXISTS (SELECT 1 FROM"
     " bet_settlements e WHERE e.bet_id = r.bet_id AND e.version = r.version AND NOT"
     " e.reversal AND e.kind = CASE r.kind WHEN 'reverse' THEN 'settle' ELSE 'cancel' END)"
     " UNION"
     " SELECT s.bet_id FROM bet_settlements s WHERE NOT EXISTS (SELECT 1 FROM bets b"
     " WHERE b.bet_id = s.bet_id))"
     " SELECT (SELECT count(*) FROM bad), (SELECT string_agg(bet_id::text, ', ') FROM"
     " (SELECT bet_id FROM bad ORDER BY bet_id LIMIT 5) x)"},
    {"bet_ledger_matches_state",
     "every bet's ledger legs net to its state: an open bet holds its stake in reserved; a "
     "settled or cancelled one holds nothing there and has received exactly its payout",
     // A bet's state is its effect in force: its highest effect (settle or cancel) whose
     // version has no reversal; none means open.
     "WITH sums AS (SELECT bet_id, account_id,"
     " coalesce(sum(amount) FILTER (WHERE side = 'reserved'), 0) AS lr,"
     " coalesce(sum(amount) FILTER (WHERE side = 'available'), 0) AS la"
     " FROM " FT_ACCOUNT_LEGS " l WHERE bet_id IS NOT NULL GROUP BY bet_id, account_id),"
     " s AS (SELECT b.bet_id, b.stake, f.payout, coalesce(x.lr, 0) AS lr,"
     " coalesce(x.la, 0) AS la FROM bets b"
     " LEFT JOIN sums x ON x.bet_id = b.bet_id AND x.account_id = b.account_id"
     " LEFT JOIN LATERAL (SELECT e.payout FROM bet_settlements e WHERE e.bet_id = b.bet_id"
     " AND NOT e.reversal AND NOT EXISTS (SELECT 1 FROM bet_settlements r"
     " WHERE r.bet_id = e.bet_id AND r.version = e.version AND r.reversal)"
     " ORDER BY e.version DESC LIMIT 1) f ON true),"
     " bad AS (SELECT bet_id, lr, CASE WHEN payout IS NULL THEN stake ELSE 0 END AS wr,"
     " la, coalesce(payout, 0) - stake AS wa FROM s)"
     " SELECT (SELECT count(*) FROM bad WHERE lr <> wr OR la <> wa),"
     " (SELECT string_agg(format('bet %s: reserved %s (want %s), available %s (want %s)',"
     " bet_id, lr, wr, la, wa), '; ') FROM (SELECT * FROM bad WHERE lr <> wr OR la <> wa"
     " ORDER BY bet_id LIMIT 5) x)"},
    {"one_bet_per_idempotency_key", "no idempotency key made more than one bet",
     "WITH bad AS (SELECT account_id, idempotency_key, count(*) AS n FROM bets"
     " GROUP BY account_id, idempotency_key HAVING count(*) > 1)"
     " SELECT (SELECT count(*) FROM bad), (SELECT string_agg(format('account %s key %s: %s"
     " bets', account_id, left(idempotency_key, 64), n), '; ') FROM (SELECT * FROM bad"
     " ORDER BY account_id, idempotency_key LIMIT 5) x)"},
    {"no_open_reconciliation_incident",
     "no balance_drift, currency_mismatch or currency_imbalance incident is open (the last "
     "reconciliation found the books right, or an operator closed what it found)",
     "SELECT (SELECT count(*) FROM incidents WHERE resolved_at IS NULL AND kind IN"
     " ('balance_drift', 'currency_mismatch', 'currency_imbalance')),"
     " (SELECT string_agg(format('%s %s since %s', kind, subject, first_seen), '; ') FROM"
     " (SELECT * FROM incidents WHERE resolved_at IS NULL AND kind IN ('balance_drift',"
     " 'currency_mismatch', 'currency_imbalance') ORDER BY incident_id LIMIT 5) x)"},
}};

#undef FT_ACCOUNT_LEGS
#undef FT_OPEN_ACCOUNT_LEGS
#undef FT_CLOSED_END
#undef FT_CLOSED_PERIOD

asio::awaitable<outcome<audit_finding>> check_body(std::string sql, connection& conn) {
    // Read-only for the server too: whatever the statement is, it cannot write. No JIT: over the
    // partitioned tables the plan's estimated cost triggers a compilation of tens of
    // milliseconds even on a small database (db::session_options::jit), and the statements that
    // read a whole table are index or hash work that compiling barely helps.
    auto ro = co_await conn.execute_script("SET TRANSACTION READ ONLY; SET LOCAL jit = off");
    if (!ro) {
        co_return ro.error();
    }
    auto r = co_await conn.query(std::move(sql));
    if (!r) {
        co_return r.error();
    }
    if (r->rows() != 1 || r->columns() != 2) {
        co_return failure{errc::bad_result, {}, "an audit statement returned an unexpected shape"};
    }
    auto violations = r->get<std::int64_t>(0, 0);
    auto sample = r->get<std::optional<std::string>>(0, 1);
    if (!violations || !sample) {
        co_return failure{errc::bad_result, {}, "an audit statement returned an unexpected row"};
    }
    co_return audit_finding{*violations, sample->value_or("")};
}

}  // namespace

std::span<const audit_invariant> audit_invariants() { return invariants; }

asio::awaitable<outcome<audit_finding>> check_invariant(connection& conn,
                                                        const audit_invariant& invariant,
                                                        std::int64_t statement_timeout_ms) {
    transaction_options options;
    options.statement_timeout_ms = statement_timeout_ms;
    auto done = co_await in_transaction(conn, options,
                                        std::bind_front(check_body, std::string(invariant.sql)));
    co_return done;
}

}  // namespace fulltime::db
