-- Records what one sweep found for one market: opens the market's overdue_reservation
-- incident, updates it (last_seen, runs, counts), or resolves it when the market holds no open
-- bet or is no longer past its deadline. One short statement-level transaction; it touches
-- only the incidents table. Outcomes are fulltime_codes' domain note_overdue_outcome.

CREATE OR REPLACE FUNCTION fulltime_note_overdue(
    p_market_id  bigint,
    p_deadline   timestamptz,
    p_open_bets  bigint,
    p_reserved   jsonb,          -- {"EUR": minor units}
    p_oldest     timestamptz,
    OUT outcome  text,           -- 'opened' | 'updated' | 'resolved' | 'none'
    OUT incident_id bigint)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_subject    text := 'market:' || p_market_id;
    v_currencies integer;
    v_currency   text;
    v_amount     bigint;
    v_inserted   boolean;
BEGIN
    IF p_open_bets <= 0 OR p_deadline >= now() THEN
        UPDATE incidents i
        SET resolved_at = now(), last_seen = now(),
            resolution = CASE WHEN p_deadline >= now()
                              THEN 'the market''s deadline moved to ' || p_deadline
                              ELSE 'no open bet left on the market' END
        WHERE i.kind = 'overdue_reservation' AND i.subject = v_subject
          AND i.resolved_at IS NULL
        RETURNING i.incident_id INTO fulltime_note_overdue.incident_id;
        outcome := CASE WHEN FOUND THEN 'resolved' ELSE 'none' END;
        RETURN;
    END IF;
    -- One currency (the usual case): the incident's currency and amount. Several: currency
    -- and actual stay NULL (a sum over currencies means nothing); details has each.
    SELECT count(*) INTO v_currencies FROM jsonb_object_keys(p_reserved);
    IF v_currencies = 1 THEN
        SELECT key, value::bigint INTO v_currency, v_amount FROM jsonb_each_text(p_reserved);
    END IF;
    INSERT INTO incidents AS i (kind, subject, market_id, currency, expected, actual, details)
    VALUES ('overdue_reservation', v_subject, p_market_id, v_currency,
            extract(epoch FROM p_deadline)::bigint, v_amount,
            jsonb_build_object('open_bets', p_open_bets, 'reserved', p_reserved,
                               'oldest_placed_at', p_oldest, 'deadline', p_deadline))
    ON CONFLICT (kind, subject) WHERE resolved_at IS NULL DO UPDATE
    SET last_seen = now(), runs = i.runs + 1, currency = excluded.currency,
        expected = excluded.expected, actual = excluded.actual, details = excluded.details
    RETURNING i.incident_id, (i.xmax = 0)
    INTO fulltime_note_overdue.incident_id, v_inserted;
    outcome := CASE WHEN v_inserted THEN 'opened' ELSE 'updated' END;
END;
$$;
COMMENT ON FUNCTION fulltime_note_overdue IS
    'Opens, updates or resolves the market''s overdue_reservation incident from one sweep''s '
    'counts. Never moves money.';
