-- Market 1's settlement: its settlement rows, its settled bets, the payouts that differ from
-- the expected ones (odds 2.00: a winner, on the selection given, gets twice its stake, a
-- loser nothing), and settlement rows on the other markets' bets.
SELECT (SELECT count(*) FROM bet_settlements s JOIN bets b USING (bet_id) WHERE b.market_id = 1),
       (SELECT count(DISTINCT s.bet_id) FROM bet_settlements s JOIN bets b USING (bet_id)
        WHERE b.market_id = 1 AND s.kind = 'settle' AND s.version = 1),
       (SELECT count(*) FROM bets b
        LEFT JOIN bet_settlements s ON s.bet_id = b.bet_id AND s.kind = 'settle' AND s.version = 1
        WHERE b.market_id = 1
          AND s.payout IS DISTINCT FROM CASE WHEN b.selection_id = %(sel_win)s
                                             THEN b.stake * b.odds / 10000 ELSE 0 END),
       (SELECT count(*) FROM bet_settlements s JOIN bets b USING (bet_id) WHERE b.market_id <> 1)
