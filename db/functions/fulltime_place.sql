-- One placement: fulltime_place_group (db/functions/fulltime_place_group.sql, where the rules
-- live and are explained) with one-element arrays. The engine always calls the group function;
-- this one is for tests, tools and the pgbench baseline of scripts/bench-placement, which call
-- the same SQL the engine does.
--
-- PL/pgSQL rather than LANGUAGE sql: a LANGUAGE sql body is checked when it is created, and this
-- file is applied before fulltime_place_group.sql (docs/schema.md, "Order of function files").

CREATE OR REPLACE FUNCTION fulltime_place(
    p_account_id      bigint,
    p_idempotency_key text,
    p_fingerprint     text,
    p_selection_id    bigint,
    p_stake           bigint,
    p_odds            bigint,
    p_accept          text,     -- 'exact' | 'better' | 'any'
    p_lock_timeout_ms integer,
    p_shard_hint      integer,  -- the caller's preferred exposure shard (modulo the market's)
    OUT outcome       text,     -- 'placed' | 'rejected' | 'replayed' | 'key_reused'
    OUT response      jsonb)
LANGUAGE plpgsql
AS $$
BEGIN
    SELECT g.outcome, g.response INTO outcome, response
    FROM fulltime_place_group(ARRAY[p_account_id], ARRAY[p_idempotency_key],
                              ARRAY[p_fingerprint], ARRAY[p_selection_id], ARRAY[p_stake],
                              ARRAY[p_odds], ARRAY[p_accept], p_lock_timeout_ms,
                              p_shard_hint) AS g;
END;
$$;

COMMENT ON FUNCTION fulltime_place(bigint, text, text, bigint, bigint, bigint, text, integer, integer) IS
    'One placement in one transaction: fulltime_place_group with one item (claim the key, '
    'validate without locks, exposure shard, balance last; the first result is stored on the key).';
