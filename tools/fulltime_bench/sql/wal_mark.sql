-- A WAL mark of the settlement benchmark: the cluster's LSN and the bets placed on markets 2
-- and 3 so far. Markets 2 and 3 are the ids above 1: a range of bets_market_bet_idx, a few
-- thousand entries (`market_id <> 1` was a parallel scan of every bet, on both cores for tens
-- of milliseconds).
SELECT pg_current_wal_lsn()::text, (SELECT count(*) FROM bets WHERE market_id > 1)
