-- The placement benchmark: how many bets a run placed (keys with the prefix given) and the
-- share on market 1 (the hot one).
SELECT json_build_object('bets', count(*), 'market_1_share', round(avg((market_id = 1)::int), 4))
FROM bets WHERE starts_with(idempotency_key, %(prefix)s)
