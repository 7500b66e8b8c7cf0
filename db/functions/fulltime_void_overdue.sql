-- The operator's void of a market's open bets (`fulltime void-overdue`, POST
-- /v1/markets/{id}/void-overdue): stores a void_open event that the market's settlement applies
-- like any other event (bounded batches, exactly once, bet_settled pushes). The event takes the
-- market's next free seq: events apply in seq order, so everything stored before it is applied
-- first and it voids only what is still open then. A producer event sent later with that seq
-- is refused `conflict`: the seq now holds the operator's decision, and the producer, whose
-- numbering no longer matches the market's history, must resend under the next seq (accepting
-- it would mean either dropping the void or reordering history). The event_key makes it
-- exactly once: the same key again on the same market is a duplicate, whatever else changed.
-- Outcomes are fulltime_codes' domain void_overdue_outcome. Reservation deadlines:
-- fulltime_reservation_deadline.sql.

CREATE OR REPLACE FUNCTION fulltime_void_overdue(
    p_market_id          bigint,
    p_event_key          text,
    p_operator           text,
    p_force              boolean,
    p_grace_s            bigint,
    p_default_deadline_s bigint,
    OUT outcome          text,   -- 'stored' | 'duplicate' | 'conflict' | 'unknown_market'
                                 -- | 'not_overdue' | 'nothing_to_void' | 'feed_gap'
    OUT result_event_id  bigint,
    OUT seq              bigint,
    OUT deadline         timestamptz,
    OUT detail           text)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_existing result_events%ROWTYPE;
    v_attempt  integer;
    v_gap_from    bigint;
    v_gap_through bigint;
BEGIN
    PERFORM 1 FROM markets m WHERE m.market_id = p_market_id;
    IF NOT FOUND THEN
        outcome := 'unknown_market';
        RETURN;
    END IF;
    deadline := fulltime_reservation_deadline(p_market_id, p_grace_s, p_default_deadline_s);

    -- A repeat is answered first: once the void applied there is nothing open, and the answer
    -- to the same command must still be "done before", not nothing_to_void.
    SELECT * INTO v_existing FROM result_events e WHERE e.event_key = p_event_key;
    IF FOUND THEN
        result_event_id := v_existing.result_event_id;
        seq := v_existing.seq;
        IF v_existing.market_id = p_market_id AND v_existing.kind = 'void_open' THEN
            outcome := 'duplicate';
        ELSE
            outcome := 'conflict';
            detail := format('event_key %s is market %s seq %s (%s)', v_existing.event_key,
                             v_existing.market_id, v_existing.seq, v_existing.kind);
        END IF;
        RETURN;
    END IF;

    IF NOT p_force AND deadline > now() THEN
        outcome := 'not_overdue';
        detail := format('the market''s reservations are due by %s', deadline);
        RETURN;
    END IF;
    -- Any open bet is enough; an index walk that stops at the first one.
    PERFORM 1 FROM bets b
    WHERE b.market_id = p_market_id
      AND NOT EXISTS (
          SELECT 1 FROM bet_settlements e
          WHERE e.bet_id = b.bet_id AND e.placed_at = b.placed_at AND NOT e.reversal
            AND NOT EXISTS (SELECT 1 FROM bet_settlements r
                            WHERE r.bet_id = e.bet_id AND r.placed_at = e.placed_at
                              AND r.version = e.version AND r.reversal))
    LIMIT 1;
    IF NOT FOUND THEN
        outcome := 'nothing_to_void';
        RETURN;
    END IF;

    -- A hole in the market's seq before its newest event would hold the void back for good:
    -- refused, naming the hole, for the operator to close it first (fulltime_close_gap).
    SELECT g.from_seq, g.through_seq INTO v_gap_from, v_gap_through
    FROM fulltime_first_gap(p_market_id) g;
    IF v_gap_from IS NOT NULL THEN
        outcome := 'feed_gap';
        detail := format('seq %s to %s of market %s never arrived, and the events after them '
                         'wait for them', v_gap_from, v_gap_through, p_market_id);
        RETURN;
    END IF;
    IF (SELECT max(e.seq) FROM result_events e WHERE e.market_id = p_market_id)
       = 9223372036854775807 THEN
        outcome := 'conflict';
        detail := format('market %s has no seq left after its newest event', p_market_id);
        RETURN;
    END IF;

    -- The next free seq. A producer storing the same seq at the same moment wins or loses the
    -- unique key; the loser here tries the seq after it (a few times, then reports conflict).
    FOR v_attempt IN 1 .. 5 LOOP
        SELECT coalesce(max(e.seq), 0) + 1 INTO seq FROM result_events e
        WHERE e.market_id = p_market_id;
        INSERT INTO result_events (market_id, seq, event_key, kind, payload, producer)
        VALUES (p_market_id, seq, p_event_key, 'void_open',
                jsonb_build_object('reason', 'overdue', 'operator', p_operator,
                                   'forced', p_force, 'deadline', deadline),
                'operator')
        ON CONFLICT DO NOTHING
        RETURNING result_events.result_event_id INTO fulltime_void_overdue.result_event_id;
        IF fulltime_void_overdue.result_event_id IS NOT NULL THEN
            -- Like a cancel, the void stops trading: a bet placed after it would be open again
            -- at once. A producer reopens the market with `resume`.
            UPDATE markets SET status = 'suspended', updated_at = now()
            WHERE market_id = p_market_id AND status = 'open';
            INSERT INTO settlement_progress (market_id) VALUES (p_market_id)
            ON CONFLICT DO NOTHING;
            outcome := 'stored';
            RETURN;
        END IF;
        -- The same key stored concurrently is a duplicate after all.
        SELECT * INTO v_existing FROM result_events e WHERE e.event_key = p_event_key;
        IF FOUND THEN
            result_event_id := v_existing.result_event_id;
            seq := v_existing.seq;
            outcome := CASE WHEN v_existing.market_id = p_market_id
                                 AND v_existing.kind = 'void_open'
                            THEN 'duplicate' ELSE 'conflict' END;
            RETURN;
        END IF;
    END LOOP;
    outcome := 'conflict';
    detail := format('market %s''s next seq kept being taken', p_market_id);
END;
$$;
COMMENT ON FUNCTION fulltime_void_overdue IS
    'Stores the operator''s void_open event for a market past its reservation deadline (or '
    'forced), under the market''s next free seq; a repeated event_key is a duplicate.';
