-- Time partitions (docs/schema.md, "Time partitions"): the name suffix of a period's partitions,
-- <table>_<suffix>: p<its start as YYYYMMDD"t"HH24MISS in UTC>, or history for the period that
-- starts at -infinity (the rows written before migration 0005).
CREATE OR REPLACE FUNCTION fulltime_history_suffix(p_period_start timestamptz)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN isfinite(p_period_start)
                THEN 'p' || to_char(p_period_start AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS')
                ELSE 'history' END
$$;

COMMENT ON FUNCTION fulltime_history_suffix IS
    'The name suffix of a period''s partitions: p<start, UTC, YYYYMMDD"t"HH24MISS> or history.';
