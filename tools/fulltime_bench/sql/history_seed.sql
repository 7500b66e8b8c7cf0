-- The history benchmark's seed (fulltime_bench.history): :accounts accounts, each with :closed
-- ledger legs before the first period's end (the migration's moment: the history partition)
-- and :open_legs after it (the open period); the balance rows match. Run with psql, its
-- variables set with -v.
INSERT INTO accounts (account_id, currency, available)
SELECT a, 'EUR', :closed + :open_legs FROM generate_series(1, :accounts) a;
-- Before the first period's end (the migration's moment): the history partition.
INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, credit_account_id,
                              amount, created_at)
SELECT 'seed:' || a || ':' || i, 'EUR', 'cash', 'available', a, 1, now() - interval '1 day'
FROM generate_series(1, :accounts) a, generate_series(1, :closed) i;
-- After it: the open period.
INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, credit_account_id,
                              amount)
SELECT 'open:' || a || ':' || i, 'EUR', 'cash', 'available', a, 1
FROM generate_series(1, :accounts) a, generate_series(1, :open_legs) i;
