-- Time partitions (docs/schema.md, "Retention"): what keeps each period that has not left yet.
-- A period's partitions are detached and dropped (by the partition keeper, oldest first, all
-- four tables together) only when nothing in them can still change or be needed:
--   open               the period has not ended
--   not_closed         its balances are not stored yet (fulltime_history_close)
--   retention          it ended less than p_retention ago
--   earlier_period     an older period is still kept (periods leave in order)
--   open_bets          it holds bets with no settlement in force
--   unsettled_markets  a market of its bets has a result event not yet applied
--   unconsumed_outbox  an outbox consumer's cursor is not yet past its outbox rows
-- The last three read the period's partitions, so they are checked only for a period that none
-- of the first four holds (the others show NULL counts): a listing does not scan a year of bets.
-- A period whose max_bet_id is set and dropped_at is not is being dropped (dropping = true): the
-- keeper finishes it.
CREATE OR REPLACE FUNCTION fulltime_history_holds(p_retention interval)
RETURNS TABLE (
    period_start      timestamptz,
    period_end        timestamptz,
    closed_at         timestamptz,
    dropping          boolean,
    holds             text[],
    open_bets         bigint,
    unsettled_markets bigint,
    unconsumed_outbox bigint)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    r         record;
    v_kept    boolean := false;   -- an older period is kept
    v_cursor  record;
BEGIN
    SELECT c.last_xact_id, c.last_outbox_id INTO v_cursor
    FROM outbox_cursors c
    ORDER BY c.last_xact_id, c.last_outbox_id
    LIMIT 1;
    FOR r IN SELECT h.* FROM history_periods h WHERE h.dropped_at IS NULL
             ORDER BY h.period_start LOOP
        period_start := r.period_start;
        period_end := r.period_end;
        closed_at := r.closed_at;
        dropping := r.max_bet_id IS NOT NULL;
        holds := '{}';
        open_bets := NULL;
        unsettled_markets := NULL;
        unconsumed_outbox := NULL;
        IF r.period_end > now() THEN
            holds := holds || 'open'::text;
        END IF;
        IF r.closed_at IS NULL THEN
            holds := holds || 'not_closed'::text;
        END IF;
        IF r.period_end > now() - p_retention THEN
            holds := holds || 'retention'::text;
        END IF;
        IF v_kept THEN
            holds := holds || 'earlier_period'::text;
        END IF;
        IF cardinality(holds) = 0 AND NOT dropping THEN
            SELECT count(*) INTO open_bets
            FROM bets b
            WHERE b.placed_at >= r.period_start AND b.placed_at < r.period_end
              AND NOT EXISTS (
                  SELECT 1 FROM bet_settlements e
                  WHERE e.bet_id = b.bet_id AND e.placed_at = b.placed_at AND NOT e.reversal
                    AND NOT EXISTS (SELECT 1 FROM bet_settlements x
                                    WHERE x.bet_id = e.bet_id AND x.placed_at = e.placed_at
                                      AND x.version = e.version AND x.reversal));
            SELECT count(*) INTO unsettled_markets
            FROM settlement_progress p
            WHERE (p.current_seq IS NOT NULL
                   OR EXISTS (SELECT 1 FROM result_events e
                              WHERE e.market_id = p.market_id AND e.seq > p.applied_seq))
              AND EXISTS (SELECT 1 FROM bets b
                          WHERE b.market_id = p.market_id
                            AND b.placed_at >= r.period_start AND b.placed_at < r.period_end);
            IF v_cursor IS NULL THEN
                unconsumed_outbox := 0;
            ELSE
                SELECT count(*) INTO unconsumed_outbox
                FROM outbox o
                WHERE o.created_at >= r.period_start AND o.created_at < r.period_end
                  AND (o.xact_id, o.outbox_id) > (v_cursor.last_xact_id, v_cursor.last_outbox_id);
            END IF;
            IF open_bets > 0 THEN
                holds := holds || 'open_bets'::text;
            END IF;
            IF unsettled_markets > 0 THEN
                holds := holds || 'unsettled_markets'::text;
            END IF;
            IF unconsumed_outbox > 0 THEN
                holds := holds || 'unconsumed_outbox'::text;
            END IF;
        END IF;
        IF cardinality(holds) > 0 THEN
            v_kept := true;
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION fulltime_history_holds IS
    'Every period not dropped, oldest first, with what holds it (open, not_closed, retention, '
    'earlier_period, open_bets, unsettled_markets, unconsumed_outbox); an empty holds may be '
    'dropped. Read-only.';
