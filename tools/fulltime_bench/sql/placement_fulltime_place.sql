-- The pgbench ceiling's transaction: one bet through fulltime_place, the function the engine
-- calls, after the draw (placement_draw_*.pgbench, placement_repeat.pgbench). The key is
-- r<run>-<client>-<number>; the client id is the preferred exposure shard. A lock timeout of
-- 5 s instead of the engine's 50 ms: pgbench cannot retry a lock timeout as the engine does
-- (its client would stop), so it waits instead, which costs no less than a retry.
SELECT outcome FROM fulltime_place(:acct::bigint, 'r' || :run::bigint || '-' || :client_id::integer || '-' || :key::bigint, 'fp-' || :sel::bigint || '-' || :stake::bigint, :sel::bigint, :stake::bigint, 2, 20000, 'any', 5000, :client_id::integer);
