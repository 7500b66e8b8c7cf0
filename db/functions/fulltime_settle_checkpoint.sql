-- Part of fulltime_settle_step (fulltime_settle_step.sql explains the step and its parts): the
-- end of a batch. Advances the market's checkpoint past the batch and adds the batch's counts to
-- the event's running counts, in the batch's transaction: a batch that rolls back moves and
-- counts nothing, one that commits counts once.
CREATE OR REPLACE FUNCTION fulltime_settle_checkpoint(
    p_market_id bigint,
    p_last_bet  bigint,   -- the batch's highest bet_id
    p_effects   integer,  -- settlement rows the batch wrote
    p_skipped   jsonb)    -- the batch's skipped bets per code (NULL: none)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE settlement_progress p
    SET checkpoint_bet_id = p_last_bet, event_effects = p.event_effects + p_effects,
        event_skipped = CASE WHEN p_skipped IS NULL THEN p.event_skipped
                             ELSE fulltime_skipped_add(p.event_skipped, p_skipped) END
    WHERE p.market_id = p_market_id;
END;
$$;

COMMENT ON FUNCTION fulltime_settle_checkpoint IS
    'Part of fulltime_settle_step: advances the checkpoint past a batch and adds its effects and '
    'skips to the event''s running counts.';
