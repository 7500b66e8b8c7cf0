-- Part of settlement (fulltime_settle_step.sql explains the step and its parts): the sum of
-- counts of skipped bets per terminal-state code ({"code": n, ...}; NULL counts nothing), as an
-- event's running counts add a batch's (fulltime_settle_checkpoint, fulltime_settle_lane) and as
-- its lanes' counts add up when it finishes (fulltime_settle_step).
CREATE OR REPLACE FUNCTION fulltime_skipped_add(VARIADIC p_counts jsonb[])
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT coalesce(jsonb_object_agg(c.key, c.n), '{}'::jsonb)
    FROM (SELECT x.key, sum(x.value::bigint) AS n
          FROM unnest(p_counts) AS u(counts), jsonb_each_text(coalesce(u.counts, '{}'::jsonb)) x
          GROUP BY x.key) c;
$$;

COMMENT ON FUNCTION fulltime_skipped_add IS
    'Part of settlement: counts of skipped bets per code added up (NULL counts nothing).';
