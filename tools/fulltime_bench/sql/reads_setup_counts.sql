-- The reads benchmark's data after its setup: bets, settlement rows, the read model's rows,
-- those settled, those won.
SELECT (SELECT count(*) FROM bets), (SELECT count(*) FROM bet_settlements),
       (SELECT count(*) FROM bet_views), (SELECT count(version) FROM bet_views),
       (SELECT count(*) FROM bet_views WHERE outcome = 'won')
