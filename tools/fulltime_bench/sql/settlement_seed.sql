-- The settlement benchmark's seed (fulltime_bench.settlement), set-based: one event; market 1
-- with two selections (:sel_win wins, :sel_lose loses) and :bets open bets left exactly as
-- placements leave them (bet, idempotency key, reservation transfer, outbox row, balances,
-- exposure shards); markets 2 and 3 open for placements (selections 21 and 31); :accounts
-- accounts funded by keyed deposits; :shards exposure shards a market. Run with psql, its
-- variables set with -v.
BEGIN;
INSERT INTO events (event_id, name) VALUES (1, 'bench event');
INSERT INTO markets (market_id, event_id, name, stake_min, stake_max, liability_limit,
                     exposure_shards)
SELECT m, 1, 'bench market ' || m, 1, 100000000, 1000000000000000, :shards
FROM generate_series(1, 3) m;
INSERT INTO selections (selection_id, market_id, name, odds) VALUES
    (:sel_win, 1, 'home', 20000), (:sel_lose, 1, 'away', 20000),
    (21, 2, 'home', 20000), (31, 3, 'home', 20000);

-- Funded accounts: the balance row and the keyed deposit that it projects.
INSERT INTO accounts (account_id, currency, available)
SELECT a, 'EUR', 10000000000 FROM generate_series(1, :accounts) a;
INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, credit_account_id,
                              amount)
SELECT 'deposit:' || a || ':seed', 'EUR', 'cash', 'available', a, 10000000000
FROM generate_series(1, :accounts) a;

-- Bet i: account (i - 1) % N + 1, stake 1.00 to 5.90, odds 2.00; the selection alternates per
-- round over the accounts, so every account has winning and losing bets.
CREATE TEMP TABLE seed_bets AS
SELECT i AS bet_id, (i - 1) % :accounts + 1 AS account_id,
       CASE WHEN ((i - 1) / :accounts) % 2 = 0 THEN :sel_win ELSE :sel_lose END AS selection_id,
       100 + (i % 50) * 10 AS stake, 20000 AS odds, 'seed-' || i AS idempotency_key
FROM generate_series(1, :bets) i;

-- What fulltime_place writes for each bet, in its order.
INSERT INTO idempotency_keys (account_id, idempotency_key, fingerprint, response, bet_id)
SELECT account_id, idempotency_key, 'seed', '{"outcome":"placed"}'::jsonb, bet_id
FROM seed_bets;
INSERT INTO bets (bet_id, account_id, market_id, selection_id, currency, stake, odds,
                  idempotency_key)
OVERRIDING SYSTEM VALUE
SELECT bet_id, account_id, 1, selection_id, 'EUR', stake, odds, idempotency_key
FROM seed_bets ORDER BY bet_id;
SELECT setval(pg_get_serial_sequence('bets', 'bet_id'), :bets) \g /dev/null
INSERT INTO market_exposure (market_id, shard, liability, liability_limit)
SELECT m, s, 0, 1000000000000000 / :shards
FROM generate_series(1, 3) m, generate_series(0, :shards - 1) s;
UPDATE market_exposure e SET liability = x.liability
FROM (SELECT bet_id % :shards AS shard,
             sum(ceil(stake::numeric * (odds - 10000) / 10000))::bigint AS liability
      FROM seed_bets GROUP BY 1) x
WHERE e.market_id = 1 AND e.shard = x.shard;
INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id, credit_side,
                              credit_account_id, amount, bet_id)
SELECT 'bet:' || bet_id || ':reserve', 'EUR', 'available', account_id, 'reserved', account_id,
       stake, bet_id
FROM seed_bets ORDER BY bet_id;
INSERT INTO outbox (topic, account_id, payload)
SELECT 'bet_placed', account_id,
       jsonb_build_object('bet_id', bet_id, 'market_id', 1, 'selection_id', selection_id,
                          'stake', stake, 'odds', odds)
FROM seed_bets ORDER BY bet_id;
UPDATE accounts a SET available = a.available - x.total, reserved = a.reserved + x.total
FROM (SELECT account_id, sum(stake)::bigint AS total FROM seed_bets GROUP BY 1) x
WHERE a.account_id = x.account_id;
COMMIT;
SET client_min_messages = error; -- the shared catalogs are the superuser's to vacuum
VACUUM ANALYZE;
CHECKPOINT;
