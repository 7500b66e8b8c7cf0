-- Settlement in lanes (fulltime_settle_step.sql explains the step, its parts and lanes): one
-- batch of one lane of the event in progress, in one transaction (one statement, autocommit).
-- The engine calls it for each lane side by side, on as many connections, once the market's
-- step has answered 'lanes', and again for a lane until it answers 'finished'; then the
-- market's step finishes the event.
--
-- The lane's row is locked first: a lane's batches run one after another, and the lanes of an
-- event hold no bet and no account in common (account_id % lanes), so two lanes never wait for
-- each other's rows, and a batch of a lane is exactly once as a batch of a market is. The
-- progress row is only read: the event in progress cannot change under a lane that is not
-- done (the market's step finishes an event only once every lane is done, and the next start
-- rewrites the lane rows, which waits for this lock). The fence was passed by the market's step
-- (fence_xid NULL) before any lane runs.
CREATE OR REPLACE FUNCTION fulltime_settle_lane(
    p_market_id       bigint,
    p_lane            integer,
    p_batch_size      integer,
    p_lock_timeout_ms integer,
    OUT status        text,     -- 'batch' | 'finished' (the lane is done) | 'idle' (no lane
                                -- of this number in an event past its fence)
    OUT seq           bigint,   -- the event
    OUT kind          text,
    OUT bets          integer,  -- bets this batch looked at
    OUT effects       integer)  -- settlement rows this batch wrote
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    -- The lane's row, as scalars (a %ROWTYPE of it is resolved when the function is created,
    -- and the function files are applied to schemas older than 0011 too).
    v_lane_seq   bigint;
    v_checkpoint bigint;
    v_done       boolean;
    v_progress   settlement_progress%ROWTYPE;
    v_event      result_events%ROWTYPE;
    v_skipped    jsonb;
    v_last_bet   bigint;
    v_effects    integer;
BEGIN
    PERFORM set_config('lock_timeout', p_lock_timeout_ms::text || 'ms', true);
    bets := 0;
    effects := 0;

    SELECT l.seq, l.checkpoint_bet_id, l.done INTO v_lane_seq, v_checkpoint, v_done
    FROM settlement_lanes l
    WHERE l.market_id = p_market_id AND l.lane = p_lane
    FOR UPDATE;
    SELECT * INTO v_progress FROM settlement_progress p WHERE p.market_id = p_market_id;
    IF v_lane_seq IS NULL OR v_progress.current_seq IS DISTINCT FROM v_lane_seq
       OR v_progress.fence_xid IS NOT NULL THEN
        status := 'idle';
        RETURN;
    END IF;
    SELECT * INTO v_event FROM result_events e
    WHERE e.market_id = p_market_id AND e.seq = v_lane_seq;
    seq := v_event.seq;
    kind := v_event.kind;
    IF v_done THEN
        status := 'finished';
        RETURN;
    END IF;

    SELECT b.bets, b.effects, b.last_bet, b.skipped INTO bets, v_effects, v_last_bet, v_skipped
    FROM fulltime_settle_batch(p_market_id, v_event.result_event_id,
                               v_progress.effective_result_id, v_checkpoint, p_batch_size,
                               p_lane, v_progress.lanes) b;
    IF bets = 0 THEN
        UPDATE settlement_lanes l SET done = true
        WHERE l.market_id = p_market_id AND l.lane = p_lane;
        status := 'finished';
        RETURN;
    END IF;
    UPDATE settlement_lanes l
    SET checkpoint_bet_id = v_last_bet, effects = l.effects + v_effects,
        skipped = CASE WHEN v_skipped IS NULL THEN l.skipped
                       ELSE fulltime_skipped_add(l.skipped, v_skipped) END
    WHERE l.market_id = p_market_id AND l.lane = p_lane;
    effects := v_effects;
    status := 'batch';
END;
$$;

COMMENT ON FUNCTION fulltime_settle_lane IS
    'One batch of one lane of an event settled in lanes (fulltime_settle_step answered '
    '''lanes''): fulltime_settle_batch for the lane''s accounts after its checkpoint, then the '
    'lane''s checkpoint and counts; ''finished'' once the lane is done.';
