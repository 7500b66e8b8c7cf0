-- The placement benchmark's seed (fulltime_bench.placement): one event, :markets markets (the
-- first with :hot_selections selections, the others :selections; selection ids market * 10 +
-- 1, 2, ...), :accounts accounts funded with :funds by keyed deposits. 64 exposure shards (the
-- most a market may have) so that pgbench's clients, which pass their client id as the
-- preferred shard, meet on a shard row as rarely as possible; the engine's placement actors
-- each pass their own index. Run with psql, its variables set with -v.
INSERT INTO events (event_id, name) VALUES (1, 'bench event');
INSERT INTO markets (market_id, event_id, name, stake_min, stake_max, liability_limit,
                     exposure_shards)
SELECT m, 1, 'bench market ' || m, 1, :stake_max, 1000000000000000, 64
FROM generate_series(1, :markets) m;
INSERT INTO market_exposure (market_id, shard, liability, liability_limit)
SELECT m, s, 0, 1000000000000000 / 64 FROM generate_series(1, :markets) m, generate_series(0, 63) s;
INSERT INTO selections (selection_id, market_id, name, odds)
SELECT m * 10 + k, m, 'selection ' || k, 17500 + 2500 * k
FROM generate_series(1, :markets) m,
     LATERAL generate_series(1, CASE WHEN m = 1 THEN :hot_selections ELSE :selections END) k;
INSERT INTO accounts (account_id, currency, available)
SELECT a, 'EUR', :funds FROM generate_series(1, :accounts) a;
INSERT INTO ledger_transfers (entry_key, currency, debit_side, credit_side, credit_account_id,
                              amount)
SELECT 'deposit:' || a || ':seed', 'EUR', 'cash', 'available', a, :funds
FROM generate_series(1, :accounts) a;
SET client_min_messages = error; -- the shared catalogs are the superuser's to vacuum
VACUUM ANALYZE;
