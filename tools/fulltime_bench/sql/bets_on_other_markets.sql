-- The bets placed on the settlement benchmark's markets 2 and 3.
SELECT count(*) FROM bets WHERE market_id > 1
