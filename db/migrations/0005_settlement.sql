-- Settlement: the result-event intake and the per-market settlement step.
--
-- Intake (fulltime_record_result) stores a producer's event in result_events and is
-- acknowledged after it commits. The same event_key, or the same (market_id, seq), with the same
-- kind and payload is a duplicate; with anything else it is a conflict and refused.
--
-- Application (fulltime_settle_step) is called by the market's actor again and again; each call
-- is one short transaction that does one of: start the market's next event (strictly seq order;
-- a gap waits), wait for the placements that read the market open to finish (the fence), settle
-- one batch of at most p_batch_size bets after the checkpoint, or finish the event. The batch
-- writes settlement rows, keyed ledger transfers and outbox rows in one statement, then updates
-- the balance rows in ascending account_id order, aggregated per account (the only row locks
-- shared with placement, taken last), and advances the checkpoint in the same transaction.
--
-- Exactly once: the progress row is locked first, so two workers on one market run one after the
-- other; a bet that already has a settlement row of this event is skipped, and ledger entry keys
-- (bet, version, kind, leg) are unique, so running a batch again changes nothing.
--
-- Payouts, in integer minor units (stake S, odds O, void factor v and dead-heat factor d, each
-- in 1/10000 units): payout = floor(S*v + [win] * S*(1-v)*d*O). The fraction of a minor unit
-- below the exact payout stays with the house. Outcome names: void (v = 1), dead_heat (win,
-- d < 1), half_won (win, 0 < v < 1), won, half_lost (lose, 0 < v < 1), lost. A selection that a
-- result does not name loses.
--
-- Ledger legs (entry_key bet:<bet>:v<version>:<kind>:<leg>):
--   settle   stake  reserved -> house      S        payout  house -> available   P (if P > 0)
--   reverse  stake  house -> reserved      S        payout  available -> house   P (if P > 0)
--   cancel   refund reserved -> available  S
--   uncancel refund available -> reserved  S

-- A correction or rollback takes back a payout the bettor may already have staked or withdrawn.
-- The reversal must still happen (the market cannot stall on one account), and no balance may go
-- negative: the part of a batch's debit that available cannot cover is advanced by the house and
-- recorded as the bettor's debt, on a side of its own ('owed': the house's claim on the bettor),
--   advance:<event>:<account>:<last bet of the batch>  owed -> available  shortfall
-- and later credits of a settlement batch (winnings, refunds) repay it first,
--   repay:<event>:<account>:<last bet of the batch>    available -> owed  min(owed, available)
-- accounts.owed = debits - credits of the account's 'owed' side, never negative.
ALTER TABLE accounts ADD COLUMN owed bigint NOT NULL DEFAULT 0 CHECK (owed >= 0);
COMMENT ON COLUMN accounts.owed IS
    'Minor units the bettor owes the house: reversed winnings that available could not cover '
    '= debits - credits of side ''owed''. Repaid first from later settlement credits.';
ALTER TABLE ledger_transfers DROP CONSTRAINT ledger_transfers_debit_side_check;
ALTER TABLE ledger_transfers DROP CONSTRAINT ledger_transfers_credit_side_check;
ALTER TABLE ledger_transfers DROP CONSTRAINT ledger_debit_account_matches_side;
ALTER TABLE ledger_transfers DROP CONSTRAINT ledger_credit_account_matches_side;
ALTER TABLE ledger_transfers ADD CONSTRAINT ledger_transfers_debit_side_check
    CHECK (debit_side IN ('available', 'reserved', 'owed', 'house', 'cash'));
ALTER TABLE ledger_transfers ADD CONSTRAINT ledger_transfers_credit_side_check
    CHECK (credit_side IN ('available', 'reserved', 'owed', 'house', 'cash'));
ALTER TABLE ledger_transfers ADD CONSTRAINT ledger_debit_account_matches_side
    CHECK ((debit_side IN ('available', 'reserved', 'owed')) = (debit_account_id IS NOT NULL));
ALTER TABLE ledger_transfers ADD CONSTRAINT ledger_credit_account_matches_side
    CHECK ((credit_side IN ('available', 'reserved', 'owed')) = (credit_account_id IS NOT NULL));

-- Placements that read the market as open before an event's intake committed must finish
-- before the event is applied, or a late commit could land behind the checkpoint. Set when an
-- event starts: the first transaction id not yet assigned then.
ALTER TABLE settlement_progress ADD COLUMN fence_xid xid8;
-- The result in force for the market (NULL before any, and after rollback_result): what a
-- rollback_cancel settles the restored bets with.
ALTER TABLE settlement_progress ADD COLUMN effective_result_id bigint;
COMMENT ON COLUMN settlement_progress.fence_xid IS
    'pg_snapshot_xmax when the current event started; its batches wait until every transaction '
    'of this database with an older id has finished (pg_stat_activity.backend_xid), so no '
    'placement that read the market open can commit behind the checkpoint.';
COMMENT ON COLUMN settlement_progress.effective_result_id IS
    'The result event in force, re-applied to bets a rollback_cancel restores.';

-- A bet's settlement rows by event, for a batch's "already handled by this event" probe. (Reading
-- them through the primary key instead, to save the index's WAL, made the engine's run of
-- scripts/bench-settlement three times slower: 24.5 s instead of 8.5 s.)
CREATE INDEX bet_settlements_event_idx ON bet_settlements (result_event_id, bet_id);

CREATE FUNCTION fulltime_record_result(
    p_market_id   bigint,
    p_seq         integer,
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

CREATE FUNCTION fulltime_settle_step(
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
            fence_xid = pg_snapshot_xmax(pg_current_snapshot())
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
               END AS rev,
               CASE
                   WHEN st.handled OR NOT st.in_scope THEN NULL
                   WHEN v_event.kind = 'result'
                        AND NOT (st.in_force AND st.cur_kind = 'cancel') THEN 'settle'
                   WHEN v_event.kind = 'cancel'
                        AND NOT (st.in_force AND st.cur_kind = 'cancel') THEN 'cancel'
                   WHEN v_event.kind = 'rollback_cancel' AND st.in_force
                        AND st.cur_kind = 'cancel' AND v_outcomes IS NOT NULL THEN 'settle'
               END AS new_kind
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
           (SELECT array_agg(d_reserved ORDER BY acc) FROM deltas)
    INTO bets, v_last_bet, effects, v_pushed, v_accounts, v_available, v_reserved;

    IF bets = 0 THEN
        -- The event is applied: the next one may start.
        UPDATE settlement_progress p
        SET applied_seq = v_event.seq, current_seq = NULL, checkpoint_bet_id = 0,
            fence_xid = NULL,
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

    UPDATE settlement_progress p SET checkpoint_bet_id = v_last_bet
    WHERE p.market_id = p_market_id;
    status := 'batch';
END;
$$;

COMMENT ON FUNCTION fulltime_settle_step IS
    'One step of a market''s settlement in one transaction: start the next event, wait on the '
    'fence, settle one batch after the checkpoint, or finish the event.';
