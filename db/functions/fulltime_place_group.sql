-- Natural group commit for placement (docs/design.md, "Parts"): the requests that queued in
-- one placement actor's mailbox while its previous transaction ran are executed together, in
-- one statement and so one transaction and one commit, each keeping its own outcome.
--
-- Each item runs fulltime_place unchanged: its refusals stay its own (they are decided inside
-- fulltime_place, whose writes for a refused item are undone by its own exception block). A lock
-- timeout in any item aborts the statement and with it the whole group, keys included, so the
-- engine retries the group with the same keys; the idempotency keys make that safe. Two items
-- with one key in a group behave as two requests in sequence: the second sees the first's
-- stored result and is replayed. All items share one preferred exposure shard (the placement
-- actor's; see fulltime_place.sql).

CREATE OR REPLACE FUNCTION fulltime_place_group(
    p_items           jsonb,    -- [{"a":account,"k":key,"f":fingerprint,"s":selection,
                                --   "st":stake,"o":odds,"ac":accept}, ...]
    p_lock_timeout_ms integer,
    p_shard_hint      integer)  -- every item's preferred exposure shard
RETURNS TABLE (item integer, outcome text, response jsonb)
LANGUAGE plpgsql
AS $$
DECLARE
    v_item  jsonb;
    v_index bigint;
    v_row   record;
BEGIN
    FOR v_item, v_index IN
        SELECT e.value, e.ordinality FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e
    LOOP
        SELECT p.outcome, p.response INTO v_row
        FROM fulltime_place((v_item->>'a')::bigint, v_item->>'k', v_item->>'f',
                            (v_item->>'s')::bigint, (v_item->>'st')::bigint,
                            (v_item->>'o')::bigint, v_item->>'ac', p_lock_timeout_ms,
                            p_shard_hint) AS p;
        item := v_index::integer;
        outcome := v_row.outcome;
        response := v_row.response;
        RETURN NEXT;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION fulltime_place_group IS
    'Several placements in one transaction (natural group commit), each with its own outcome; '
    'item is the 1-based position in p_items.';
