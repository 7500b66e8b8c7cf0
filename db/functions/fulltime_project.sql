-- The projector's page: applies the next outbox rows after p_consumer's cursor to the read model
-- (bet_views, market_views; docs/schema.md, "Read model") and moves the cursor past them. One
-- call is one statement, so one transaction: the page's changes, the cursor and the horizon in
-- projections commit together, and a page that fails leaves nothing behind.
--
-- The cursor row is locked first, FOR UPDATE SKIP LOCKED: every writer of the read model (this
-- function, fulltime_project_rebuild) holds it, so they take turns, and each reads the read model
-- after the previous one committed. SKIP LOCKED rather than a wait: a second projector, or one
-- that comes while a rebuild runs (minutes on a large history), returns at once with rows = 0
-- and caught_up = false (busy: try later) instead of holding a connection in a lock queue. A
-- consumer with no cursor is an error: a cursor made here at the tail would skip what the read
-- model never got (fulltime_project_rebuild makes one with a complete projection).
--
-- The page: at most p_rows_max rows after the cursor in (xact_id, outbox_id) order, of
-- transactions below the xmin of a snapshot taken after the lock (all finished, so nothing can
-- appear behind the cursor; docs/schema.md, "Outbox"). Read by outbox_pkey's range, in order.
--
-- Application is idempotent, so a page read twice (a cursor set back, a page applied after a
-- rebuild or the migration already showed it) changes nothing:
--   * bet_placed inserts the bet's row if the bet has none. The bet's fields come from the
--     payload; a row written before the payload carried placed_at and currency (or a settlement
--     read before its bet's placement: xids are taken at a transaction's first write, not at its
--     commit) reads the bet from bets by (account_id, bet_id), one probe per partition.
--   * A settlement entry (settlement_batch's list; bet_settled and bet_unsettled rows written
--     before migration 0004) applies only when its (version, reversal) is greater than the
--     bet's (applied_version, applied_reversal). A bet's changes only ever grow in that order,
--     so of a page's entries for one bet the greatest is the last, and applying it alone is
--     applying them one after the other: an effect sets version, outcome and payout, a reversal
--     (announced only when it leaves the bet open) clears them.
--   * market_views changes by the difference between the page's bets before the page (their
--     bet_views rows; a bet the page inserts counts as nothing before) and after it, summed per
--     market and currency: one update (an insert for a market new to the read model) per market
--     the page touched, none when nothing changed.
--
-- Set-based: one statement of data-modifying CTEs for a page of any size (page, entries, the
-- rows before, the rows after, the inserts, the updates, the market deltas), then the cursor and
-- the horizon. Every read is by key: the outbox by its key's range, bet_views by its primary
-- key per bet of the page, bets only for the rows above; a new bet is a plain INSERT (the
-- writers take turns, so no other can insert it meanwhile, and ON CONFLICT would log a
-- confirmation record per row). The statements are planned with their values and without
-- sequential scans, like fulltime_purge_outbox, so that statistics of a small or fresh
-- bet_views cannot turn a page into a scan of the table; JIT is off (the disabled scans' costs
-- would trigger it).
--
-- consumed_below (the horizon stored in projections and returned): every outbox row of a
-- transaction with xid < consumed_below is applied. After a page that was not full it is the
-- snapshot's xmin; after a full page, the last row's xact_id (that transaction's other rows may
-- be on the next page). It never goes back (a cursor set back re-applies rows already applied).
-- caught_up: the page was not full, the next call would find only rows written meanwhile.
CREATE OR REPLACE FUNCTION fulltime_project(
    p_consumer        text,
    p_rows_max        integer,
    OUT rows          integer,  -- outbox rows applied (read) by this page
    OUT caught_up     boolean,  -- fewer than p_rows_max: nothing more below the snapshot's xmin
    OUT consumed_below xid8)    -- the projector's horizon after this page
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_after_xact xid8;
    v_after_id   bigint;
    v_xmin       xid8;
    v_rows       integer;
    v_last_xact  xid8;
    v_last_id    bigint;
    v_below      xid8;
BEGIN
    IF p_rows_max IS NULL OR p_rows_max < 1 THEN
        RAISE EXCEPTION 'fulltime_project: p_rows_max must be at least 1'
            USING ERRCODE = '22023';
    END IF;

    -- Nothing to read: answer without locking. The lock below writes (a row lock takes a
    -- transaction id and logs a record), and an idle projector polls every
    -- read.projector_interval_ms; each such page's own transaction id would also move the next
    -- page's xmin, so the horizon's update would write again at every poll. A reader's own write
    -- always left an outbox row, and the page that applies it moves the horizon past it, so an
    -- idle horizon that stays put hides nothing from anyone.
    SELECT c.last_xact_id, c.last_outbox_id INTO v_after_xact, v_after_id
    FROM outbox_cursors c
    WHERE c.consumer = p_consumer;
    IF FOUND AND NOT EXISTS (
        SELECT 1 FROM outbox o
        WHERE (o.xact_id, o.outbox_id) > (v_after_xact, v_after_id)
          AND o.xact_id < pg_snapshot_xmin(pg_current_snapshot())) THEN
        rows := 0;
        caught_up := true;
        SELECT p.consumed_below INTO consumed_below FROM projections p WHERE p.name = p_consumer;
        RETURN;
    END IF;

    SELECT c.last_xact_id, c.last_outbox_id INTO v_after_xact, v_after_id
    FROM outbox_cursors c
    WHERE c.consumer = p_consumer
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM outbox_cursors c WHERE c.consumer = p_consumer) THEN
            RAISE EXCEPTION 'fulltime_project: consumer % has no outbox cursor', p_consumer
                USING ERRCODE = 'P0002',
                      HINT = 'fulltime_project_rebuild makes one with a complete projection';
        END IF;
        -- Busy: another projector or a rebuild holds the cursor.
        rows := 0;
        caught_up := false;
        SELECT p.consumed_below INTO consumed_below FROM projections p WHERE p.name = p_consumer;
        RETURN;
    END IF;

    -- A snapshot taken after the lock: the transactions below its xmin have all finished.
    SELECT pg_snapshot_xmin(pg_current_snapshot()) INTO v_xmin;

    WITH page AS MATERIALIZED (
        SELECT o.xact_id, o.outbox_id, o.topic, o.account_id, o.payload
        FROM outbox o
        WHERE (o.xact_id, o.outbox_id) > (v_after_xact, v_after_id)
          AND o.xact_id < v_xmin
        ORDER BY o.xact_id, o.outbox_id
        LIMIT p_rows_max
    ),
    placed AS MATERIALIZED (
        SELECT p.account_id, (p.payload->>'bet_id')::bigint AS bet_id,
               (p.payload->>'market_id')::bigint AS market_id,
               (p.payload->>'selection_id')::bigint AS selection_id,
               (p.payload->>'currency')::currency_code AS currency,
               (p.payload->>'stake')::bigint AS stake,
               (p.payload->>'odds')::bigint AS odds,
               (p.payload->>'placed_at')::timestamptz AS placed_at
        FROM page p
        WHERE p.topic = 'bet_placed'
    ),
    entries AS (
        SELECT (e.value->>'account_id')::bigint AS account_id,
               (e.value->>'bet_id')::bigint AS bet_id,
               (e.value->>'version')::integer AS version,
               (e.value->>'kind') IN ('reverse', 'uncancel') AS reversal,
               e.value->>'outcome' AS outcome,
               (e.value->>'payout')::bigint AS payout
        FROM page p
        CROSS JOIN LATERAL jsonb_array_elements(p.payload->'settlements') e
        WHERE p.topic = 'settlement_batch'
        UNION ALL
        SELECT p.account_id, (p.payload->>'bet_id')::bigint, (p.payload->>'version')::integer,
               (p.payload->>'kind') IN ('reverse', 'uncancel'), p.payload->>'outcome',
               (p.payload->>'payout')::bigint
        FROM page p
        WHERE p.topic IN ('bet_settled', 'bet_unsettled')
    ),
    last_change AS MATERIALIZED (
        -- Per bet, its greatest change in the page (see the head: the last one).
        SELECT DISTINCT ON (e.account_id, e.bet_id)
               e.account_id, e.bet_id, e.version, e.reversal, e.outcome, e.payout
        FROM entries e
        ORDER BY e.account_id, e.bet_id, e.version DESC, e.reversal DESC
    ),
    touched AS MATERIALIZED (
        SELECT t.account_id, t.bet_id FROM placed t
        UNION
        SELECT t.account_id, t.bet_id FROM last_change t
    ),
    known AS MATERIALIZED (
        -- The page's bets as the read model has them: one probe of bet_views' primary key each
        -- (LIMIT 1 keeps the subquery a probe: joined, a small bet_views was read whole), and
        -- the row's ctid for the update below. tid NULL: the bet is new to the read model.
        SELECT t.account_id, t.bet_id, v.tid, v.market_id, v.selection_id, v.currency, v.stake,
               v.odds, v.placed_at, v.version, v.outcome, v.payout, v.applied_version,
               v.applied_reversal
        FROM touched t
        LEFT JOIN LATERAL (
            SELECT v.ctid AS tid, v.market_id, v.selection_id, v.currency, v.stake, v.odds,
                   v.placed_at, v.version, v.outcome, v.payout, v.applied_version,
                   v.applied_reversal
            FROM bet_views v
            WHERE v.account_id = t.account_id AND v.bet_id = t.bet_id
            LIMIT 1
        ) v ON true
    ),
    start AS (
        -- Each bet's fields and its state before the page. A bet new to the read model starts
        -- open, its fields from its placement's payload, else from bets.
        SELECT k.account_id, k.bet_id, k.tid,
               coalesce(k.market_id, p.market_id, x.market_id) AS market_id,
               coalesce(k.selection_id, p.selection_id, x.selection_id) AS selection_id,
               coalesce(k.currency, p.currency, x.currency) AS currency,
               coalesce(k.stake, p.stake, x.stake) AS stake,
               coalesce(k.odds, p.odds, x.odds) AS odds,
               coalesce(k.placed_at, p.placed_at, x.placed_at) AS placed_at,
               k.version, k.outcome, k.payout,
               coalesce(k.applied_version, 0) AS applied_version,
               coalesce(k.applied_reversal, false) AS applied_reversal
        FROM known k
        LEFT JOIN placed p ON p.account_id = k.account_id AND p.bet_id = k.bet_id
        LEFT JOIN LATERAL (
            SELECT b.market_id, b.selection_id, b.currency, b.stake, b.odds, b.placed_at
            FROM bets b
            WHERE k.tid IS NULL AND (p.placed_at IS NULL OR p.currency IS NULL)
              AND b.account_id = k.account_id AND b.bet_id = k.bet_id
            LIMIT 1
        ) x ON true
    ),
    after AS MATERIALIZED (
        SELECT s.account_id, s.bet_id, s.tid, s.market_id, s.selection_id, s.currency, s.stake,
               s.odds, s.placed_at, a.applies,
               CASE WHEN NOT a.applies THEN s.version
                    WHEN NOT c.reversal THEN c.version END AS version,
               CASE WHEN NOT a.applies THEN s.outcome
                    WHEN NOT c.reversal THEN c.outcome END AS outcome,
               CASE WHEN NOT a.applies THEN s.payout
                    WHEN NOT c.reversal THEN c.payout END AS payout,
               CASE WHEN a.applies THEN c.version ELSE s.applied_version END AS applied_version,
               CASE WHEN a.applies THEN c.reversal ELSE s.applied_reversal END
                   AS applied_reversal
        FROM start s
        LEFT JOIN last_change c ON c.account_id = s.account_id AND c.bet_id = s.bet_id
        CROSS JOIN LATERAL (
            SELECT coalesce((c.version, c.reversal) > (s.applied_version, s.applied_reversal),
                            false) AS applies
        ) a
        -- A bet neither the page nor bets knows (its period left the write tables) is not
        -- shown; nothing else can leave market_id NULL.
        WHERE s.market_id IS NOT NULL
    ),
    inserted AS (
        INSERT INTO bet_views (account_id, bet_id, market_id, selection_id, currency, stake, odds,
                               placed_at, version, outcome, payout, applied_version,
                               applied_reversal)
        SELECT a.account_id, a.bet_id, a.market_id, a.selection_id, a.currency, a.stake, a.odds,
               a.placed_at, a.version, a.outcome, a.payout, a.applied_version,
               a.applied_reversal
        FROM after a
        WHERE a.tid IS NULL
        ORDER BY a.account_id, a.bet_id
    ),
    updated AS (
        -- By the ctid read above (a TID scan per row, no second index probe). The statement's
        -- snapshot read it, and the writers take turns, so it is the row's current version.
        UPDATE bet_views v
        SET version = a.version, outcome = a.outcome, payout = a.payout,
            applied_version = a.applied_version, applied_reversal = a.applied_reversal
        FROM after a
        WHERE a.tid IS NOT NULL AND a.applies AND v.ctid = a.tid
    ),
    deltas AS MATERIALIZED (
        -- Per market and currency, what the page changed: the rows after it less the rows
        -- before it, and the market's market_views row (a probe, as above; NULL: a new one).
        SELECT d.market_id, d.currency, m.tid, d.bets, d.stake, d.open_bets, d.open_stake,
               d.settled_bets, d.payout
        FROM (
            SELECT x.market_id, x.currency, sum(x.bets)::bigint AS bets,
                   sum(x.stake)::bigint AS stake, sum(x.open_bets)::bigint AS open_bets,
                   sum(x.open_stake)::bigint AS open_stake,
                   sum(x.settled_bets)::bigint AS settled_bets, sum(x.payout)::bigint AS payout
            FROM (
                SELECT k.market_id, k.currency, -1 AS bets, -k.stake AS stake,
                       -(k.version IS NULL)::integer AS open_bets,
                       CASE WHEN k.version IS NULL THEN -k.stake ELSE 0 END AS open_stake,
                       -(k.version IS NOT NULL)::integer AS settled_bets,
                       -coalesce(k.payout, 0) AS payout
                FROM known k
                WHERE k.tid IS NOT NULL
                UNION ALL
                SELECT a.market_id, a.currency, 1, a.stake, (a.version IS NULL)::integer,
                       CASE WHEN a.version IS NULL THEN a.stake ELSE 0 END,
                       (a.version IS NOT NULL)::integer, coalesce(a.payout, 0)
                FROM after a
            ) x
            GROUP BY x.market_id, x.currency
            HAVING sum(x.bets) <> 0 OR sum(x.open_bets) <> 0 OR sum(x.settled_bets) <> 0
                OR sum(x.payout) <> 0 OR sum(x.stake) <> 0 OR sum(x.open_stake) <> 0
        ) d
        LEFT JOIN LATERAL (
            SELECT m.ctid AS tid
            FROM market_views m
            WHERE m.market_id = d.market_id AND m.currency = d.currency
            LIMIT 1
        ) m ON true
    ),
    summed AS (
        -- An update by the deltas, and an insert for a market and currency new to the read
        -- model, rather than INSERT ... ON CONFLICT DO UPDATE: that checks the row it would
        -- insert, the deltas, against market_views' CHECKs (>= 0) before it finds the conflict.
        UPDATE market_views m
        SET bets = m.bets + d.bets, stake = m.stake + d.stake,
            open_bets = m.open_bets + d.open_bets, open_stake = m.open_stake + d.open_stake,
            settled_bets = m.settled_bets + d.settled_bets, payout = m.payout + d.payout,
            updated_at = now()
        FROM deltas d
        WHERE d.tid IS NOT NULL AND m.ctid = d.tid
    ),
    added AS (
        INSERT INTO market_views (market_id, currency, bets, stake, open_bets, open_stake,
                                  settled_bets, payout)
        SELECT d.market_id, d.currency, d.bets, d.stake, d.open_bets, d.open_stake,
               d.settled_bets, d.payout
        FROM deltas d
        WHERE d.tid IS NULL
        ORDER BY d.market_id, d.currency
    )
    SELECT (SELECT count(*) FROM page)::integer,
           (SELECT p.xact_id FROM page p ORDER BY p.xact_id DESC, p.outbox_id DESC LIMIT 1),
           (SELECT p.outbox_id FROM page p ORDER BY p.xact_id DESC, p.outbox_id DESC LIMIT 1)
    INTO v_rows, v_last_xact, v_last_id;

    IF v_rows > 0 THEN
        UPDATE outbox_cursors
        SET last_xact_id = v_last_xact, last_outbox_id = v_last_id, updated_at = now()
        WHERE consumer = p_consumer;
    END IF;

    rows := v_rows;
    caught_up := v_rows < p_rows_max;
    v_below := CASE WHEN caught_up THEN v_xmin ELSE v_last_xact END;
    -- Written only when it changes: an idle projector's polls leave the row alone.
    UPDATE projections p
    SET consumed_below = greatest(p.consumed_below, v_below),
        rows_applied = p.rows_applied + v_rows, updated_at = now()
    WHERE p.name = p_consumer AND (v_rows > 0 OR p.consumed_below < v_below)
    RETURNING p.consumed_below INTO consumed_below;
    IF NOT FOUND THEN
        INSERT INTO projections (name, consumed_below, rows_applied)
        VALUES (p_consumer, v_below, v_rows)
        ON CONFLICT (name) DO NOTHING;
        SELECT p.consumed_below INTO consumed_below FROM projections p WHERE p.name = p_consumer;
    END IF;
END;
$$;

COMMENT ON FUNCTION fulltime_project IS
    'The projector''s page: applies at most p_rows_max outbox rows after p_consumer''s cursor to '
    'bet_views and market_views (idempotently: a change applies only past the bet''s last applied '
    'one), moves the cursor and the horizon in projections; one transaction. Returns the rows '
    'read, whether it caught up, and consumed_below (every row of a transaction below it is '
    'applied). rows = 0 and not caught_up: another writer holds the cursor, try later.';
