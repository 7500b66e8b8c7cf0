-- The read model's bets in three tables (issue 11; docs/schema.md, "Read model"), so that a
-- settlement appends to the read model instead of rewriting it.
--
-- bet_views was one row per bet, updated when the bet settled. That update could not be HOT (the
-- open index's predicate names version), so it wrote a whole new row and a new primary-key entry,
-- and since a market settles all at once, nine rows in ten did not fit on their page and moved
-- (a Heap/LOCK record more, and the old page's full-page image after a checkpoint): 430 bytes of
-- WAL and about 17 us of the database per settled bet, 40 % more than settlement's own steps
-- (docs/benchmarks.md, "The read model is the gap"). Now:
--
--   bet_view_bets     one row per bet: what its placement says. Written once, never updated.
--   bet_view_results  one row per bet the projector applied a change to (version >= 1): its
--                     effective settlement (NULL while a reversal leaves it open) and the last
--                     change applied. Keyed by bet_id alone: a settlement's bets come in bet_id
--                     order, so its inserts append to the heap and to the key's right edge.
--   bet_view_open     the open bets, (account_id, bet_id): what bet_views_open_idx answered,
--                     the "status": "open" list. A bet's row goes when it settles (a delete: no
--                     index entry is written) and comes back if a reversal opens it again.
--
-- bet_views is now a view with the old table's columns over the first two, so that every reader
-- (the bettor's history, fulltime_project_verify, market_views_expected, operators' queries)
-- reads what it read before.
--
-- Run with every instance stopped, as every migration. The function files that write the read
-- model (fulltime_project, fulltime_project_rebuild) are applied after it.

CREATE TABLE bet_view_bets (
    account_id   bigint        NOT NULL,
    bet_id       bigint        NOT NULL,
    market_id    bigint        NOT NULL,
    selection_id bigint        NOT NULL,
    currency     currency_code NOT NULL,
    stake        bigint        NOT NULL CHECK (stake > 0),
    odds         bigint        NOT NULL,
    placed_at    timestamptz   NOT NULL,
    -- the bettor's history, newest first, is a backward range of one account's entries
    PRIMARY KEY (account_id, bet_id)
) WITH (
    fillfactor = 100,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
COMMENT ON TABLE bet_view_bets IS
    'The read model''s bets (docs/schema.md, "Read model"): one row per bet as its placement '
    'says, written once by fulltime_project; the settlement is in bet_view_results. Rows of bets '
    'whose period left the write tables stay.';

-- applied_version >= 1: a bet with no change applied has no row. fillfactor 90: a correction
-- updates the row, and no indexed column changes, so the update is HOT in the room left.
CREATE TABLE bet_view_results (
    bet_id           bigint  PRIMARY KEY,
    version          integer CHECK (version >= 1),
    outcome          text,
    payout           bigint  CHECK (payout >= 0),
    applied_version  integer NOT NULL CHECK (applied_version >= 1),
    applied_reversal boolean NOT NULL,
    CONSTRAINT bet_view_results_settlement_whole
        CHECK ((version IS NULL) = (outcome IS NULL) AND (version IS NULL) = (payout IS NULL)),
    CONSTRAINT bet_view_results_settled_is_applied
        CHECK (version IS NULL OR (version = applied_version AND NOT applied_reversal))
) WITH (
    fillfactor = 90,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
COMMENT ON TABLE bet_view_results IS
    'The read model''s settlements (docs/schema.md, "Read model"): per bet the projector applied '
    'a change to, its effective settlement in version/outcome/payout (NULL when a reversal left '
    'it open) and the last change applied (applied_version/applied_reversal), which makes '
    'applying an outbox row twice change nothing.';

CREATE TABLE bet_view_open (
    account_id bigint NOT NULL,
    bet_id     bigint NOT NULL,
    PRIMARY KEY (account_id, bet_id)
) WITH (
    fillfactor = 100,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_scale_factor = 0.05
);
COMMENT ON TABLE bet_view_open IS
    'The read model''s open bets (docs/schema.md, "Read model"): (account_id, bet_id) of each '
    'bet_view_bets row with no effective settlement; "status": "open" reads the bettor''s range '
    'of it. Kept by fulltime_project with the other two.';

INSERT INTO bet_view_bets (account_id, bet_id, market_id, selection_id, currency, stake, odds,
                           placed_at)
SELECT account_id, bet_id, market_id, selection_id, currency, stake, odds, placed_at
FROM bet_views
ORDER BY placed_at, bet_id;
INSERT INTO bet_view_results (bet_id, version, outcome, payout, applied_version,
                              applied_reversal)
SELECT bet_id, version, outcome, payout, applied_version, applied_reversal
FROM bet_views
WHERE applied_version > 0
ORDER BY bet_id;
INSERT INTO bet_view_open (account_id, bet_id)
SELECT account_id, bet_id
FROM bet_views
WHERE version IS NULL
ORDER BY account_id, bet_id;

DROP VIEW market_views_expected;
DROP TABLE bet_views;

-- The old table's columns, in its order. A bet with no bet_view_results row is open with no
-- change applied: (0, false), as the table's defaults were. The join is by bet_view_results'
-- key, so a reader that names none of its columns does not read it.
CREATE VIEW bet_views AS
SELECT b.account_id, b.bet_id, b.market_id, b.selection_id, b.currency, b.stake, b.odds,
       b.placed_at, r.version, r.outcome, r.payout,
       coalesce(r.applied_version, 0) AS applied_version,
       coalesce(r.applied_reversal, false) AS applied_reversal
FROM bet_view_bets b
LEFT JOIN bet_view_results r ON r.bet_id = b.bet_id;
COMMENT ON VIEW bet_views IS
    'The read model of bets (docs/schema.md, "Read model"): one row per bet, its effective '
    'settlement in version/outcome/payout (NULL while open), and the last change applied; '
    'bet_view_bets joined with bet_view_results. The open ones are also in bet_view_open.';

-- As 0006_read_model.sql made it (it reads bet_views, which the table's drop took with it).
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

ANALYZE bet_view_bets, bet_view_results, bet_view_open;
