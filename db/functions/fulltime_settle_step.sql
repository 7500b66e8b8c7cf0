-- Settlement: the per-market settlement step (the intake is fulltime_record_result).
--
-- fulltime_settle_step is called by the market's actor again and again; each call is one short
-- transaction (one statement, autocommit) that does one of: start the market's next event
-- (strictly seq order; a gap waits), wait for the placements that read the market open to finish
-- (the fence), settle one batch of at most p_batch_size bets after the checkpoint, or finish the
-- event. Its statuses are fulltime_codes' domain settle_status.
--
-- A batch is four parts, each a function of its own, called here in this order within the
-- step's transaction:
--   fulltime_settle_plan        which bets the batch settles and how (reversal, new effect,
--                               outcome, payout, or the skip code of a terminal state): one
--                               read-only statement
--   fulltime_settle_legs        the settlement rows, keyed ledger transfers and the outbox row
--                               of that plan in one statement; returns the per-account deltas
--   fulltime_settle_balances    the balance rows, in ascending account_id, aggregated per account
--                               (the only row locks shared with placement, taken last)
--   fulltime_settle_checkpoint  advance settlement_progress past the batch, with its counts
-- and a batch that finds no bet ends the event with fulltime_settle_finish. The parts pass the
-- batch to each other as values (an array of fulltime_settle_bet, arrays of deltas), never
-- through a table, so nothing outlives the step and concurrent steps of other markets share
-- nothing.
--
-- Exactly once: the progress row is locked first, so two workers on one market run one after the
-- other, and nothing else writes a market's settlement rows; a bet that already has a settlement
-- row of this event is skipped, so running a batch again changes nothing; and the keys of the
-- settlement rows (bet, version, reversal) and of the ledger entries (bet, version, kind, leg) are
-- unique, so a duplicate could only fail the step, never move money twice. That lock is also why the plan may be read in a
-- statement of its own, before the statement that writes it: no other transaction can change
-- what the plan read about these bets in between.
CREATE OR REPLACE FUNCTION fulltime_settle_step(
    p_market_id       bigint,
    p_batch_size      integer,
    p_lock_timeout_ms integer,
    OUT status        text,     -- 'idle' | 'gap' | 'started' | 'fenced' | 'batch' | 'finished'
    OUT seq           bigint,   -- the event this step worked on (or waits for)
    OUT kind          text,
    OUT bets          integer,  -- bets this batch looked at
    OUT effects       integer,  -- settlement rows this batch wrote
    OUT backlog_s     double precision)  -- age of the oldest unapplied event, seconds
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_progress   settlement_progress%ROWTYPE;
    v_event      result_events%ROWTYPE;
    v_outcomes   jsonb;
    v_batch      fulltime_settle_bet[];
    v_skipped    jsonb;    -- this batch's skipped bets per terminal-state code (NULL: none)
    v_last_bet   bigint;
    v_accounts   bigint[];
    v_available  bigint[];
    v_reserved   bigint[];
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
        UPDATE settlement_progress p
        SET current_seq = v_event.seq, checkpoint_bet_id = 0,
            fence_xid = pg_snapshot_xmax(pg_current_snapshot()),
            event_effects = 0, event_skipped = '{}'
        WHERE p.market_id = p_market_id;
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
    IF EXISTS (SELECT 1 FROM pg_stat_activity a
               WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
                 AND a.backend_xid IS NOT NULL
                 AND ((v_progress.fence_xid::text::numeric % 4294967296)::bigint
                      - a.backend_xid::text::bigint + 4294967296) % 4294967296
                     BETWEEN 1 AND 2147483647) THEN
        status := 'fenced';
        RETURN;
    END IF;

    -- What settles the bets: the event's own outcomes, or for a rollback_cancel the result in
    -- force (none: the restored bets stay open).
    IF v_event.kind = 'result' THEN
        v_outcomes := v_event.payload->'outcomes';
    ELSIF v_event.kind = 'rollback_cancel' AND v_progress.effective_result_id IS NOT NULL THEN
        SELECT e.payload->'outcomes' INTO v_outcomes FROM result_events e
        WHERE e.result_event_id = v_progress.effective_result_id;
    END IF;

    SELECT pl.batch, pl.skipped INTO v_batch, v_skipped
    FROM fulltime_settle_plan(p_market_id, v_progress.checkpoint_bet_id, p_batch_size,
                              v_event.result_event_id, v_event.kind, v_outcomes,
                              (v_event.payload->>'start_time')::timestamptz,
                              (v_event.payload->>'end_time')::timestamptz) pl;
    bets := coalesce(cardinality(v_batch), 0);

    IF bets = 0 THEN
        PERFORM fulltime_settle_finish(p_market_id, v_event.result_event_id, v_event.seq,
                                       v_event.kind, v_progress.event_effects,
                                       v_progress.event_skipped);
        effects := 0;
        status := 'finished';
        RETURN;
    END IF;
    -- The batch is in bet_id order: its last bet is the new checkpoint.
    v_last_bet := v_batch[bets].bet_id;

    SELECT l.effects, l.accounts, l.available, l.reserved
    INTO effects, v_accounts, v_available, v_reserved
    FROM fulltime_settle_legs(v_event.result_event_id, v_batch) l;
    -- Last: the balance rows, the locks shared with placement.
    PERFORM fulltime_settle_balances(v_event.result_event_id, v_last_bet, v_accounts,
                                     v_available, v_reserved);
    PERFORM fulltime_settle_checkpoint(p_market_id, v_last_bet, effects, v_skipped);
    status := 'batch';
END;
$$;

COMMENT ON FUNCTION fulltime_settle_step IS
    'One step of a market''s settlement in one transaction: start the next event, wait on the '
    'fence, settle one batch after the checkpoint (fulltime_settle_plan, _legs, _balances, '
    '_checkpoint), or finish the event (fulltime_settle_finish: its skipped bets and refusal '
    'code on result_events).';
