-- The projector's page: applies the next outbox rows after p_consumer's cursor to the read model
-- (bet_view_bets, bet_view_results and bet_view_open, which the view bet_views joins, and
-- market_views; docs/schema.md, "Read model") and moves the cursor past them. One
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
-- appear behind the cursor; docs/schema.md, "Outbox"), and of those at most p_rows_max bets
-- (a settlement batch's row carries one per bet of its batch, any other row one), though
-- always its first row. Read by outbox_pkey's range, in order.
--
-- Application is idempotent, so a page read twice (a cursor set back, a page applied after a
-- rebuild or the migration already showed it) changes nothing:
--   * bet_placed inserts the bet's bet_view_bets row (and its bet_view_open row, while it is
--     open) if the bet has none. The bet's fields come from the
--     payload; a row written before the payload carried placed_at and currency (or a settlement
--     read before its bet's placement: xids are taken at a transaction's first write, not at its
--     commit) reads the bet from bets by (account_id, bet_id), one probe per partition.
--   * A settlement entry (element i of each of a settlement_batch row's arrays; bet_settled and
--     bet_unsettled rows written before migration 0004) applies only when its (version,
--     reversal) is greater than the bet's (applied_version, applied_reversal). A bet's changes
--     only ever grow in that order, so of a page's entries for one bet the greatest is the last,
--     and applying it alone is applying them one after the other: an effect sets version,
--     outcome and payout, a reversal (announced only when it leaves the bet open) clears them. The bet's first change inserts
--     its bet_view_results row, a later one updates it; a bet that settles leaves bet_view_open
--     (a delete) and one a reversal opens again comes back.
--   * market_views changes by the difference between the page's bets before the page (their
--     bet_views rows; a bet the page inserts counts as nothing before) and after it, summed per
--     market and currency: one update (an insert for a market new to the read model) per market
--     the page touched, none when nothing changed.
--
-- Set-based: one statement of data-modifying CTEs for a page of any size (page, entries, the
-- rows before, the rows after, the inserts, the updates, the market deltas), then the cursor and
-- the horizon. Every read is by key: the outbox by its key's range, bet_view_bets and
-- bet_view_results by their keys per bet of the page, bets only for the rows above; new rows
-- are plain INSERTs (the writers take turns, so no other can insert them meanwhile, and ON
-- CONFLICT would log a confirmation record per row). The statements are planned without
-- sequential scans, so that statistics of a small or fresh read model cannot turn a page into a
-- scan of a table (every read is a key's range or a LATERAL probe with LIMIT 1, whatever the
-- plan), and once per session, not at every call, like fulltime_place_group: planning the page's
-- statement anew cost about 3.8 ms a call, against a page of a few placements' rows, and an idle
-- projector polls every read.projector_interval_ms
-- (docs/decisions/0008-plans-independent-of-statistics.md).
-- JIT is off (the disabled scans' costs would trigger it).
--
-- What a settled bet costs (0009_read_model_split.sql): a bet_view_results row appended in
-- bet_id order, its key's entry at the right edge, and the delete of its bet_view_open row;
-- no row of bet_view_bets changes. About 260 bytes of WAL and 10 us of the database per bet,
-- against 430 and 17 when a settlement updated each bet's one row
-- (docs/decisions/0017-read-model-in-three-tables.md).
--
-- consumed_below (the horizon stored in projections and returned): every outbox row of a
-- transaction with xid < consumed_below is applied. After a page that was not full it is the
-- snapshot's xmin; after a full page (of rows or of bets), the last row's xact_id (that
-- transaction's other rows may be on the next page). It never goes back (a cursor set back
-- re-applies rows already applied).
-- caught_up: the page was not full, the next call would find only rows written meanwhile.
CREATE OR REPLACE FUNCTION fulltime_project(
    p_consumer        text,
    p_rows_max        integer,
    OUT rows          integer,  -- outbox rows applied (read) by this page
    OUT caught_up     boolean,  -- not full: nothing more below the snapshot's xmin
    OUT consumed_below xid8)    -- the projector's horizon after this page
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_after_xact xid8;
    v_after_id   bigint;
    v_xmin       xid8;
    v_rows       integer;
    v_read       integer;
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
    -- idle horizon that stays put hides nothing from anyone. Except when that page was full:
    -- its horizon is its last row's transaction (more of it may follow), so the horizon is
    -- still at the cursor, and the reader who wrote that transaction would wait for it until
    -- someone else wrote. Then the page below runs once, finds nothing and moves the horizon
    -- past the cursor; the polls after it answer here again.
    SELECT c.last_xact_id, c.last_outbox_id INTO v_after_xact, v_after_id
    FROM outbox_cursors c
    WHERE c.consumer = p_consumer;
    IF FOUND AND NOT EXISTS (
        SELECT 1 FROM outbox o
        WHERE (o.xact_id, o.outbox_id) > (v_after_xact, v_after_id)
          AND o.xact_id < pg_snapshot_xmin(pg_current_snapshot())) THEN
        SELECT p.consumed_below INTO v_below FROM projections p WHERE p.name = p_consumer;
        IF v_below > v_after_xact THEN
            rows := 0;
            caught_up := true;
            consumed_below := v_below;
            RETURN;
        END IF;
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

    WITH ahead AS MATERIALIZED (
        -- The next p_rows_max rows, each with the bets it carries and those of the rows before
        -- it (a settlement batch's row carries one per bet of the batch; any other row one).
        SELECT o.xact_id, o.outbox_id, o.topic, o.account_id, o.payload, n.bets,
               sum(n.bets) OVER (ORDER BY o.xact_id, o.outbox_id) AS bets_through
        FROM outbox o
        CROSS JOIN LATERAL (
            SELECT CASE WHEN o.topic = 'settlement_batch'
                        THEN coalesce(jsonb_array_length(o.payload->'bet_id'), 1) ELSE 1 END
                       AS bets
        ) n
        WHERE (o.xact_id, o.outbox_id) > (v_after_xact, v_after_id)
          AND o.xact_id < v_xmin
        ORDER BY o.xact_id, o.outbox_id
        LIMIT p_rows_max
    ),
    page AS MATERIALIZED (
        -- Of those, the first row and the rows after it up to p_rows_max bets in all: a page's
        -- work follows its bets, not its rows (5,000 rows of settlement batches were 2,500,000
        -- bets in one transaction, the WAL of which placements then queued behind).
        SELECT r.xact_id, r.outbox_id, r.topic, r.account_id, r.payload
        FROM ahead r
        WHERE r.bets_through <= p_rows_max
           OR r.bets_through = r.bets  -- the first row: nothing before it
    ),
    placed AS (
        SELECT p.account_id, x.bet_id, x.market_id, x.selection_id, x.currency, x.stake, x.odds,
               x.placed_at
        FROM page p
        CROSS JOIN LATERAL jsonb_to_record(p.payload)
            AS x(bet_id bigint, market_id bigint, selection_id bigint, currency currency_code,
                 stake bigint, odds bigint, placed_at timestamptz)
        WHERE p.topic = 'bet_placed'
    ),
    entries AS (
        SELECT e.account_id, e.bet_id, e.version, e.kind IN ('reverse', 'uncancel') AS reversal,
               e.outcome, e.payout
        FROM page p
        CROSS JOIN LATERAL jsonb_to_record(p.payload)
            AS c(account_id bigint[], bet_id bigint[], version integer[], kind text[],
                 outcome text[], payout bigint[])
        CROSS JOIN LATERAL unnest(c.account_id, c.bet_id, c.version, c.kind, c.outcome, c.payout)
            AS e(account_id, bet_id, version, kind, outcome, payout)
        WHERE p.topic = 'settlement_batch'
        UNION ALL
        SELECT p.account_id, x.bet_id, x.version, x.kind IN ('reverse', 'uncancel'), x.outcome,
               x.payout
        FROM page p
        CROSS JOIN LATERAL jsonb_to_record(p.payload)
            AS x(bet_id bigint, version integer, kind text, outcome text, payout bigint)
        WHERE p.topic IN ('bet_settled', 'bet_unsettled')
    ),
    last_change AS (
        -- Per bet, its greatest change in the page (see the head: the last one). Bet ids are
        -- unique across accounts; in bet_id order, as a settlement's entries come.
        SELECT DISTINCT ON (e.bet_id)
               e.account_id, e.bet_id, e.version, e.reversal, e.outcome, e.payout
        FROM entries e
        ORDER BY e.bet_id, e.version DESC, e.reversal DESC
    ),
    touched AS (
        -- One row per bet of the page: its placement (p) and its last change (c), either or
        -- both.
        SELECT coalesce(c.account_id, p.account_id) AS account_id,
               coalesce(c.bet_id, p.bet_id) AS bet_id,
               p.market_id AS p_market_id, p.selection_id AS p_selection_id,
               p.currency AS p_currency, p.stake AS p_stake, p.odds AS p_odds,
               p.placed_at AS p_placed_at,
               c.version AS c_version, c.reversal AS c_reversal, c.outcome AS c_outcome,
               c.payout AS c_payout
        FROM last_change c
        FULL JOIN placed p ON p.account_id = c.account_id AND p.bet_id = c.bet_id
    ),
    known AS MATERIALIZED (
        -- The page's bets as the read model has them: one probe of bet_view_bets' key (in_view:
        -- the bet has a row; its fields) and one of bet_view_results' key (the bet's settlement
        -- and last change applied, and the row's ctid for the update below; tid NULL: no change
        -- applied yet). LIMIT 1 keeps each subquery a probe: joined, a small table was read
        -- whole.
        SELECT t.account_id, t.bet_id, b.bet_id IS NOT NULL AS in_view,
               coalesce(b.market_id, t.p_market_id) AS market_id,
               coalesce(b.selection_id, t.p_selection_id) AS selection_id,
               coalesce(b.currency, t.p_currency) AS currency,
               coalesce(b.stake, t.p_stake) AS stake,
               coalesce(b.odds, t.p_odds) AS odds,
               coalesce(b.placed_at, t.p_placed_at) AS placed_at,
               r.tid, r.version, r.outcome, r.payout,
               coalesce(r.applied_version, 0) AS applied_version,
               coalesce(r.applied_reversal, false) AS applied_reversal,
               t.c_version, t.c_reversal, t.c_outcome, t.c_payout
        FROM touched t
        LEFT JOIN LATERAL (
            SELECT b.bet_id, b.market_id, b.selection_id, b.currency, b.stake, b.odds,
                   b.placed_at
            FROM bet_view_bets b
            WHERE b.account_id = t.account_id AND b.bet_id = t.bet_id
            LIMIT 1
        ) b ON true
        LEFT JOIN LATERAL (
            SELECT r.ctid AS tid, r.version, r.outcome, r.payout, r.applied_version,
                   r.applied_reversal
            FROM bet_view_results r
            WHERE r.bet_id = t.bet_id
            LIMIT 1
        ) r ON true
    ),
    from_bets AS (
        -- A bet new to the read model whose placement the page does not carry whole: from bets
        -- (a bet_placed row written before it carried placed_at and currency, or a settlement
        -- read before its bet's placement). Rare, so a CTE of its own: as a lateral join of
        -- every row, it cost each bet a probe of every partition's plan.
        SELECT k.bet_id, x.market_id, x.selection_id, x.currency, x.stake, x.odds, x.placed_at
        FROM known k
        CROSS JOIN LATERAL (
            SELECT x.market_id, x.selection_id, x.currency, x.stake, x.odds, x.placed_at
            FROM bets x
            WHERE x.account_id = k.account_id AND x.bet_id = k.bet_id
            LIMIT 1
        ) x
        WHERE NOT k.in_view AND (k.placed_at IS NULL OR k.currency IS NULL)
    ),
    after AS MATERIALIZED (
        -- Each bet after the page, beside what it was before (version_before, payout_before,
        -- open_before: the bet had its bet_view_open row; every bet_view_bets row with no
        -- effective settlement has one).
        SELECT k.account_id, k.bet_id, k.in_view, k.tid,
               coalesce(x.market_id, k.market_id) AS market_id,
               coalesce(x.selection_id, k.selection_id) AS selection_id,
               coalesce(x.currency, k.currency) AS currency,
               coalesce(x.stake, k.stake) AS stake,
               coalesce(x.odds, k.odds) AS odds,
               coalesce(x.placed_at, k.placed_at) AS placed_at,
               a.applies, k.version AS version_before, k.payout AS payout_before,
               k.in_view AND k.version IS NULL AS open_before,
               CASE WHEN NOT a.applies THEN k.version
                    WHEN NOT k.c_reversal THEN k.c_version END AS version,
               CASE WHEN NOT a.applies THEN k.outcome
                    WHEN NOT k.c_reversal THEN k.c_outcome END AS outcome,
               CASE WHEN NOT a.applies THEN k.payout
                    WHEN NOT k.c_reversal THEN k.c_payout END AS payout,
               CASE WHEN a.applies THEN k.c_version ELSE k.applied_version END
                   AS applied_version,
               CASE WHEN a.applies THEN k.c_reversal ELSE k.applied_reversal END
                   AS applied_reversal
        FROM known k
        LEFT JOIN from_bets x ON x.bet_id = k.bet_id
        CROSS JOIN LATERAL (
            SELECT coalesce((k.c_version, k.c_reversal) > (k.applied_version, k.applied_reversal),
                            false) AS applies
        ) a
        -- A bet neither the page nor bets knows (its period left the write tables) is not
        -- shown; nothing else can leave market_id NULL.
        WHERE coalesce(x.market_id, k.market_id) IS NOT NULL
    ),
    inserted AS (
        -- A new bet is a plain INSERT: the writers take turns, so no other can insert it
        -- meanwhile, and ON CONFLICT would log a confirmation record per row.
        INSERT INTO bet_view_bets (account_id, bet_id, market_id, selection_id, currency, stake,
                                   odds, placed_at)
        SELECT a.account_id, a.bet_id, a.market_id, a.selection_id, a.currency, a.stake, a.odds,
               a.placed_at
        FROM after a
        WHERE NOT a.in_view
        ORDER BY a.account_id, a.bet_id
    ),
    results_added AS (
        -- A bet's first change: in bet_id order, so a settlement's rows append.
        INSERT INTO bet_view_results (bet_id, version, outcome, payout, applied_version,
                                      applied_reversal)
        SELECT a.bet_id, a.version, a.outcome, a.payout, a.applied_version, a.applied_reversal
        FROM after a
        WHERE a.applies AND a.tid IS NULL
        ORDER BY a.bet_id
    ),
    results_updated AS (
        -- A later change (a correction): by the ctid read above (a TID scan per row, no second
        -- probe). The statement's snapshot read it, and the writers take turns, so it is the
        -- row's current version.
        UPDATE bet_view_results r
        SET version = a.version, outcome = a.outcome, payout = a.payout,
            applied_version = a.applied_version, applied_reversal = a.applied_reversal
        FROM after a
        WHERE a.applies AND a.tid IS NOT NULL AND r.ctid = a.tid
    ),
    opened AS (
        -- Open after the page and not before: a new open bet, or one a reversal opened again.
        INSERT INTO bet_view_open (account_id, bet_id)
        SELECT a.account_id, a.bet_id
        FROM after a
        WHERE a.version IS NULL AND NOT a.open_before
        ORDER BY a.account_id, a.bet_id
    ),
    closed AS (
        -- Open before the page and settled after it: each row found by a probe of its key and
        -- deleted by its ctid (a TID scan per row), as results_updated. As a join of after
        -- with the table, the plan made once per session on a small bet_view_open read the
        -- whole table's index for every row of the page once it had grown (3 s a page of 200
        -- settled bets with 10,000 open, while a market settled in lanes).
        DELETE FROM bet_view_open o
        USING (SELECT x.tid
               FROM after a
               CROSS JOIN LATERAL (
                   SELECT v.ctid AS tid
                   FROM bet_view_open v
                   WHERE v.account_id = a.account_id AND v.bet_id = a.bet_id
                   LIMIT 1
               ) x
               WHERE a.open_before AND a.version IS NOT NULL) c
        WHERE o.ctid = c.tid
    ),
    deltas AS MATERIALIZED (
        -- Per market and currency, what the page changed: each bet after it less the same bet
        -- before it (nothing for a bet new to the read model), and the market's market_views
        -- row (a probe, as above; NULL: a new one).
        SELECT d.market_id, d.currency, m.tid, d.bets, d.stake, d.open_bets, d.open_stake,
               d.settled_bets, d.payout
        FROM (
            SELECT a.market_id, a.currency,
                   sum((NOT a.in_view)::integer)::bigint AS bets,
                   sum(CASE WHEN a.in_view THEN 0 ELSE a.stake END)::bigint AS stake,
                   sum((a.version IS NULL)::integer - a.open_before::integer)::bigint
                       AS open_bets,
                   sum(CASE WHEN a.version IS NULL THEN a.stake ELSE 0 END
                       - CASE WHEN a.open_before THEN a.stake ELSE 0 END)::bigint AS open_stake,
                   sum((a.version IS NOT NULL)::integer
                       - (a.in_view AND a.version_before IS NOT NULL)::integer)::bigint
                       AS settled_bets,
                   sum(coalesce(a.payout, 0)
                       - CASE WHEN a.in_view THEN coalesce(a.payout_before, 0) ELSE 0 END)::bigint
                       AS payout
            FROM after a
            GROUP BY a.market_id, a.currency
        ) d
        LEFT JOIN LATERAL (
            SELECT m.ctid AS tid
            FROM market_views m
            WHERE m.market_id = d.market_id AND m.currency = d.currency
            LIMIT 1
        ) m ON true
        WHERE d.bets <> 0 OR d.stake <> 0 OR d.open_bets <> 0 OR d.open_stake <> 0
           OR d.settled_bets <> 0 OR d.payout <> 0
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
           (SELECT p.outbox_id FROM page p ORDER BY p.xact_id DESC, p.outbox_id DESC LIMIT 1),
           (SELECT count(*) FROM ahead)::integer
    INTO v_rows, v_last_xact, v_last_id, v_read;

    IF v_rows > 0 THEN
        UPDATE outbox_cursors
        SET last_xact_id = v_last_xact, last_outbox_id = v_last_id, updated_at = now()
        WHERE consumer = p_consumer;
    END IF;

    rows := v_rows;
    -- Caught up: fewer than p_rows_max rows were there to read, and the page took them all.
    caught_up := v_read < p_rows_max AND v_rows = v_read;
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
    'The projector''s page: applies at most p_rows_max outbox rows (and bets: a settlement '
    'batch''s row counts its bets; the first row whatever its size) after p_consumer''s cursor to '
    'the read model (bet_view_bets, bet_view_results, bet_view_open, market_views; '
    'idempotently: a change applies only past the bet''s last applied one), moves the cursor '
    'and the horizon in projections; one transaction. Returns the rows read, whether it caught '
    'up, and consumed_below (every row of a transaction below it is applied). rows = 0 and not '
    'caught_up: another writer holds the cursor, try later.';
