-- Time partitions (docs/schema.md, "Time partitions"): where a period that starts at p_from
-- ends. A period of whole months ends at the start of a month (UTC); any other period at a
-- multiple of itself from Monday 2000-01-03 00:00 UTC (a day at midnight, a week on Monday).
CREATE OR REPLACE FUNCTION fulltime_history_boundary(p_from timestamptz, p_period interval)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
        -- Whole months (date_trunc keeps an interval's months and years only).
        WHEN p_period >= interval '1 month' AND date_trunc('month', p_period) = p_period
        THEN (date_trunc('month', p_from AT TIME ZONE 'UTC') + p_period) AT TIME ZONE 'UTC'
        ELSE date_bin(p_period, p_from, timestamptz '2000-01-03 00:00:00+00') + p_period
    END
$$;

COMMENT ON FUNCTION fulltime_history_boundary IS
    'The end of the period that contains p_from: the next aligned boundary after it.';
