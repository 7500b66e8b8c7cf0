-- The read model (issue 15; docs/schema.md, "Read model"): tables that the bettors' history and
-- the operators' market summaries are read from, kept by a projector that follows the outbox
-- (db/functions/fulltime_project.sql), so that those reads leave the partitioned write tables
-- alone. bets' primary key is (bet_id, placed_at): a bettor's history page read from bets and
-- bet_settlements probes every partition for every bet, where bet_views answers it from one
-- index range.
--
--   bet_views      one row per bet, keyed for the bettor: (account_id, bet_id)
--   market_views   per market and currency: bets, stakes, open and settled counts, payouts
--   projections    per projector: its horizon (consumed_below) and how much it applied
--
-- The projector's cursor is an outbox_cursors row (consumer 'projector'), so the purge keeps
-- every outbox row until the projector has read it, and history retention waits for it too.
--
-- What the read model must hold is written once, as two views: bet_views_expected (each bet the
-- write tables keep, with its effective settlement) and market_views_expected (the summaries
-- over bet_views). This migration fills the tables from them, and so do the rebuild
-- (fulltime_project_rebuild) and the check (fulltime_project_verify): a migration cannot call a
-- function file, which is applied after every migration.

-- --- bet_views ---------------------------------------------------------------------------------

-- The row of a bet as the bettor reads it. version, outcome and payout are the effective
-- settlement (NULL while open); applied_version and applied_reversal name the last change the
-- projector applied, (0, false) for a bet never settled: a change is applied only when its
-- (version, reversal) is greater, which makes applying the same outbox row twice change nothing.
--
-- fillfactor 90: a row is inserted once and updated about once in its life (when its bet
-- settles, again on a correction). The partial index below names version in its predicate, so
-- that update is never HOT (the predicate's column is an indexed column); the room on the page
-- lets the new version of the row stay on its page (one heap page dirtied and logged, not two).
-- More room would only be empty space in a table that grows with every bet.
CREATE TABLE bet_views (
    account_id       bigint        NOT NULL,
    bet_id           bigint        NOT NULL,
    market_id        bigint        NOT NULL,
    selection_id     bigint        NOT NULL,
    currency         currency_code NOT NULL,
    stake            bigint        NOT NULL CHECK (stake > 0),
    odds             bigint        NOT NULL,
    placed_at        timestamptz   NOT NULL,
    version          integer       CHECK (version >= 1),
    outcome          text,
    payout           bigint        CHECK (payout >= 0),
    applied_version  integer       NOT NULL DEFAULT 0 CHECK (applied_version >= 0),
    applied_reversal boolean       NOT NULL DEFAULT false,
    -- the primary key: the bettor's history, newest first, is a backward range scan of one
    -- account's entries, and the projector finds a bet by the account and bet its outbox rows
    -- name. One index entry per bet and per non-HOT update (a settlement).
    PRIMARY KEY (account_id, bet_id),
    CONSTRAINT bet_views_settlement_whole
        CHECK ((version IS NULL) = (outcome IS NULL) AND (version IS NULL) = (payout IS NULL)),
    CONSTRAINT bet_views_settled_is_applied
        CHECK (version IS NULL OR (version = applied_version AND NOT applied_reversal))
) WITH (
    fillfactor = 90,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
COMMENT ON TABLE bet_views IS
    'The read model of bets (docs/schema.md, "Read model"): one row per bet, its effective '
    'settlement in version/outcome/payout (NULL while open), kept by fulltime_project from the '
    'outbox. applied_version/applied_reversal: the last change applied, which makes applying an '
    'outbox row twice change nothing. Rows of bets whose period left the write tables stay.';

-- The open filter ("status": "open"): a bettor with thousands of settled bets and a few open ones
-- reads the open ones from a small index. Its cost: one index entry per bet when placed (an open
-- bet matches), about 60 bytes of WAL, and nothing when it settles (the new row version does not
-- match); a reversal that opens the bet again adds an entry. The entries of settled bets are
-- removed by vacuum.
CREATE INDEX bet_views_open_idx ON bet_views (account_id, bet_id) WHERE version IS NULL;

-- --- market_views --------------------------------------------------------------------------------

-- Per market and currency (a market's bets may be in several currencies): all bets and their
-- stakes, the open ones, the settled ones (an effect in force, a cancel included) and their
-- effective payouts. Updated by the difference each projector page makes, once per market and
-- currency the page touched; no indexed column changes, so the updates are HOT in the room that
-- fillfactor 50 keeps (a few rows per market, each updated by many pages).
CREATE TABLE market_views (
    market_id    bigint        NOT NULL,
    currency     currency_code NOT NULL,
    bets         bigint        NOT NULL DEFAULT 0 CHECK (bets >= 0),
    stake        bigint        NOT NULL DEFAULT 0 CHECK (stake >= 0),
    open_bets    bigint        NOT NULL DEFAULT 0 CHECK (open_bets >= 0),
    open_stake   bigint        NOT NULL DEFAULT 0 CHECK (open_stake >= 0),
    settled_bets bigint        NOT NULL DEFAULT 0 CHECK (settled_bets >= 0),
    payout       bigint        NOT NULL DEFAULT 0 CHECK (payout >= 0),
    updated_at   timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (market_id, currency),
    CONSTRAINT market_views_counts_add_up CHECK (open_bets + settled_bets = bets)
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_scale_factor = 0.02
);
COMMENT ON TABLE market_views IS
    'The operators'' summary per market and currency (docs/schema.md, "Read model"): bets and '
    'stake, open bets and their stake, settled bets (settle or cancel in force) and their '
    'payouts. Kept by fulltime_project with each page''s difference; equals the aggregate over '
    'bet_views (market_views_expected).';

-- --- projections ---------------------------------------------------------------------------------

CREATE TABLE projections (
    name           text        PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 64),
    consumed_below xid8        NOT NULL,
    rows_applied   bigint      NOT NULL DEFAULT 0 CHECK (rows_applied >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now()
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_threshold = 500,
    autovacuum_vacuum_scale_factor = 0
);
COMMENT ON TABLE projections IS
    'Per projector (named as its outbox_cursors consumer): consumed_below, its horizon: every '
    'outbox row of a transaction with xid < consumed_below is applied to the read model, so a '
    'reader that knows its write''s transaction (pg_current_xact_id()) knows whether the read '
    'model shows it. rows_applied counts the outbox rows read. Updated after every page: '
    'fillfactor 50.';

-- --- What the read model must hold -------------------------------------------------------------

-- Each bet the write tables keep, as bet_views must show it. A bet's settlement rows are
-- consecutive versions, each an effect and at most one reversal of it, and the effect of v > 1
-- needs the reversal of v - 1 (docs/schema.md, "Settlement rows"): so the bet's last row in
-- (version, reversal) order decides it. An effect is the effective settlement; a reversal leaves
-- the bet open. That row is one backward step on bet_settlements' key in the bet's partition
-- (its placed_at prunes the others), and it is also the last change the projector would have
-- applied (applied_version, applied_reversal).
CREATE VIEW bet_views_expected AS
SELECT b.account_id, b.bet_id, b.market_id, b.selection_id, b.currency, b.stake, b.odds,
       b.placed_at,
       CASE WHEN NOT l.reversal THEN l.version END AS version,
       CASE WHEN NOT l.reversal THEN l.outcome END AS outcome,
       CASE WHEN NOT l.reversal THEN l.payout END AS payout,
       coalesce(l.version, 0) AS applied_version,
       coalesce(l.reversal, false) AS applied_reversal
FROM bets b
LEFT JOIN LATERAL (
    SELECT s.version, s.reversal, s.outcome, s.payout
    FROM bet_settlements s
    WHERE s.bet_id = b.bet_id AND s.placed_at = b.placed_at
    ORDER BY s.version DESC, s.reversal DESC
    LIMIT 1
) l ON true;
COMMENT ON VIEW bet_views_expected IS
    'What bet_views must hold for each bet the write tables keep: the bet, its effective '
    'settlement (its last settlement row when that is an effect) and that row as the last change '
    'applied. Filled from by the migration and fulltime_project_rebuild, compared with by '
    'fulltime_project_verify.';

CREATE VIEW market_views_expected AS
SELECT v.market_id, v.currency,
       count(*)::bigint AS bets,
       sum(v.stake)::bigint AS stake,
       count(*) FILTER (WHERE v.version IS NULL)::bigint AS open_bets,
       coalesce(sum(v.stake) FILTER (WHERE v.version IS NULL), 0)::bigint AS open_stake,
       count(*) FILTER (WHERE v.version IS NOT NULL)::bigint AS settled_bets,
       coalesce(sum(v.payout), 0)::bigint AS payout
FROM bet_views v
GROUP BY v.market_id, v.currency;
COMMENT ON VIEW market_views_expected IS
    'What market_views must hold: the aggregate over bet_views per market and currency. Filled '
    'from by the migration and fulltime_project_rebuild, compared with by fulltime_project_verify.';

-- --- The projection of what exists, and the projector's cursor at the tail ------------------------

-- The cursor first, then the fill: the cursor is after every row of the transactions below the
-- xmin of this statement's snapshot (as db/push_statements.cpp's create_cursor_sql puts a new
-- consumer), and each of those transactions finished before the fill's later snapshot, so the
-- fill shows them. A transaction at or above that xmin is read by the projector; if the fill
-- showed it already, applying it again changes nothing.
INSERT INTO outbox_cursors (consumer, last_xact_id, last_outbox_id)
VALUES ('projector', (pg_snapshot_xmin(pg_current_snapshot())::text::numeric - 1)::text::xid8,
        9223372036854775807)
ON CONFLICT (consumer) DO UPDATE
SET last_xact_id = EXCLUDED.last_xact_id, last_outbox_id = EXCLUDED.last_outbox_id,
    updated_at = now();
INSERT INTO projections (name, consumed_below)
SELECT c.consumer, (c.last_xact_id::text::numeric + 1)::text::xid8
FROM outbox_cursors c WHERE c.consumer = 'projector';

INSERT INTO bet_views (account_id, bet_id, market_id, selection_id, currency, stake, odds,
                       placed_at, version, outcome, payout, applied_version, applied_reversal)
SELECT account_id, bet_id, market_id, selection_id, currency, stake, odds, placed_at, version,
       outcome, payout, applied_version, applied_reversal
FROM bet_views_expected
ORDER BY placed_at, bet_id;
INSERT INTO market_views (market_id, currency, bets, stake, open_bets, open_stake, settled_bets,
                          payout)
SELECT market_id, currency, bets, stake, open_bets, open_stake, settled_bets, payout
FROM market_views_expected;
ANALYZE bet_views, market_views;
