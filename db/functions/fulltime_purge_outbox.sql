-- The outbox purge: deletes the oldest consumed rows, at most p_rows_max of them, and returns how
-- many it deleted. A row is consumed when it is at or below the lowest cursor in outbox_cursors
-- (every consumer has read it); with no cursor row nothing is consumed and nothing is deleted.
-- The push loop (net/settlement_pushes.cpp) calls it in batches, each call its own short
-- transaction (one statement, autocommit).
--
-- Rows at or below a stored cursor never change: a cursor only passes rows of transactions below
-- the snapshot's xmin (docs/schema.md, "Outbox"), so no row can appear there later, and the
-- batch's bound read here still holds when the DELETE runs.
--
-- The plan walks outbox_pkey (xact_id, outbox_id) in order: the bound is the p_rows_max-th key
-- after the start of the index (an index-only range scan with OFFSET), and the DELETE is a range
-- scan of the same index up to it. A DELETE joined to a LIMIT subquery was planned as a hash
-- join over a sequential scan of the whole outbox (100,000 rows, 1,000 per batch), so the
-- statements compare keys with bounds instead. Each statement is planned with its values
-- (force_custom_plan: a generic plan guesses a third of the table below any bound) and without
-- sequential scans, like the placement functions, so stale statistics cannot turn a batch into
-- a scan of the table. JIT is off: outbox_cursors has no index to read its lowest cursor by, so
-- its (tiny) scan carries the cost that disables sequential scans, which is far above
-- jit_above_cost, and compiling the statement took 100 ms of a batch of 2 ms. Nothing here names ctid: it works on a table partitioned later by
-- created_at with the key extended to (xact_id, outbox_id, created_at), whose key prefix still
-- orders and bounds the rows.

CREATE OR REPLACE FUNCTION fulltime_purge_outbox(p_rows_max integer)
RETURNS bigint
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_xact_id   xid8;
    v_outbox_id bigint;
    v_last_xact xid8;
    v_last_id   bigint;
    v_deleted   bigint;
BEGIN
    SELECT c.last_xact_id, c.last_outbox_id INTO v_xact_id, v_outbox_id
    FROM outbox_cursors c
    ORDER BY c.last_xact_id, c.last_outbox_id
    LIMIT 1;
    IF NOT FOUND OR p_rows_max < 1 THEN
        RETURN 0;
    END IF;

    -- The batch's last row, when at least p_rows_max rows are consumed; else the cursor bounds
    -- the batch. (SELECT INTO sets its targets to NULL when it finds no row: hence two more.)
    SELECT o.xact_id, o.outbox_id INTO v_last_xact, v_last_id
    FROM outbox o
    WHERE (o.xact_id, o.outbox_id) <= (v_xact_id, v_outbox_id)
    ORDER BY o.xact_id, o.outbox_id
    OFFSET p_rows_max - 1
    LIMIT 1;
    IF FOUND THEN
        v_xact_id := v_last_xact;
        v_outbox_id := v_last_id;
    END IF;

    DELETE FROM outbox o WHERE (o.xact_id, o.outbox_id) <= (v_xact_id, v_outbox_id);
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_deleted;
END;
$$;
COMMENT ON FUNCTION fulltime_purge_outbox IS
    'Deletes at most p_rows_max outbox rows at or below the lowest consumer cursor, oldest first, '
    'and returns the count (0 without a consumer). One batch of the push loop''s purge.';
