-- Rebuilds the read model (bet_views, market_views; docs/schema.md, "Read model") from the write
-- tables, and puts p_consumer's cursor at the tail, in one transaction: for a read model that
-- verify found wrong, or a projector whose cursor was lost. The engine never calls it; an
-- operator does (or a test), and it may run while placements, settlements and the projector run.
--
-- In order:
--   1. The cursor row is made if missing and locked, waiting for the page a projector may be
--      applying; projectors that come while the rebuild runs find it locked and return busy
--      (fulltime_project takes it with SKIP LOCKED).
--   2. The cursor goes to the tail, as db/push_statements.cpp puts a new consumer: after the
--      last possible row of the transaction before this statement's xmin. Every transaction
--      below that xmin has finished, so the later statements' snapshots show all of it; one at
--      or above it is read by the projector afterwards, and where the fill below already showed
--      it, applying it again changes nothing (fulltime_project's application is idempotent).
--   3. The read model's rows of bets the write tables still keep (placed at or after the start
--      of the oldest period not dropped nor being dropped), in bet_view_bets, bet_view_results
--      and bet_view_open, are deleted and written again from bet_views_expected (read once,
--      into a temporary table); rows of bets whose period left are kept, as nothing could
--      write them again. market_views is recomputed from bet_views (market_views_expected).
--   4. projections: consumed_below is that xmin.
--
-- DELETE, not TRUNCATE: TRUNCATE takes an ACCESS EXCLUSIVE lock until commit, and every
-- bettor's history read (and verify) would queue behind the whole rebuild; with DELETE, readers
-- see the old rows until the new ones commit. The price: the old rows' deletion is logged and
-- leaves them dead until vacuum (about the table's size again in WAL and in bloat), and
-- TRUNCATE could not keep the rows of dropped periods anyway.
--
-- The plan: the deletes scan the read model's tables (they touch nearly every row); the fill
-- reads every kept bet once with one backward probe of bet_settlements' key in the bet's
-- partition (bet_views_expected). Cost grows with the bets kept: run it off-peak.
CREATE OR REPLACE FUNCTION fulltime_project_rebuild(
    p_consumer         text,
    OUT bets_projected bigint,   -- bets written from the write tables (bet_view_bets rows)
    OUT bets_kept      bigint,   -- bets whose period left, kept (bet_view_bets rows)
    OUT markets        bigint,   -- market_views rows written
    OUT consumed_below xid8)     -- the new horizon: the tail's xmin
LANGUAGE plpgsql
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_tail  xid8;
    v_bound timestamptz;
BEGIN
    INSERT INTO outbox_cursors (consumer) VALUES (p_consumer) ON CONFLICT (consumer) DO NOTHING;
    PERFORM 1 FROM outbox_cursors c WHERE c.consumer = p_consumer FOR UPDATE;

    UPDATE outbox_cursors c
    SET last_xact_id = (pg_snapshot_xmin(pg_current_snapshot())::text::numeric - 1)::text::xid8,
        last_outbox_id = 9223372036854775807, updated_at = now()
    WHERE c.consumer = p_consumer
    RETURNING (c.last_xact_id::text::numeric + 1)::text::xid8 INTO v_tail;

    -- The oldest period whose partitions are still whole (a period being dropped has max_bet_id).
    SELECT coalesce(min(h.period_start), '-infinity') INTO v_bound
    FROM history_periods h
    WHERE h.dropped_at IS NULL AND h.max_bet_id IS NULL;

    -- The rows of the kept bets, in the three tables, then written again. A settlement or an
    -- open mark stays only with the bet_view_bets row of a bet whose period left (that row names
    -- the bet's placed_at); one with no such row goes, with none to stay orphaned.
    DELETE FROM bet_view_results r
    WHERE NOT EXISTS (SELECT 1 FROM bet_view_bets b
                      WHERE b.bet_id = r.bet_id AND b.placed_at < v_bound);
    DELETE FROM bet_view_open o
    WHERE NOT EXISTS (SELECT 1 FROM bet_view_bets b
                      WHERE b.account_id = o.account_id AND b.bet_id = o.bet_id
                        AND b.placed_at < v_bound);
    DELETE FROM bet_view_bets b WHERE b.placed_at >= v_bound;
    SELECT count(*) INTO bets_kept FROM bet_view_bets;

    CREATE TEMPORARY TABLE fulltime_rebuild_bets ON COMMIT DROP AS
    SELECT e.account_id, e.bet_id, e.market_id, e.selection_id, e.currency, e.stake, e.odds,
           e.placed_at, e.version, e.outcome, e.payout, e.applied_version, e.applied_reversal
    FROM bet_views_expected e
    WHERE e.placed_at >= v_bound;
    INSERT INTO bet_view_bets (account_id, bet_id, market_id, selection_id, currency, stake,
                               odds, placed_at)
    SELECT e.account_id, e.bet_id, e.market_id, e.selection_id, e.currency, e.stake, e.odds,
           e.placed_at
    FROM fulltime_rebuild_bets e
    ORDER BY e.placed_at, e.bet_id;
    GET DIAGNOSTICS bets_projected = ROW_COUNT;
    INSERT INTO bet_view_results (bet_id, version, outcome, payout, applied_version,
                                  applied_reversal)
    SELECT e.bet_id, e.version, e.outcome, e.payout, e.applied_version, e.applied_reversal
    FROM fulltime_rebuild_bets e
    WHERE e.applied_version > 0
    ORDER BY e.bet_id;
    INSERT INTO bet_view_open (account_id, bet_id)
    SELECT e.account_id, e.bet_id
    FROM fulltime_rebuild_bets e
    WHERE e.version IS NULL
    ORDER BY e.account_id, e.bet_id;
    DROP TABLE fulltime_rebuild_bets;

    DELETE FROM market_views;
    INSERT INTO market_views (market_id, currency, bets, stake, open_bets, open_stake,
                              settled_bets, payout)
    SELECT x.market_id, x.currency, x.bets, x.stake, x.open_bets, x.open_stake, x.settled_bets,
           x.payout
    FROM market_views_expected x
    ORDER BY x.market_id, x.currency;
    GET DIAGNOSTICS markets = ROW_COUNT;

    INSERT INTO projections AS p (name, consumed_below)
    VALUES (p_consumer, v_tail)
    ON CONFLICT (name) DO UPDATE SET consumed_below = EXCLUDED.consumed_below, updated_at = now();
    consumed_below := v_tail;
END;
$$;

COMMENT ON FUNCTION fulltime_project_rebuild IS
    'Rebuilds the read model''s bets (bet_view_bets, bet_view_results, bet_view_open: the bets '
    'the write tables keep; rows of dropped periods stay) and market_views from the write '
    'tables, and puts p_consumer''s outbox cursor at the tail, in one transaction (DELETE, not '
    'TRUNCATE: readers go on meanwhile). Returns the bets written, the bets kept, the markets '
    'and the new consumed_below.';
