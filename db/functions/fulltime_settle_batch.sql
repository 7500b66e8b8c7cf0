-- Part of fulltime_settle_step and fulltime_settle_lane (fulltime_settle_step.sql explains the
-- step and its parts): one batch of an event, without its checkpoint. What settles the bets (the
-- event's own outcomes, or for a rollback_cancel the result in force, p_effective_result_id:
-- none leaves the restored bets open), then the plan of the next p_batch_size bets after
-- p_after_bet_id (of lane p_lane of p_lanes), the rows and transfers of that plan, and the
-- balance rows, in that order, in the caller's transaction. The caller advances its own
-- checkpoint (the market's, fulltime_settle_checkpoint, or the lane's) past last_bet with the
-- counts, or ends the event or the lane when the batch found no bet (bets = 0).
CREATE OR REPLACE FUNCTION fulltime_settle_batch(
    p_market_id           bigint,
    p_event_id            bigint,
    p_effective_result_id bigint,
    p_after_bet_id        bigint,
    p_batch_size          integer,
    p_lane                integer,
    p_lanes               integer,
    OUT bets              integer,  -- bets the batch looked at (0: none left)
    OUT effects           integer,  -- settlement rows it wrote
    OUT last_bet          bigint,   -- its highest bet_id: the new checkpoint
    OUT skipped           jsonb)    -- its skipped bets per code (NULL: none)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_event      result_events%ROWTYPE;
    v_outcomes   jsonb;
    v_batch      fulltime_settle_bet[];
    v_accounts   bigint[];
    v_available  bigint[];
    v_reserved   bigint[];
BEGIN
    SELECT * INTO v_event FROM result_events e WHERE e.result_event_id = p_event_id;
    IF v_event.kind = 'result' THEN
        v_outcomes := v_event.payload->'outcomes';
    ELSIF v_event.kind = 'rollback_cancel' AND p_effective_result_id IS NOT NULL THEN
        SELECT e.payload->'outcomes' INTO v_outcomes FROM result_events e
        WHERE e.result_event_id = p_effective_result_id;
    END IF;

    SELECT pl.batch, pl.skipped INTO v_batch, skipped
    FROM fulltime_settle_plan(p_market_id, p_after_bet_id, p_batch_size,
                              v_event.result_event_id, v_event.kind, v_outcomes,
                              (v_event.payload->>'start_time')::timestamptz,
                              (v_event.payload->>'end_time')::timestamptz,
                              p_lane, p_lanes) pl;
    bets := coalesce(cardinality(v_batch), 0);
    effects := 0;
    IF bets = 0 THEN
        RETURN;
    END IF;
    -- The batch is in bet_id order: its last bet is the new checkpoint.
    last_bet := v_batch[bets].bet_id;

    SELECT l.effects, l.accounts, l.available, l.reserved
    INTO effects, v_accounts, v_available, v_reserved
    FROM fulltime_settle_legs(v_event.result_event_id, v_batch) l;
    -- Last: the balance rows, the locks shared with placement.
    PERFORM fulltime_settle_balances(v_event.result_event_id, last_bet, v_accounts,
                                     v_available, v_reserved);
END;
$$;

COMMENT ON FUNCTION fulltime_settle_batch IS
    'Part of fulltime_settle_step and fulltime_settle_lane: one batch without its checkpoint '
    '(the outcomes, fulltime_settle_plan, _legs, _balances); bets = 0 when none is left.';
