-- The operator's close of a hole in a market's feed (POST /v1/markets/{id}/close-gap): events
-- apply strictly in seq order, so a seq that the producer never sends holds back every later
-- event of the market (settle_status 'gap'). The operator decides that seqs p_from to
-- p_through will never come: one result event of kind gap_closed is stored at p_from, with
-- payload {"through": p_through}, and the market's settlement applies it by moving its
-- progress to p_through (fulltime_settle_step). It touches no bet and no money. A producer event
-- later sent with a seq in the range is refused `conflict` (fulltime_record_result).
--
-- The range must be a hole: none of its seqs stored or already closed, none applied, and a
-- stored event after it (one that waits for it); otherwise 'not_a_gap', naming why. The
-- event_key makes it exactly once. Outcomes are fulltime_codes' domain close_gap_outcome.

CREATE OR REPLACE FUNCTION fulltime_close_gap(
    p_market_id   bigint,
    p_from        bigint,
    p_through     bigint,
    p_event_key   text,
    p_operator    text,
    OUT outcome   text,     -- 'stored' | 'duplicate' | 'conflict' | 'unknown_market'
                            -- | 'not_a_gap'
    OUT result_event_id bigint,
    OUT detail    text)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_existing result_events%ROWTYPE;
    v_applied  bigint;
BEGIN
    PERFORM 1 FROM markets m WHERE m.market_id = p_market_id;
    IF NOT FOUND THEN
        outcome := 'unknown_market';
        RETURN;
    END IF;

    SELECT * INTO v_existing FROM result_events e WHERE e.event_key = p_event_key;
    IF FOUND THEN
        result_event_id := v_existing.result_event_id;
        IF v_existing.market_id = p_market_id AND v_existing.kind = 'gap_closed'
           AND v_existing.seq = p_from
           AND (v_existing.payload->>'through')::bigint = p_through THEN
            outcome := 'duplicate';
        ELSE
            outcome := 'conflict';
            detail := format('event_key %s is market %s seq %s (%s)', v_existing.event_key,
                             v_existing.market_id, v_existing.seq, v_existing.kind);
        END IF;
        RETURN;
    END IF;

    IF p_from < 1 OR p_through < p_from THEN
        outcome := 'not_a_gap';
        detail := format('seq %s to %s is not a range of seqs', p_from, p_through);
        RETURN;
    END IF;
    -- The progress row is locked: the market's settlement does not move while this decides.
    INSERT INTO settlement_progress (market_id) VALUES (p_market_id) ON CONFLICT DO NOTHING;
    SELECT p.applied_seq INTO v_applied FROM settlement_progress p
    WHERE p.market_id = p_market_id FOR UPDATE;
    IF p_from <= v_applied THEN
        outcome := 'not_a_gap';
        detail := format('seq %s of market %s is applied already', v_applied, p_market_id);
        RETURN;
    END IF;
    SELECT * INTO v_existing FROM result_events e
    WHERE e.market_id = p_market_id AND e.seq <= p_through
    ORDER BY e.seq DESC LIMIT 1;
    IF FOUND AND (v_existing.seq >= p_from
                  OR (v_existing.kind = 'gap_closed'
                      AND (v_existing.payload->>'through')::bigint >= p_from)) THEN
        outcome := 'not_a_gap';
        detail := format('market %s seq %s is stored (%s, event_key %s)', p_market_id,
                         v_existing.seq, v_existing.kind, v_existing.event_key);
        RETURN;
    END IF;
    PERFORM 1 FROM result_events e WHERE e.market_id = p_market_id AND e.seq > p_through;
    IF NOT FOUND THEN
        outcome := 'not_a_gap';
        detail := format('no event of market %s comes after seq %s: nothing waits for it',
                         p_market_id, p_through);
        RETURN;
    END IF;

    INSERT INTO result_events (market_id, seq, event_key, kind, payload, producer)
    VALUES (p_market_id, p_from, p_event_key, 'gap_closed',
            jsonb_build_object('through', p_through, 'operator', p_operator), 'operator')
    ON CONFLICT DO NOTHING
    RETURNING result_events.result_event_id INTO fulltime_close_gap.result_event_id;
    IF fulltime_close_gap.result_event_id IS NULL THEN
        -- A producer stored that seq (or the key) at the same moment.
        outcome := 'conflict';
        detail := format('market %s seq %s or event_key %s was stored meanwhile', p_market_id,
                         p_from, p_event_key);
        RETURN;
    END IF;
    outcome := 'stored';
END;
$$;

COMMENT ON FUNCTION fulltime_close_gap IS
    'Stores the operator''s gap_closed event for a hole in a market''s seq (p_from to '
    'p_through); its settlement moves past the hole. A repeated event_key is a duplicate.';
