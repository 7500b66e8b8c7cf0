-- Settlement intake: stores a producer's event in result_events; the producer is acknowledged
-- after it commits. The same event_key, or the same (market_id, seq), with the same kind and
-- payload is a duplicate; with anything else it is a conflict and refused. Outcomes are
-- fulltime_codes' domain record_result_outcome.

CREATE OR REPLACE FUNCTION fulltime_record_result(
    p_market_id   bigint,
    p_seq         bigint,
    p_event_key   text,
    p_kind        text,
    p_payload     jsonb,
    p_producer    text,
    OUT outcome   text,     -- 'stored' | 'duplicate' | 'conflict' | 'unknown_market'
                            -- | 'unknown_selection'
    OUT result_event_id bigint,
    OUT detail    text)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_existing result_events%ROWTYPE;
    v_missing  bigint;
BEGIN
    PERFORM 1 FROM markets m WHERE m.market_id = p_market_id;
    IF NOT FOUND THEN
        outcome := 'unknown_market';
        RETURN;
    END IF;
    IF p_kind = 'result' THEN
        SELECT (o->>'selection_id')::bigint INTO v_missing
        FROM jsonb_array_elements(p_payload->'outcomes') o
        WHERE NOT EXISTS (SELECT 1 FROM selections s
                          WHERE s.selection_id = (o->>'selection_id')::bigint
                            AND s.market_id = p_market_id)
        LIMIT 1;
        IF v_missing IS NOT NULL THEN
            outcome := 'unknown_selection';
            detail := v_missing::text;
            RETURN;
        END IF;
    END IF;

    -- A seq inside a hole the operator closed (a gap_closed event at or before it that reaches
    -- it) holds the operator's decision that it never comes: refused like a taken seq.
    SELECT * INTO v_existing FROM result_events e
    WHERE e.market_id = p_market_id AND e.seq < p_seq
    ORDER BY e.seq DESC LIMIT 1;
    IF FOUND AND v_existing.kind = 'gap_closed'
       AND (v_existing.payload->>'through')::bigint >= p_seq THEN
        outcome := 'conflict';
        result_event_id := v_existing.result_event_id;
        detail := format('market %s seq %s is inside the gap the operator closed (seq %s to %s, '
                         'event_key %s)', p_market_id, p_seq, v_existing.seq,
                         v_existing.payload->>'through', v_existing.event_key);
        RETURN;
    END IF;

    INSERT INTO result_events (market_id, seq, event_key, kind, payload, producer)
    VALUES (p_market_id, p_seq, p_event_key, p_kind, p_payload, p_producer)
    ON CONFLICT DO NOTHING
    RETURNING result_events.result_event_id INTO fulltime_record_result.result_event_id;

    IF fulltime_record_result.result_event_id IS NULL THEN
        SELECT * INTO v_existing FROM result_events e
        WHERE e.event_key = p_event_key OR (e.market_id = p_market_id AND e.seq = p_seq)
        ORDER BY (e.event_key = p_event_key) DESC
        LIMIT 1;
        fulltime_record_result.result_event_id := v_existing.result_event_id;
        IF v_existing.market_id = p_market_id AND v_existing.seq = p_seq
           AND v_existing.event_key = p_event_key AND v_existing.kind = p_kind
           AND v_existing.payload = p_payload THEN
            outcome := 'duplicate';
        ELSE
            outcome := 'conflict';
            detail := format('event_key %s is market %s seq %s (%s)', v_existing.event_key,
                             v_existing.market_id, v_existing.seq, v_existing.kind);
        END IF;
        RETURN;
    END IF;

    -- A result or a cancel stops trading on the market at once (bets placed from now on are
    -- refused market_suspended); a producer reopens it with `resume`.
    IF p_kind IN ('result', 'cancel') THEN
        UPDATE markets SET status = 'suspended', updated_at = now()
        WHERE market_id = p_market_id AND status = 'open';
    END IF;
    INSERT INTO settlement_progress (market_id) VALUES (p_market_id) ON CONFLICT DO NOTHING;
    outcome := 'stored';
END;
$$;

COMMENT ON FUNCTION fulltime_record_result IS
    'Stores one result event (result, rollback_result, cancel, rollback_cancel) exactly once; '
    'a repeat is a duplicate, a different event under a used key or (market, seq) a conflict.';
