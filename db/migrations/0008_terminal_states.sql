-- Money integrity, part B: reservation deadlines, the operator's void of overdue open bets, and
-- fixed codes for the terminal states of a bet.
--
-- Terminal states. A settlement event can meet a bet whose state makes the event meaningless
-- for it: a result for a bet whose cancel is in force, a second cancel, a rollback with nothing
-- in force, an operator's void of a bet that is no longer open. Since 0005 such a bet is
-- skipped (no row, no money) but silently. From here every skip is counted per code, in the same
-- statement that settles the batch (no per-bet query), carried across the event's batches in
-- settlement_progress with the checkpoint, and written on the event's result_events row when
-- the event finishes:
--   per bet (result_events.skipped, counts per code)
--     bet_cancelled        a result or rollback_result for a bet whose cancel is in force
--     already_cancelled    a cancel for a bet whose cancel is in force
--     nothing_to_rollback  a rollback_result for a bet with no effect in force, or a
--                          rollback_cancel for a bet with no cancel in force
--     already_void         a void_open for a bet whose cancel is in force
--     already_settled      a void_open for a bet whose settlement is in force
--   per event (result_events.refusal), when the event wrote no settlement row at all
--     nothing_to_rollback  a rollback_result or rollback_cancel (nothing of its kind in force)
--     nothing_to_void      a void_open (no open bet left when it applied)
--     bet_cancelled, already_cancelled
--                          a result or cancel whose every bet was skipped (the code that
--                          skipped the most bets)
-- A refused event is still applied (applied_seq moves past it): refusing it at intake could
-- leave a hole in the market's seq, and a hole blocks every later event of the market.
--
-- Reservation deadlines. A reservation (an open bet: no effect in force) belongs to its market;
-- its deadline is the market's settle_deadline_at plus a grace period, or, for a market
-- created without one, created_at plus a default, so every reservation has a deadline
-- (fulltime_reservation_deadline; both periods come from the engine's config,
-- reservations.grace_s and reservations.default_deadline_s). The sweeper
-- (actors/reservation_sweeper.cpp) reports markets past their deadline that still hold open
-- bets as overdue_reservation incidents, one per market (subject market:<id>); it never moves
-- money. Releasing them is the operator's decision: `fulltime void-overdue` stores a void_open
-- event (fulltime_void_overdue), which the market's settlement applies like any other event.

-- The sweeper reports one incident per market, not per bet: a market's open bets share their
-- owner and deadline, and one market can hold a million of them. (0006's comments say
-- bet:<id>; 0006 is applied and checksummed, so the column's comment is corrected here.)
COMMENT ON COLUMN incidents.subject IS
    'What the incident is about, stable across runs: account:<id>:<side>, currency:<code>, '
    'transfer:<id>, market:<id> (overdue_reservation: the market whose open bets are past their '
    'deadline).';
COMMENT ON COLUMN incidents.actual IS
    'balance_drift: the balance row (NULL: no such account); currency_imbalance: the '
    'currency''s sum; currency_mismatch: the transfer''s amount; overdue_reservation: the '
    'reserved stake of the market''s open bets (NULL when they are in several currencies: '
    'details.reserved has each).';

-- void_open: the operator's void of the market's open bets (settled or cancelled bets keep
-- their state). Never sent by a producer: only fulltime_void_overdue stores it.
ALTER TABLE result_events DROP CONSTRAINT result_events_kind_check;
ALTER TABLE result_events ADD CONSTRAINT result_events_kind_check
    CHECK (kind IN ('result', 'rollback_result', 'cancel', 'rollback_cancel', 'void_open'));

ALTER TABLE result_events
    ADD COLUMN applied_at timestamptz,
    ADD COLUMN skipped    jsonb,
    ADD COLUMN refusal    text CHECK (refusal IN ('bet_cancelled', 'already_cancelled',
                                                  'nothing_to_rollback', 'already_void',
                                                  'already_settled', 'nothing_to_void'));
COMMENT ON COLUMN result_events.applied_at IS
    'When the market''s settlement finished applying the event (NULL: not yet).';
COMMENT ON COLUMN result_events.skipped IS
    'Bets the event skipped because of their terminal state, counted per code '
    '({"bet_cancelled": 3}); {} when none. Set with applied_at.';
COMMENT ON COLUMN result_events.refusal IS
    'Set when the event wrote no settlement row because of the bets'' states: '
    'nothing_to_rollback, nothing_to_void, or the per-bet code that skipped the most bets.';
-- Events a producer or an operator asks about: the refused ones, newest first.
CREATE INDEX result_events_refused_idx ON result_events (applied_at)
    WHERE refusal IS NOT NULL;

-- The running counts of the event in progress, advanced with the checkpoint in each batch's
-- transaction, so a batch that rolls back counts nothing and one that commits counts once.
ALTER TABLE settlement_progress
    ADD COLUMN event_effects bigint NOT NULL DEFAULT 0 CHECK (event_effects >= 0),
    ADD COLUMN event_skipped jsonb  NOT NULL DEFAULT '{}';
COMMENT ON COLUMN settlement_progress.event_effects IS
    'Settlement rows the current event has written so far.';
COMMENT ON COLUMN settlement_progress.event_skipped IS
    'Bets the current event has skipped so far, per terminal-state code.';

CREATE FUNCTION fulltime_reservation_deadline(
    p_market_id          bigint,
    p_grace_s            bigint,
    p_default_deadline_s bigint)
RETURNS timestamptz
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(m.settle_deadline_at + make_interval(secs => p_grace_s),
                    m.created_at + make_interval(secs => p_default_deadline_s))
    FROM markets m WHERE m.market_id = p_market_id;
$$;
COMMENT ON FUNCTION fulltime_reservation_deadline IS
    'The deadline of the market''s reservations: settle_deadline_at + grace, or created_at + '
    'the default when the feed gave none (reservations.grace_s, .default_deadline_s).';

-- One chunk of a market's bets, in bet_id order after p_after_bet_id: how many are open (no
-- effect in force), their stakes per currency, the oldest placed_at. Read-only, no row locks;
-- each probe is an index lookup on bet_settlements' key. The sweeper and fulltime_void_overdue
-- walk a market chunk by chunk, so no statement's time grows with the market.
CREATE FUNCTION fulltime_open_bets_chunk(
    p_market_id       bigint,
    p_after_bet_id    bigint,
    p_limit           integer,
    OUT last_bet_id   bigint,   -- NULL: no bet after p_after_bet_id
    OUT scanned       integer,
    OUT open_bets     integer,
    OUT reserved      jsonb,    -- {"EUR": minor units} over the open bets
    OUT oldest_placed_at timestamptz)
LANGUAGE sql STABLE
AS $$
    WITH c AS MATERIALIZED (
        SELECT b.bet_id, b.currency, b.stake, b.placed_at
        FROM bets b
        WHERE b.market_id = p_market_id AND b.bet_id > p_after_bet_id
        ORDER BY b.bet_id
        LIMIT p_limit
    ),
    o AS MATERIALIZED (
        SELECT c.* FROM c
        WHERE NOT EXISTS (
            SELECT 1 FROM bet_settlements e
            WHERE e.bet_id = c.bet_id AND NOT e.reversal
              AND NOT EXISTS (SELECT 1 FROM bet_settlements r
                              WHERE r.bet_id = e.bet_id AND r.version = e.version
                                AND r.reversal))
    )
    SELECT (SELECT max(bet_id) FROM c), (SELECT count(*)::integer FROM c),
           (SELECT count(*)::integer FROM o),
           (SELECT coalesce(jsonb_object_agg(currency, s), '{}'::jsonb)
            FROM (SELECT currency, sum(stake) AS s FROM o GROUP BY currency) x),
           (SELECT min(placed_at) FROM o);
$$;
COMMENT ON FUNCTION fulltime_open_bets_chunk IS
    'Open bets (no settlement effect in force) among a market''s next p_limit bets after '
    'p_after_bet_id: count, stakes per currency, oldest placed_at. Read-only.';

-- Records what one sweep found for one market: opens the market's overdue_reservation
-- incident, updates it (last_seen, runs, counts), or resolves it when the market holds no open
-- bet or is no longer past its deadline. One short statement-level transaction; it touches
-- only the incidents table.
CREATE FUNCTION fulltime_note_overdue(
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

-- The operator's void of a market's open bets (`fulltime void-overdue`, POST
-- /v1/markets/{id}/void-overdue): stores a void_open event that the market's settlement applies
-- like any other event (bounded batches, exactly once, bet_settled pushes). The event takes the
-- market's next free seq: events apply in seq order, so everything stored before it is applied
-- first and it voids only what is still open then. A producer event sent later with that seq
-- is refused `conflict`: the seq now holds the operator's decision, and the producer, whose
-- numbering no longer matches the market's history, must resend under the next seq (accepting
-- it would mean either dropping the void or reordering history). The event_key makes it
-- exactly once: the same key again on the same market is a duplicate, whatever else changed.
CREATE FUNCTION fulltime_void_overdue(
    p_market_id          bigint,
    p_event_key          text,
    p_operator           text,
    p_force              boolean,
    p_grace_s            bigint,
    p_default_deadline_s bigint,
    OUT outcome          text,   -- 'stored' | 'duplicate' | 'conflict' | 'unknown_market'
                                 -- | 'not_overdue' | 'nothing_to_void'
    OUT result_event_id  bigint,
    OUT seq              integer,
    OUT deadline         timestamptz,
    OUT detail           text)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_existing result_events%ROWTYPE;
    v_attempt  integer;
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
          WHERE e.bet_id = b.bet_id AND NOT e.reversal
            AND NOT EXISTS (SELECT 1 FROM bet_settlements r
                            WHERE r.bet_id = e.bet_id AND r.version = e.version AND r.reversal))
    LIMIT 1;
    IF NOT FOUND THEN
        outcome := 'nothing_to_void';
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

-- fulltime_settle_step as in 0005, and besides: the void_open kind (open bets get a cancel,
-- the others are skipped), each skipped bet counted under its code in the batch's own statement
-- (plan0.skip_code, aggregated in the final SELECT: no extra query per bet or per batch), the
-- counts carried in settlement_progress with the checkpoint, and written on the event's row
-- when it finishes.
CREATE OR REPLACE FUNCTION fulltime_settle_step(
    p_market_id       bigint,
    p_batch_size      integer,
    p_lock_timeout_ms integer,
    OUT status        text,     -- 'idle' | 'gap' | 'started' | 'fenced' | 'batch' | 'finished'
    OUT seq           integer,  -- the event this step worked on (or waits for)
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
    v_from       timestamptz;
    v_to         timestamptz;
    v_last_bet   bigint;
    v_accounts   bigint[];
    v_available  bigint[];
    v_reserved   bigint[];
    v_pushed     integer;
    v_new_available bigint;
    v_owed       bigint;
    v_currency   text;
    v_move       bigint;
    v_skipped    jsonb;    -- this batch's skipped bets per terminal-state code (NULL: none)
    v_refusal    text;
    i            integer;
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
    v_from := (v_event.payload->>'start_time')::timestamptz;
    v_to := (v_event.payload->>'end_time')::timestamptz;

    -- The CTEs are MATERIALIZED: each is computed once per batch (inlined, the plan repeated
    -- the per-bet lookups in every CASE that reads them), and every lookup below is a per-bet
    -- index probe, so a batch costs the same at the end of a large market as at its start.
    WITH b AS MATERIALIZED (
        SELECT bt.bet_id, bt.account_id, bt.selection_id, bt.currency, bt.stake, bt.odds,
               bt.placed_at
        FROM bets bt
        WHERE bt.market_id = p_market_id AND bt.bet_id > v_progress.checkpoint_bet_id
        ORDER BY bt.bet_id
        LIMIT p_batch_size
    ),
    -- Each bet's latest effect (settle or cancel), whether it is still in force, and whether
    -- this event already handled the bet (a batch run twice).
    st AS MATERIALIZED (
        SELECT b.*, cur.version AS cur_version, cur.kind AS cur_kind, cur.payout AS cur_payout,
               coalesce(cur.in_force, false) AS in_force,
               (done.bet_id IS NOT NULL) AS handled,
               (v_event.kind IN ('result', 'rollback_result')
                OR ((v_from IS NULL OR b.placed_at >= v_from)
                    AND (v_to IS NULL OR b.placed_at < v_to))) AS in_scope
        FROM b
        LEFT JOIN LATERAL (
            SELECT e.version, e.kind, e.payout,
                   NOT EXISTS (SELECT 1 FROM bet_settlements r
                               WHERE r.bet_id = e.bet_id AND r.version = e.version
                                 AND r.reversal) AS in_force
            FROM bet_settlements e
            WHERE e.bet_id = b.bet_id AND NOT e.reversal
            ORDER BY e.version DESC
            LIMIT 1) cur ON true
        -- A LATERAL probe with LIMIT, not EXISTS: EXISTS was planned as a hashed subplan over
        -- every settlement row of the event so far, which grew with each batch.
        LEFT JOIN LATERAL (
            SELECT x.bet_id FROM bet_settlements x
            WHERE x.result_event_id = v_event.result_event_id AND x.bet_id = b.bet_id
            LIMIT 1) done ON true
    ),
    -- The plan per bet: reverse the effect in force (or not), then a new effect (or none).
    plan0 AS MATERIALIZED (
        SELECT st.*,
               CASE
                   WHEN st.handled OR NOT st.in_scope THEN false
                   WHEN v_event.kind = 'result' THEN st.in_force AND st.cur_kind = 'settle'
                   WHEN v_event.kind = 'rollback_result' THEN st.in_force AND st.cur_kind = 'settle'
                   WHEN v_event.kind = 'cancel' THEN st.in_force AND st.cur_kind = 'settle'
                   WHEN v_event.kind = 'rollback_cancel' THEN st.in_force AND st.cur_kind = 'cancel'
                   WHEN v_event.kind = 'void_open' THEN false
               END AS rev,
               CASE
                   WHEN st.handled OR NOT st.in_scope THEN NULL
                   WHEN v_event.kind = 'result'
                        AND NOT (st.in_force AND st.cur_kind = 'cancel') THEN 'settle'
                   WHEN v_event.kind = 'cancel'
                        AND NOT (st.in_force AND st.cur_kind = 'cancel') THEN 'cancel'
                   WHEN v_event.kind = 'rollback_cancel' AND st.in_force
                        AND st.cur_kind = 'cancel' AND v_outcomes IS NOT NULL THEN 'settle'
                   -- The operator's void (0008): open bets only.
                   WHEN v_event.kind = 'void_open' AND NOT st.in_force THEN 'cancel'
               END AS new_kind,
               -- Why the event does nothing to this bet, when that is its terminal state
               -- (0008's codes). Bets outside a cancel's window are not skipped: the event is
               -- not about them.
               CASE
                   WHEN st.handled OR NOT st.in_scope THEN NULL
                   WHEN v_event.kind IN ('result', 'rollback_result') AND st.in_force
                        AND st.cur_kind = 'cancel' THEN 'bet_cancelled'
                   WHEN v_event.kind = 'rollback_result' AND NOT st.in_force
                        THEN 'nothing_to_rollback'
                   WHEN v_event.kind = 'cancel' AND st.in_force AND st.cur_kind = 'cancel'
                        THEN 'already_cancelled'
                   WHEN v_event.kind = 'rollback_cancel'
                        AND NOT (st.in_force AND st.cur_kind = 'cancel')
                        THEN 'nothing_to_rollback'
                   WHEN v_event.kind = 'void_open' AND st.in_force AND st.cur_kind = 'cancel'
                        THEN 'already_void'
                   WHEN v_event.kind = 'void_open' AND st.in_force THEN 'already_settled'
               END AS skip_code
        FROM st
    ),
    plan AS MATERIALIZED (
        SELECT p.*,
               coalesce(p.cur_version, 0) + 1 AS new_version,
               CASE WHEN p.new_kind = 'cancel' THEN 'void'
                    WHEN p.new_kind = 'settle' THEN
                        CASE WHEN o.vu = 10000 THEN 'void'
                             WHEN o.win AND o.du < 10000 THEN 'dead_heat'
                             WHEN o.win AND o.vu > 0 THEN 'half_won'
                             WHEN o.win THEN 'won'
                             WHEN o.vu > 0 THEN 'half_lost'
                             ELSE 'lost' END
               END AS new_outcome,
               CASE WHEN p.new_kind = 'cancel' THEN p.stake
                    WHEN p.new_kind = 'settle' THEN
                        floor((p.stake::numeric * o.vu * 100000000
                               + CASE WHEN o.win
                                      THEN p.stake::numeric * (10000 - o.vu) * o.du * p.odds
                                      ELSE 0 END) / 1000000000000)::bigint
               END AS new_payout
        FROM plan0 p
        LEFT JOIN LATERAL (
            SELECT coalesce((x->>'win')::boolean, false) AS win,
                   coalesce((x->>'void_factor')::bigint, 0) AS vu,
                   coalesce((x->>'dead_heat_factor')::bigint, 10000) AS du
            FROM jsonb_array_elements(coalesce(v_outcomes, '[]'::jsonb)) x
            WHERE (x->>'selection_id')::bigint = p.selection_id
            UNION ALL
            SELECT false, 0::bigint, 10000::bigint   -- not named: loses
            LIMIT 1) o ON true
    ),
    planned AS (
        SELECT p.bet_id, p.cur_version AS version,
               CASE p.cur_kind WHEN 'settle' THEN 'reverse' ELSE 'uncancel' END AS kind,
               NULL::text AS outcome, NULL::bigint AS payout, 1 AS step
        FROM plan p WHERE p.rev
        UNION ALL
        SELECT p.bet_id, p.new_version, p.new_kind, p.new_outcome, p.new_payout, 2
        FROM plan p WHERE p.new_kind IS NOT NULL
    ),
    ins_settlements AS (
        INSERT INTO bet_settlements (bet_id, version, kind, outcome, payout, result_event_id)
        SELECT r.bet_id, r.version, r.kind, r.outcome, r.payout, v_event.result_event_id
        FROM planned r
        ORDER BY r.bet_id, r.step
        ON CONFLICT DO NOTHING
        RETURNING bet_id, version, kind, outcome, payout
    ),
    legs AS (
        -- key suffix, debit side, credit side, amount (account sides name the bet's account)
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.cur_version || ':reverse:stake' AS entry_key,
               'house' AS debit_side, 'reserved' AS credit_side, p.stake AS amount
        FROM plan p WHERE p.rev AND p.cur_kind = 'settle'
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.cur_version || ':reverse:payout',
               'available', 'house', p.cur_payout
        FROM plan p WHERE p.rev AND p.cur_kind = 'settle' AND p.cur_payout > 0
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.cur_version || ':uncancel:refund',
               'available', 'reserved', p.stake
        FROM plan p WHERE p.rev AND p.cur_kind = 'cancel'
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.new_version || ':settle:stake',
               'reserved', 'house', p.stake
        FROM plan p WHERE p.new_kind = 'settle'
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.new_version || ':settle:payout',
               'house', 'available', p.new_payout
        FROM plan p WHERE p.new_kind = 'settle' AND p.new_payout > 0
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.new_version || ':cancel:refund',
               'reserved', 'available', p.stake
        FROM plan p WHERE p.new_kind = 'cancel'
    ),
    ins_ledger AS (
        INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id,
                                      credit_side, credit_account_id, amount, bet_id,
                                      result_event_id)
        SELECT l.entry_key, l.currency,
               l.debit_side, CASE WHEN l.debit_side IN ('available', 'reserved')
                                  THEN l.account_id END,
               l.credit_side, CASE WHEN l.credit_side IN ('available', 'reserved')
                                   THEN l.account_id END,
               l.amount, l.bet_id, v_event.result_event_id
        FROM legs l
        ORDER BY l.entry_key
        ON CONFLICT DO NOTHING
        RETURNING debit_side, debit_account_id, credit_side, credit_account_id, amount
    ),
    ins_outbox AS (
        INSERT INTO outbox (topic, account_id, payload)
        SELECT CASE WHEN s.kind IN ('settle', 'cancel') THEN 'bet_settled'
                    ELSE 'bet_unsettled' END,
               p.account_id,
               jsonb_build_object('bet_id', s.bet_id, 'version', s.version, 'kind', s.kind,
                                  'outcome', s.outcome, 'payout', s.payout,
                                  'currency', p.currency, 'market_id', p_market_id,
                                  'result_event_id', v_event.result_event_id)
        FROM ins_settlements s JOIN plan p ON p.bet_id = s.bet_id
        -- A reversal followed by a new effect is announced once, by the new effect.
        WHERE s.kind IN ('settle', 'cancel') OR p.new_kind IS NULL
        RETURNING 1
    ),
    deltas AS (
        SELECT acc, sum(d_available)::bigint AS d_available, sum(d_reserved)::bigint AS d_reserved
        FROM (
            SELECT credit_account_id AS acc,
                   CASE WHEN credit_side = 'available' THEN amount ELSE 0 END AS d_available,
                   CASE WHEN credit_side = 'reserved' THEN amount ELSE 0 END AS d_reserved
            FROM ins_ledger WHERE credit_account_id IS NOT NULL
            UNION ALL
            SELECT debit_account_id,
                   CASE WHEN debit_side = 'available' THEN -amount ELSE 0 END,
                   CASE WHEN debit_side = 'reserved' THEN -amount ELSE 0 END
            FROM ins_ledger WHERE debit_account_id IS NOT NULL
        ) x
        GROUP BY acc
    )
    SELECT (SELECT count(*) FROM b), (SELECT max(bet_id) FROM b),
           (SELECT count(*) FROM ins_settlements), (SELECT count(*) FROM ins_outbox),
           (SELECT array_agg(acc ORDER BY acc) FROM deltas),
           (SELECT array_agg(d_available ORDER BY acc) FROM deltas),
           (SELECT array_agg(d_reserved ORDER BY acc) FROM deltas),
           (SELECT jsonb_object_agg(k.skip_code, k.n)
            FROM (SELECT p.skip_code, count(*) AS n FROM plan0 p
                  WHERE p.skip_code IS NOT NULL GROUP BY p.skip_code) k)
    INTO bets, v_last_bet, effects, v_pushed, v_accounts, v_available, v_reserved, v_skipped;

    IF bets = 0 THEN
        -- The event is applied: its outcome goes on its row (0008), and the next one may start.
        -- An event that wrote no settlement row is refused as a whole when the bets' states
        -- are why: a rollback had nothing of its kind in force, a void found no open bet, a
        -- result or cancel skipped every bet (the code that skipped the most). A result or
        -- cancel of a market without bets is not a refusal: there was nothing to do.
        IF v_progress.event_effects = 0 THEN
            v_refusal := CASE
                WHEN v_event.kind IN ('rollback_result', 'rollback_cancel')
                    THEN 'nothing_to_rollback'
                WHEN v_event.kind = 'void_open' THEN 'nothing_to_void'
                ELSE (SELECT k.key FROM jsonb_each_text(v_progress.event_skipped) k
                      ORDER BY k.value::bigint DESC, k.key LIMIT 1)
            END;
        END IF;
        UPDATE result_events e
        SET applied_at = now(), skipped = v_progress.event_skipped, refusal = v_refusal
        WHERE e.result_event_id = v_event.result_event_id;
        UPDATE settlement_progress p
        SET applied_seq = v_event.seq, current_seq = NULL, checkpoint_bet_id = 0,
            fence_xid = NULL, event_effects = 0, event_skipped = '{}',
            version = p.version + CASE WHEN v_event.kind = 'result' THEN 1 ELSE 0 END,
            effective_result_id = CASE v_event.kind
                                      WHEN 'result' THEN v_event.result_event_id
                                      WHEN 'rollback_result' THEN NULL
                                      ELSE p.effective_result_id END
        WHERE p.market_id = p_market_id;
        status := 'finished';
        RETURN;
    END IF;

    -- Last: the balance rows, in ascending account_id, one update per account. The usual case
    -- is one conditional update; an account whose available cannot cover its debit (a reversed
    -- payout already spent) gets the shortfall advanced as debt, and an account in debt repays
    -- it from this batch's credits.
    IF v_accounts IS NOT NULL THEN
        FOR i IN 1 .. array_length(v_accounts, 1) LOOP
            UPDATE accounts a
            SET available = a.available + v_available[i], reserved = a.reserved + v_reserved[i]
            WHERE a.account_id = v_accounts[i] AND a.available + v_available[i] >= 0
            RETURNING a.available, a.owed, a.currency INTO v_new_available, v_owed, v_currency;
            IF NOT FOUND THEN
                -- Rare: lock the row to read what it holds, then advance the shortfall.
                SELECT a.available, a.owed, a.currency INTO v_new_available, v_owed, v_currency
                FROM accounts a WHERE a.account_id = v_accounts[i] FOR NO KEY UPDATE;
                v_move := -(v_new_available + v_available[i]);
                INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id,
                                              credit_side, credit_account_id, amount,
                                              result_event_id)
                VALUES ('advance:' || v_event.result_event_id || ':' || v_accounts[i] || ':' ||
                        v_last_bet, v_currency, 'owed', v_accounts[i], 'available',
                        v_accounts[i], v_move, v_event.result_event_id);
                UPDATE accounts a
                SET available = 0, reserved = a.reserved + v_reserved[i], owed = a.owed + v_move
                WHERE a.account_id = v_accounts[i];
            ELSIF v_owed > 0 AND v_available[i] > 0 AND v_new_available > 0 THEN
                -- Only this batch's credit repays: other money on the account stays the
                -- bettor's to use (the operator collects the rest of a debt).
                v_move := least(v_owed, v_available[i], v_new_available);
                INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id,
                                              credit_side, credit_account_id, amount,
                                              result_event_id)
                VALUES ('repay:' || v_event.result_event_id || ':' || v_accounts[i] || ':' ||
                        v_last_bet, v_currency, 'available', v_accounts[i], 'owed',
                        v_accounts[i], v_move, v_event.result_event_id);
                UPDATE accounts a SET available = a.available - v_move, owed = a.owed - v_move
                WHERE a.account_id = v_accounts[i];
            END IF;
        END LOOP;
    END IF;

    UPDATE settlement_progress p
    SET checkpoint_bet_id = v_last_bet, event_effects = p.event_effects + effects,
        event_skipped = CASE WHEN v_skipped IS NULL THEN p.event_skipped
                             ELSE (SELECT jsonb_object_agg(x.key, x.n)
                                   FROM (SELECT c.key, sum(c.value::bigint) AS n
                                         FROM (SELECT * FROM jsonb_each_text(p.event_skipped)
                                               UNION ALL
                                               SELECT * FROM jsonb_each_text(v_skipped)) c
                                         GROUP BY c.key) x) END
    WHERE p.market_id = p_market_id;
    status := 'batch';
END;
$$;

COMMENT ON FUNCTION fulltime_settle_step IS
    'One step of a market''s settlement in one transaction: start the next event, wait on the '
    'fence, settle one batch after the checkpoint, or finish the event (recording its skipped '
    'bets and refusal code on result_events, 0008).';
