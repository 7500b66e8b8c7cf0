#include "support/invariants.hpp"

#include "support/pg_support.hpp"

namespace fulltime::test {

namespace {

// Every side of every transfer, signed: a side's balance is its credits minus its debits.
const std::string sides =
    "(SELECT currency, credit_side AS side, credit_account_id AS account_id, bet_id, amount "
    "FROM ledger_transfers UNION ALL SELECT currency, debit_side, debit_account_id, bet_id, "
    "-amount FROM ledger_transfers)";

struct check {
    const char* what;
    std::string sql;  ///< returns a text listing up to a few offenders, or NULL when none
};

std::vector<check> checks() {
    return {
        {"ledger does not sum to zero",
         "SELECT string_agg(currency || '=' || s, ', ') FROM (SELECT currency, sum(amount) s "
         "FROM " +
             sides + " x GROUP BY currency HAVING sum(amount) <> 0) y"},
        {"balance differs from its ledger or is negative",
         "SELECT string_agg(format('account %s: %s/%s vs ledger %s/%s', account_id, available, "
         "reserved, la, lr), '; ') FROM (SELECT a.account_id, a.available, a.reserved, "
         "coalesce(sum(s.amount) FILTER (WHERE s.side = 'available'), 0) la, "
         "coalesce(sum(s.amount) FILTER (WHERE s.side = 'reserved'), 0) lr FROM accounts a "
         "LEFT JOIN " +
             sides +
             " s ON s.account_id = a.account_id GROUP BY a.account_id) y "
             "WHERE available <> la OR reserved <> lr OR available < 0 OR reserved < 0"},
        {"ledger names an account that does not exist",
         "SELECT string_agg(DISTINCT account_id::text, ', ') FROM " + sides +
             " s WHERE account_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM accounts a WHERE "
             "a.account_id = s.account_id)"},
        {"bet without exactly one reservation",
         "SELECT string_agg(bet_id::text, ', ') FROM (SELECT b.bet_id FROM bets b LEFT JOIN "
         "ledger_transfers t ON t.entry_key = 'bet:' || b.bet_id || ':reserve' AND t.amount = "
         "b.stake GROUP BY b.bet_id HAVING count(t.transfer_id) <> 1 LIMIT 5) y"},
        {"bet with more than one effect in force",
         "SELECT string_agg(bet_id::text, ', ') FROM (SELECT e.bet_id FROM bet_settlements e "
         "WHERE NOT e.reversal AND NOT EXISTS (SELECT 1 FROM bet_settlements r WHERE r.bet_id = "
         "e.bet_id AND r.version = e.version AND r.reversal) GROUP BY e.bet_id HAVING count(*) "
         "> 1 LIMIT 5) y"},
        {"bet whose ledger legs disagree with its state",
         "SELECT string_agg(format('bet %s: reserved %s (want %s), available %s (want %s)', "
         "bet_id, lr, wr, la, wa), '; ') FROM (SELECT b.bet_id, "
         "coalesce(sum(s.amount) FILTER (WHERE s.side = 'reserved'), 0) lr, "
         "coalesce(sum(s.amount) FILTER (WHERE s.side = 'available'), 0) la, "
         "CASE WHEN f.payout IS NULL THEN b.stake ELSE 0 END wr, "
         "coalesce(f.payout, 0) - b.stake wa FROM bets b "
         "LEFT JOIN LATERAL (SELECT e.payout FROM bet_settlements e WHERE e.bet_id = b.bet_id "
         "AND NOT e.reversal AND NOT EXISTS (SELECT 1 FROM bet_settlements r WHERE r.bet_id = "
         "e.bet_id AND r.version = e.version AND r.reversal)) f ON true "
         "LEFT JOIN " +
             sides +
             " s ON s.bet_id = b.bet_id AND s.account_id = b.account_id "
             "GROUP BY b.bet_id, b.stake, f.payout) y WHERE lr <> wr OR la <> wa LIMIT 5"},
        {"idempotency key with more than one bet",
         "SELECT string_agg(k, ', ') FROM (SELECT account_id || '/' || idempotency_key k FROM "
         "bets GROUP BY account_id, idempotency_key HAVING count(*) > 1 LIMIT 5) y"},
    };
}

}  // namespace

std::vector<std::string> money_violations(const std::string& conninfo) {
    std::vector<std::string> out;
    for (const auto& c : checks()) {
        auto offenders = exec_scalar(conninfo, c.sql);
        if (offenders && !offenders->empty()) {
            out.push_back(std::string(c.what) + ": " + *offenders);
        }
    }
    return out;
}

}  // namespace fulltime::test
