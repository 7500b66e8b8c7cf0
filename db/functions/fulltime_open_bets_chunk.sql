-- LANGUAGE sql: its body is checked when it is created, so it may name tables only (the
-- function files are applied in name order, after every numbered migration).
--
-- One chunk of a market's bets, in bet_id order after p_after_bet_id: how many are open (no
-- effect in force), their stakes per currency, the oldest placed_at. Read-only, no row locks;
-- each probe is an index lookup on bet_settlements' key. The sweeper and fulltime_void_overdue
-- walk a market chunk by chunk, so no statement's time grows with the market.

CREATE OR REPLACE FUNCTION fulltime_open_bets_chunk(
    p_market_id       bigint,
    p_after_bet_id    bigint,
    p_limit           integer,
    OUT last_bet_id   bigint,   -- NULL: no bet after p_after_bet_id
    OUT scanned       integer,
    OUT open_bets     integer,
    OUT reserved      jsonb,    -- {"EUR": minor units} over the open bets
    OUT oldest_placed_at timestamptz)
LANGUAGE sql STABLE
AS $$
    WITH c AS MATERIALIZED (
        SELECT b.bet_id, b.currency, b.stake, b.placed_at
        FROM bets b
        WHERE b.market_id = p_market_id AND b.bet_id > p_after_bet_id
        ORDER BY b.bet_id
        LIMIT p_limit
    ),
    o AS MATERIALIZED (
        SELECT c.* FROM c
        WHERE NOT EXISTS (
            SELECT 1 FROM bet_settlements e
            WHERE e.bet_id = c.bet_id AND e.placed_at = c.placed_at AND NOT e.reversal
              AND NOT EXISTS (SELECT 1 FROM bet_settlements r
                              WHERE r.bet_id = e.bet_id AND r.placed_at = e.placed_at
                                AND r.version = e.version AND r.reversal))
    )
    SELECT (SELECT max(bet_id) FROM c), (SELECT count(*)::integer FROM c),
           (SELECT count(*)::integer FROM o),
           (SELECT coalesce(jsonb_object_agg(currency, s), '{}'::jsonb)
            FROM (SELECT currency, sum(stake) AS s FROM o GROUP BY currency) x),
           (SELECT min(placed_at) FROM o);
$$;
COMMENT ON FUNCTION fulltime_open_bets_chunk IS
    'Open bets (no settlement effect in force) among a market''s next p_limit bets after '
    'p_after_bet_id: count, stakes per currency, oldest placed_at. Read-only.';
