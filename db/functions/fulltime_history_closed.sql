-- Time partitions (docs/schema.md, "Closing a period"): the latest period closed at or before
-- p_at, whose stored balances (period_balances, period_side_sums) hold every ledger leg before
-- its end. A reconciliation run passes its start, so all its steps start from the same closed
-- period even when one closes during the run. NULL and -infinity when none was closed then.
CREATE OR REPLACE FUNCTION fulltime_history_closed(p_at timestamptz,
                                                   OUT period_start timestamptz,
                                                   OUT period_end timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT h.period_start, coalesce(h.period_end, '-infinity')
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (SELECT x.period_start, x.period_end FROM history_periods x
                       WHERE x.closed_at <= p_at
                       ORDER BY x.period_start DESC LIMIT 1) h ON true
$$;

COMMENT ON FUNCTION fulltime_history_closed IS
    'The latest period closed at or before p_at (NULL, -infinity: none).';
