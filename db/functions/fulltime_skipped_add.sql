-- Part of settlement (fulltime_settle_step.sql explains the step and its parts): the sum of two
-- counts of skipped bets per terminal-state code ({"code": n, ...}; NULL counts nothing), as
-- an event's running counts add a batch's (fulltime_settle_checkpoint, fulltime_settle_lane)
-- and as its lanes' counts add up when it finishes (fulltime_settle_step).
CREATE OR REPLACE FUNCTION fulltime_skipped_add(p_a jsonb, p_b jsonb)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT coalesce(jsonb_object_agg(c.key, c.n), '{}'::jsonb)
    FROM (SELECT x.key, sum(x.value::bigint) AS n
          FROM (SELECT * FROM jsonb_each_text(coalesce(p_a, '{}'::jsonb))
                UNION ALL
                SELECT * FROM jsonb_each_text(coalesce(p_b, '{}'::jsonb))) x
          GROUP BY x.key) c;
$$;

COMMENT ON FUNCTION fulltime_skipped_add IS
    'Part of settlement: two counts of skipped bets per code added up (NULL counts nothing).';
