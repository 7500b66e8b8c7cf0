-- Settlement: the per-market settlement step (the intake is fulltime_record_result).
--
-- fulltime_settle_step is called by the market's actor again and again; each call is one short
-- transaction (one statement, autocommit) that does one of: start the market's next event
-- (strictly seq order; a gap waits), wait for the placements that read the market open to finish
-- (the fence), settle one batch of at most p_batch_size bets after the checkpoint, or finish the
-- event. Its statuses are fulltime_codes' domain settle_status.
--
-- Lanes. An event that starts on a market with more than p_lanes * p_batch_size bets (p_lanes
-- > 1) is settled in p_lanes lanes, split by account (account_id % lanes): one settlement_lanes
-- row per lane holds its checkpoint and running counts, and fulltime_settle_lane settles one
-- batch of one lane under that row's lock, so the lanes run on as many backends side by side.
-- This step then starts the event and passes its fence as for one lane; after that it answers
-- 'lanes' (with their count in `lanes`) until every lane is done, and then finishes the event
-- with the lanes' counts summed. The count is the event's, kept on the progress row: a restart
-- or another configuration finishes the event in the lanes it started with.
--
-- A batch is four parts, each a function of its own, called in this order within the step's
-- transaction (the first three by fulltime_settle_batch, which fulltime_settle_lane calls too):
--   fulltime_settle_plan        which bets the batch settles and how (reversal, new effect,
--                               outcome, payout, or the skip code of a terminal state): one
--                               read-only statement
--   fulltime_settle_legs        the settlement rows, keyed ledger transfers and the outbox row
--                               of that plan in one statement; returns the per-account deltas
--   fulltime_settle_balances    the balance rows, in ascending account_id, aggregated per account
--                               (the only row locks shared with placement, taken last)
--   fulltime_settle_checkpoint  advance settlement_progress past the batch, with its counts (a
--                               lane advances its settlement_lanes row instead)
-- and a batch that finds no bet ends the event with fulltime_settle_finish. The parts pass the
-- batch to each other as values (an array of fulltime_settle_bet, arrays of deltas), never
-- through a table, so nothing outlives the step and concurrent steps of other markets share
-- nothing.
--
-- Exactly once: the progress row is locked first, so two workers on one market run one after the
-- other, and nothing else writes a market's settlement rows (in lanes: the lane's row, and no
-- two lanes hold a bet or an account); a bet that already has a settlement
-- row of this event is skipped, so running a batch again changes nothing; and the keys of the
-- settlement rows (bet, version, reversal) and of the ledger entries (bet, version, kind, leg) are
-- unique, so a duplicate could only fail the step, never move money twice. That lock is also why the plan may be read in a
-- statement of its own, before the statement that writes it: no other transaction can change
-- what the plan read about these bets in between.
CREATE OR REPLACE FUNCTION fulltime_settle_step(
    p_market_id       bigint,
    p_batch_size      integer,
    p_lock_timeout_ms integer,
    p_lanes           integer DEFAULT 1,  -- lanes for an event this step starts (see above)
    OUT status        text,     -- 'idle' | 'gap' | 'started' | 'fenced' | 'batch' | 'finished'
                                -- | 'lanes'
    OUT seq           bigint,   -- the event this step worked on (or waits for)
    OUT kind          text,
    OUT bets          integer,  -- bets this batch looked at
    OUT effects       integer,  -- settlement rows this batch wrote
    OUT backlog_s     double precision,  -- age of the oldest unapplied event, seconds
    OUT lanes         integer)  -- the lanes of the event in progress (1: none)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_progress   settlement_progress%ROWTYPE;
    v_event      result_events%ROWTYPE;
    v_skipped    jsonb;    -- this batch's skipped bets per terminal-state code (NULL: none)
    v_last_bet   bigint;
    v_lanes      integer := 1;
    v_pending    integer;
    v_lane_rows  integer;
BEGIN
    PERFORM set_config('lock_timeout', p_lock_timeout_ms::text || 'ms', true);

    -- The market's progress row, locked first: one worker per market at a time.
    UPDATE settlement_progress p SET updated_at = now()
    WHERE p.market_id = p_market_id
    RETURNING * INTO v_progress;
    IF NOT FOUND THEN
        status := 'idle';
        RETURN;
    END IF;

    SELECT extract(epoch FROM now() - min(e.received_at)) INTO backlog_s
    FROM result_events e
    WHERE e.market_id = p_market_id AND e.seq > v_progress.applied_seq;
    backlog_s := coalesce(backlog_s, 0);
    lanes := v_progress.lanes;

    IF v_progress.current_seq IS NULL THEN
        SELECT * INTO v_event FROM result_events e
        WHERE e.market_id = p_market_id AND e.seq = v_progress.applied_seq + 1;
        IF NOT FOUND THEN
            seq := v_progress.applied_seq + 1;
            status := CASE WHEN EXISTS (SELECT 1 FROM result_events e
                                        WHERE e.market_id = p_market_id
                                          AND e.seq > v_progress.applied_seq + 1)
                           THEN 'gap' ELSE 'idle' END;
            RETURN;
        END IF;
        IF v_event.kind = 'gap_closed' THEN
            -- The operator's close of a hole: no bet to touch; the progress moves past the
            -- hole's last seq at once, and the event after it may start.
            UPDATE result_events e SET applied_at = now(), skipped = '{}'
            WHERE e.result_event_id = v_event.result_event_id;
            UPDATE settlement_progress p
            SET applied_seq = (v_event.payload->>'through')::bigint
            WHERE p.market_id = p_market_id;
            status := 'finished';
            seq := v_event.seq;
            kind := v_event.kind;
            bets := 0;
            effects := 0;
            RETURN;
        END IF;
        -- Lanes pay off on a market with more bets than a batch per lane (every bet of the
        -- market counts: a correction or a cancel reads them all).
        IF p_lanes > 1 AND (SELECT count(*) FROM (SELECT 1 FROM bets b
                                                 WHERE b.market_id = p_market_id
                                                 LIMIT p_lanes * p_batch_size + 1) x)
                           > p_lanes * p_batch_size THEN
            v_lanes := least(p_lanes, 64);
        END IF;
        UPDATE settlement_progress p
        SET current_seq = v_event.seq, checkpoint_bet_id = 0,
            fence_xid = pg_snapshot_xmax(pg_current_snapshot()),
            event_effects = 0, event_skipped = '{}', lanes = v_lanes
        WHERE p.market_id = p_market_id;
        DELETE FROM settlement_lanes l WHERE l.market_id = p_market_id;
        IF v_lanes > 1 THEN
            INSERT INTO settlement_lanes (market_id, lane, seq)
            SELECT p_market_id, n, v_event.seq FROM generate_series(0, v_lanes - 1) n;
        END IF;
        lanes := v_lanes;
        status := 'started';
        seq := v_event.seq;
        kind := v_event.kind;
        RETURN;
    END IF;

    SELECT * INTO v_event FROM result_events e
    WHERE e.market_id = p_market_id AND e.seq = v_progress.current_seq;
    seq := v_event.seq;
    kind := v_event.kind;

    -- The fence: wait while a transaction of this database that was assigned its id before the
    -- event started is still running (it may be a placement that read the market open). Only
    -- this database's transactions count, so a long writer elsewhere on the cluster does not
    -- hold settlement back. backend_xid is 32 bits: compared modulo 2^32, as PostgreSQL does.
    -- Read once per event: once no such transaction runs, none can appear (ids are assigned in
    -- ascending order), so the step that finds none clears fence_xid and later steps skip it.
    IF v_progress.fence_xid IS NOT NULL AND EXISTS (SELECT 1 FROM pg_stat_activity a
               WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
                 AND a.backend_xid IS NOT NULL
                 AND ((v_progress.fence_xid::text::numeric % 4294967296)::bigint
                      - a.backend_xid::text::bigint + 4294967296) % 4294967296
                     BETWEEN 1 AND 2147483647) THEN
        status := 'fenced';
        RETURN;
    END IF;
    IF v_progress.fence_xid IS NOT NULL THEN
        UPDATE settlement_progress p SET fence_xid = NULL WHERE p.market_id = p_market_id;
    END IF;

    -- In lanes: the lanes settle the bets (fulltime_settle_lane); this step finishes the event
    -- once each of them is done, with their counts.
    IF v_progress.lanes > 1 THEN
        SELECT count(*), count(*) FILTER (WHERE NOT l.done), coalesce(sum(l.effects), 0)
        INTO v_lane_rows, v_pending, v_progress.event_effects
        FROM settlement_lanes l
        WHERE l.market_id = p_market_id AND l.seq = v_event.seq;
        IF v_lane_rows <> v_progress.lanes THEN
            RAISE EXCEPTION 'market % event % has % lane rows of %', p_market_id, v_event.seq,
                v_lane_rows, v_progress.lanes;
        END IF;
        IF v_pending > 0 THEN
            status := 'lanes';
            RETURN;
        END IF;
        v_progress.event_skipped := fulltime_skipped_add(VARIADIC (
            SELECT array_agg(l.skipped) FROM settlement_lanes l
            WHERE l.market_id = p_market_id));
        PERFORM fulltime_settle_finish(p_market_id, v_event.result_event_id, v_event.seq,
                                       v_event.kind, v_progress.event_effects,
                                       v_progress.event_skipped);
        DELETE FROM settlement_lanes l WHERE l.market_id = p_market_id;
        bets := 0;
        effects := 0;
        status := 'finished';
        RETURN;
    END IF;

    SELECT b.bets, b.effects, b.last_bet, b.skipped INTO bets, effects, v_last_bet, v_skipped
    FROM fulltime_settle_batch(p_market_id, v_event.result_event_id,
                               v_progress.effective_result_id, v_progress.checkpoint_bet_id,
                               p_batch_size, 0, 1) b;
    IF bets = 0 THEN
        PERFORM fulltime_settle_finish(p_market_id, v_event.result_event_id, v_event.seq,
                                       v_event.kind, v_progress.event_effects,
                                       v_progress.event_skipped);
        status := 'finished';
        RETURN;
    END IF;
    PERFORM fulltime_settle_checkpoint(p_market_id, v_last_bet, effects, v_skipped);
    status := 'batch';
END;
$$;

COMMENT ON FUNCTION fulltime_settle_step IS
    'One step of a market''s settlement in one transaction: start the next event (in lanes when '
    'it is large), wait on the fence, settle one batch after the checkpoint '
    '(fulltime_settle_batch, _checkpoint), answer ''lanes'' while its lanes settle it, or '
    'finish the event (fulltime_settle_finish: its skipped bets and refusal code on '
    'result_events).';
