-- Checks the read model against the write tables: returns one row per disagreement, none when
-- bet_views, market_views and bet_view_open are right (docs/schema.md, "Read model"). Read-only;
-- the caller runs it in a REPEATABLE READ transaction (db/projection_statements.cpp opens one,
-- READ ONLY), so that its statements share one snapshot while placements, settlements and the
-- projector go on: the cursor, the outbox rows after it, the write tables and the read model are
-- then all seen as of one moment. It refuses to run under READ COMMITTED, where each statement
-- would see another moment and report the changes committed in between.
--
--   kind                 bet_id, market_id   expected / actual
--   bet_view_missing     the bet's           the row bet_views_expected has / NULL
--   bet_view_differs     the bet's           bet_views_expected's row / bet_views' row
--   bet_missing          the row's           NULL / the bet_views row whose bet bets lacks
--   market_view_missing  NULL, the market's  market_views_expected's row / NULL
--   market_view_differs  NULL, the market's  market_views_expected's row / market_views' row
--   market_view_extra    NULL, the market's  NULL / the market_views row without bets
--   bet_open_missing     the bet's           (account_id, bet_id) / NULL: an open bet that
--                                            bet_view_open lacks
--   bet_open_extra       the bet's, or NULL  NULL / (account_id, bet_id): a bet_view_open row
--                                            whose bet is settled or not in bet_views
--   bet_result_extra     the row's, NULL     NULL / the bet_view_results row whose bet has no
--                                            bet_view_bets row (bet_views cannot show it)
--
-- Rows are rendered as composite text, in the columns' order of bet_views and market_views.
--
-- bet_views against bets + effective settlements (bet_views_expected): bets named by an outbox
-- row after the cursor are left out, since the snapshot may show their write but the read model
-- cannot show it yet (a row after the cursor of a transaction the snapshot does not show names
-- a change the write tables do not show either). A bet_views row whose bet is missing is
-- reported only when the bet was placed at or after the start of the oldest period whose
-- partitions are whole; older rows stayed when their period left (retention), as they should.
-- market_views against the aggregate over bet_views (market_views_expected), bet_view_open
-- against the open bets of bet_views, and bet_view_results against bet_view_bets: each pair
-- changes in the same transaction, so nothing is pending there.
--
-- The plan: it reads the whole read model and every kept bet (a full outer join, one backward
-- probe of bet_settlements' key per bet) and the outbox after the cursor: an operator's check,
-- not a hot path.
CREATE OR REPLACE FUNCTION fulltime_project_verify(p_consumer text)
RETURNS TABLE (kind text, bet_id bigint, market_id bigint, expected text, actual text)
LANGUAGE plpgsql
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_after_xact xid8;
    v_after_id   bigint;
    v_bound      timestamptz;
BEGIN
    IF current_setting('transaction_isolation') NOT IN ('repeatable read', 'serializable') THEN
        RAISE EXCEPTION 'fulltime_project_verify: run it in a REPEATABLE READ transaction'
            USING ERRCODE = '25001';
    END IF;
    SELECT c.last_xact_id, c.last_outbox_id INTO v_after_xact, v_after_id
    FROM outbox_cursors c
    WHERE c.consumer = p_consumer;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fulltime_project_verify: consumer % has no outbox cursor', p_consumer
            USING ERRCODE = 'P0002';
    END IF;
    SELECT coalesce(min(h.period_start), '-infinity') INTO v_bound
    FROM history_periods h
    WHERE h.dropped_at IS NULL AND h.max_bet_id IS NULL;

    RETURN QUERY
    WITH pending AS MATERIALIZED (
        SELECT DISTINCT x.account_id, x.bet_id
        FROM (
            SELECT o.account_id, (o.payload->>'bet_id')::bigint AS bet_id
            FROM outbox o
            WHERE (o.xact_id, o.outbox_id) > (v_after_xact, v_after_id)
              AND o.topic IN ('bet_placed', 'bet_settled', 'bet_unsettled')
            UNION ALL
            SELECT e.account_id, e.bet_id
            FROM outbox o
            CROSS JOIN LATERAL jsonb_to_record(o.payload) AS c(account_id bigint[], bet_id bigint[])
            CROSS JOIN LATERAL unnest(c.account_id, c.bet_id) AS e(account_id, bet_id)
            WHERE (o.xact_id, o.outbox_id) > (v_after_xact, v_after_id)
              AND o.topic = 'settlement_batch'
        ) x
    ),
    bet_pairs AS (
        SELECT e.account_id AS e_account, e.bet_id AS e_bet, e.market_id AS e_market,
               v.account_id AS v_account, v.bet_id AS v_bet, v.market_id AS v_market,
               v.placed_at AS v_placed_at,
               CASE WHEN e.bet_id IS NOT NULL THEN
                   ROW(e.account_id, e.bet_id, e.market_id, e.selection_id, e.currency, e.stake,
                       e.odds, e.placed_at, e.version, e.outcome, e.payout, e.applied_version,
                       e.applied_reversal)::text END AS e_row,
               CASE WHEN v.bet_id IS NOT NULL THEN
                   ROW(v.account_id, v.bet_id, v.market_id, v.selection_id, v.currency, v.stake,
                       v.odds, v.placed_at, v.version, v.outcome, v.payout, v.applied_version,
                       v.applied_reversal)::text END AS v_row
        FROM bet_views_expected e
        FULL JOIN bet_views v ON v.account_id = e.account_id AND v.bet_id = e.bet_id
    ),
    market_pairs AS (
        SELECT coalesce(x.market_id, m.market_id) AS market,
               x.market_id IS NOT NULL AS has_expected, m.market_id IS NOT NULL AS has_actual,
               CASE WHEN x.market_id IS NOT NULL THEN
                   ROW(x.market_id, x.currency, x.bets, x.stake, x.open_bets, x.open_stake,
                       x.settled_bets, x.payout)::text END AS x_row,
               CASE WHEN m.market_id IS NOT NULL THEN
                   ROW(m.market_id, m.currency, m.bets, m.stake, m.open_bets, m.open_stake,
                       m.settled_bets, m.payout)::text END AS m_row
        FROM market_views_expected x
        FULL JOIN market_views m ON m.market_id = x.market_id AND m.currency = x.currency
    ),
    orphan_results AS (
        SELECT r.bet_id, ROW(r.bet_id, r.version, r.outcome, r.payout, r.applied_version,
                             r.applied_reversal)::text AS r_row
        FROM bet_view_results r
        WHERE NOT EXISTS (SELECT 1 FROM bet_view_bets b WHERE b.bet_id = r.bet_id)
    ),
    open_pairs AS (
        SELECT coalesce(v.account_id, o.account_id) AS account_id,
               coalesce(v.bet_id, o.bet_id) AS bet, v.market_id,
               v.bet_id IS NOT NULL AS is_open, o.bet_id IS NOT NULL AS marked
        FROM (SELECT v.account_id, v.bet_id, v.market_id
              FROM bet_views v WHERE v.version IS NULL) v
        FULL JOIN bet_view_open o ON o.account_id = v.account_id AND o.bet_id = v.bet_id
    )
    SELECT CASE WHEN b.v_bet IS NULL THEN 'bet_view_missing'
                WHEN b.e_bet IS NULL THEN 'bet_missing'
                ELSE 'bet_view_differs' END,
           coalesce(b.e_bet, b.v_bet), coalesce(b.e_market, b.v_market), b.e_row, b.v_row
    FROM bet_pairs b
    WHERE b.e_row IS DISTINCT FROM b.v_row
      AND (b.e_bet IS NOT NULL OR b.v_placed_at >= v_bound)
      AND NOT EXISTS (SELECT 1 FROM pending p
                      WHERE p.account_id = coalesce(b.e_account, b.v_account)
                        AND p.bet_id = coalesce(b.e_bet, b.v_bet))
    UNION ALL
    SELECT CASE WHEN NOT m.has_actual THEN 'market_view_missing'
                WHEN NOT m.has_expected THEN 'market_view_extra'
                ELSE 'market_view_differs' END,
           NULL::bigint, m.market, m.x_row, m.m_row
    FROM market_pairs m
    WHERE m.x_row IS DISTINCT FROM m.m_row
    UNION ALL
    SELECT CASE WHEN o.is_open THEN 'bet_open_missing' ELSE 'bet_open_extra' END,
           o.bet, o.market_id,
           CASE WHEN o.is_open THEN ROW(o.account_id, o.bet)::text END,
           CASE WHEN o.marked THEN ROW(o.account_id, o.bet)::text END
    FROM open_pairs o
    WHERE o.is_open IS DISTINCT FROM o.marked
    UNION ALL
    SELECT 'bet_result_extra', r.bet_id, NULL::bigint, NULL::text, r.r_row
    FROM orphan_results r
    ORDER BY 1, 3, 2;
END;
$$;

COMMENT ON FUNCTION fulltime_project_verify IS
    'Compares bet_views with bets and their effective settlements (leaving out the bets named by '
    'outbox rows after p_consumer''s cursor, and bets whose period left) and market_views with '
    'the aggregate over bet_views, bet_view_open with the open bets of bet_views, and '
    'bet_view_results with bet_view_bets; one row per disagreement (kind, bet_id, market_id, '
    'expected, actual). Run it in a REPEATABLE READ transaction.';
