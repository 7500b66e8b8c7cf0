-- Part of fulltime_settle_step (fulltime_settle_step.sql explains the step and its parts): the
-- end of an event, once a batch found no bet after the checkpoint. The event's outcome goes on
-- its row and the market's progress moves past it, so the next event may start.
--
-- An event that wrote no settlement row is refused as a whole when the bets' states are why
-- (fulltime_codes domain event_refusal):
--   nothing_to_rollback  a rollback_result or rollback_cancel (nothing of its kind in force)
--   nothing_to_void      a void_open (no open bet left when it applied)
--   bet_cancelled, already_cancelled
--                        a result or cancel whose every bet was skipped (the code that skipped
--                        the most bets)
-- A result or cancel of a market without bets is not a refusal: there was nothing to do. A
-- refused event is still applied (applied_seq moves past it): refusing it at intake could leave
-- a hole in the market's seq, and a hole blocks every later event of the market.
CREATE OR REPLACE FUNCTION fulltime_settle_finish(
    p_market_id     bigint,
    p_event_id      bigint,
    p_seq           bigint,
    p_kind          text,
    p_event_effects bigint,   -- settlement_progress.event_effects: rows the event wrote ...
    p_event_skipped jsonb)    -- ... and the bets it skipped, per code
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_refusal text;
BEGIN
    IF p_event_effects = 0 THEN
        v_refusal := CASE
            WHEN p_kind IN ('rollback_result', 'rollback_cancel') THEN 'nothing_to_rollback'
            WHEN p_kind = 'void_open' THEN 'nothing_to_void'
            ELSE (SELECT k.key FROM jsonb_each_text(p_event_skipped) k
                  ORDER BY k.value::bigint DESC, k.key LIMIT 1)
        END;
    END IF;
    UPDATE result_events e
    SET applied_at = now(), skipped = p_event_skipped, refusal = v_refusal
    WHERE e.result_event_id = p_event_id;
    UPDATE settlement_progress p
    SET applied_seq = p_seq, current_seq = NULL, checkpoint_bet_id = 0,
        fence_xid = NULL, event_effects = 0, event_skipped = '{}', lanes = 1,
        version = p.version + CASE WHEN p_kind = 'result' THEN 1 ELSE 0 END,
        effective_result_id = CASE p_kind
                                  WHEN 'result' THEN p_event_id
                                  WHEN 'rollback_result' THEN NULL
                                  ELSE p.effective_result_id END
    WHERE p.market_id = p_market_id;
END;
$$;

COMMENT ON FUNCTION fulltime_settle_finish IS
    'Part of fulltime_settle_step: records the finished event''s skipped bets and refusal code '
    'on its result_events row and moves the market''s progress past it.';
