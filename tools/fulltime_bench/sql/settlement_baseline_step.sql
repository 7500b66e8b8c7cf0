-- The settlement benchmark's baseline: one step of fulltime_settle_step with a batch larger
-- than the market, so one transaction settles every bet (the anti-pattern the engine's bounded
-- batches replace). psql's timing says how long it took.
\timing on
SELECT status, coalesce(bets, 0), coalesce(effects, 0) FROM fulltime_settle_step(1, 100000000, 600000);
