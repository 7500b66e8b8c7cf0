-- The money invariants of tests/e2e/money.py as one query: a row per violation kind with its
-- count (all zero when the books are right). The settlement benchmark checks its baseline's
-- and its engine's database with it.
WITH sides AS (
    SELECT currency, credit_side AS side, credit_account_id AS account_id, amount
    FROM ledger_transfers
    UNION ALL
    SELECT currency, debit_side, debit_account_id, -amount FROM ledger_transfers
)
SELECT 'ledger currencies not summing to zero',
       (SELECT count(*) FROM (SELECT currency FROM sides GROUP BY currency
                              HAVING sum(amount) <> 0) x)
UNION ALL
SELECT 'accounts whose balances differ from the ledger (or are negative)',
       (SELECT count(*) FROM (
            SELECT a.account_id
            FROM accounts a LEFT JOIN sides s ON s.account_id = a.account_id
            GROUP BY a.account_id, a.available, a.reserved, a.owed
            HAVING a.available <> coalesce(sum(s.amount) FILTER (WHERE s.side = 'available'), 0)
                OR a.reserved <> coalesce(sum(s.amount) FILTER (WHERE s.side = 'reserved'), 0)
                OR a.available < 0 OR a.reserved < 0
                OR a.owed <> -coalesce(sum(s.amount) FILTER (WHERE s.side = 'owed'), 0)
                OR a.owed < 0) x)
UNION ALL
SELECT 'bets without exactly one reservation',
       (SELECT count(*) FROM (
            SELECT b.bet_id
            FROM bets b LEFT JOIN ledger_transfers t
              ON t.entry_key = 'bet:' || b.bet_id || ':reserve' AND t.amount = b.stake
            GROUP BY b.bet_id HAVING count(t.transfer_id) <> 1) x)
UNION ALL
SELECT 'bets with more than one effect in force',
       (SELECT count(*) FROM (
            SELECT e.bet_id FROM bet_settlements e
            WHERE NOT e.reversal AND NOT EXISTS (
                SELECT 1 FROM bet_settlements r
                WHERE r.bet_id = e.bet_id AND r.version = e.version AND r.reversal)
            GROUP BY e.bet_id HAVING count(*) > 1) x)
UNION ALL
SELECT 'bets whose ledger legs do not net to their state',
       (SELECT count(*) FROM (
            SELECT b.bet_id,
                   coalesce(sum(s.amount) FILTER (WHERE s.side = 'reserved'), 0) lr,
                   coalesce(sum(s.amount) FILTER (WHERE s.side = 'available'), 0) la,
                   CASE WHEN f.payout IS NULL THEN b.stake ELSE 0 END wr,
                   coalesce(f.payout, 0) - b.stake wa
            FROM bets b
            LEFT JOIN LATERAL (
                SELECT e.payout FROM bet_settlements e
                WHERE e.bet_id = b.bet_id AND NOT e.reversal AND NOT EXISTS (
                    SELECT 1 FROM bet_settlements r
                    WHERE r.bet_id = e.bet_id AND r.version = e.version AND r.reversal)) f ON true
            LEFT JOIN (
                SELECT credit_side AS side, credit_account_id AS account_id, bet_id, amount
                FROM ledger_transfers WHERE bet_id IS NOT NULL
                UNION ALL
                SELECT debit_side, debit_account_id, bet_id, -amount
                FROM ledger_transfers WHERE bet_id IS NOT NULL
            ) s ON s.bet_id = b.bet_id AND s.account_id = b.account_id
            GROUP BY b.bet_id, b.stake, f.payout) y
        WHERE lr <> wr OR la <> wa)
UNION ALL
SELECT 'idempotency keys with more than one bet',
       (SELECT count(*) FROM (SELECT 1 FROM bets GROUP BY account_id, idempotency_key
                              HAVING count(*) > 1) x)
