-- Time partitions (docs/schema.md, "Retention"): the first step of dropping the oldest kept
-- period. Under the history lock, checks again that nothing holds it (fulltime_history_holds)
-- and records the highest bet id of its bets partition (max_bet_id; 0 when it held none), which
-- marks it as being dropped. The partition keeper then detaches and drops its four partitions
-- (DETACH PARTITION ... CONCURRENTLY cannot run in a function) and calls
-- fulltime_history_drop_end. Returns false, and changes nothing, when the period may not go.
CREATE OR REPLACE FUNCTION fulltime_history_drop_begin(p_period_start timestamptz,
                                                       p_retention interval)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    v_first timestamptz;
    v_holds text[];
    v_end   timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('fulltime_history'));
    SELECT h.period_start, h.holds INTO v_first, v_holds
    FROM fulltime_history_holds(p_retention) h
    ORDER BY h.period_start
    LIMIT 1;
    IF v_first IS DISTINCT FROM p_period_start OR cardinality(v_holds) > 0 THEN
        RETURN false;
    END IF;
    SELECT h.period_end INTO v_end FROM history_periods h WHERE h.period_start = p_period_start;
    UPDATE history_periods h
    SET max_bet_id = coalesce((SELECT max(b.bet_id) FROM bets b
                               WHERE b.placed_at >= p_period_start AND b.placed_at < v_end), 0)
    WHERE h.period_start = p_period_start AND h.max_bet_id IS NULL;
    RETURN true;
END;
$$;

COMMENT ON FUNCTION fulltime_history_drop_begin IS
    'Marks the oldest kept period as being dropped (max_bet_id) when nothing holds it; false '
    'otherwise.';
