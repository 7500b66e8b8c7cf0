-- History that leaves (issue 14; docs/schema.md, "Time partitions"). The append-only tables that
-- grow with every bet become partitioned by time, so history leaves by detaching and dropping a
-- period's partitions instead of by DELETE, and reconciliation starts from the balances stored
-- when a period closed instead of summing the whole ledger.
--
--   bets              by placed_at   primary key (bet_id, placed_at)
--   bet_settlements   by placed_at   (the bet's: a bet and its settlement rows share a partition)
--   ledger_transfers  by created_at  primary key (transfer_id, created_at)
--   outbox            by created_at  primary key (xact_id, outbox_id, created_at)
--
-- Every uniqueness the engine relies on still holds:
--   * one bet per idempotency key: idempotency_keys, a table of its own (unchanged);
--   * one settlement row per bet, version and reversal: bet_settlements is partitioned by the
--     bet's placed_at, which one bet has exactly one of, so (bet_id, version, reversal,
--     placed_at) is unique per bet as (bet_id, version, reversal) was; the version rules' self
--     foreign key is declared on each partition (rows of one bet never leave their partition,
--     and PostgreSQL 15 cannot detach a partition of a table with a self-referencing key);
--   * entry keys: unique within each ledger partition (a unique index per partition), and
--     across partitions by construction: a reservation key names a new bet, a settlement leg's
--     key names a settlement row (unique above) written in the same transaction, an
--     advance/repay key names a batch under the market's checkpoint; the keys a client chooses
--     (deposits, withdrawals) get a table of their own, wallet_keys.
-- result_events stays unpartitioned: one row per market event, not per bet, and both its
-- uniquenesses (event_key, (market_id, seq)) are promises across any time.
--
-- The existing rows move into one partition per table that holds everything before this
-- migration (the "history" period, from -infinity). The partitions of later periods are made by
-- fulltime_history_ensure, which the migration runner calls after every migrate, and by the
-- partition keeper while the engine runs. The period length is chosen at the first migrate: the
-- session setting fulltime.history_period (`fulltime migrate --history-period`), else a month.

-- --- Settings and periods ------------------------------------------------------------------------

CREATE TABLE history_settings (
    singleton     boolean  PRIMARY KEY DEFAULT true CHECK (singleton),
    period        interval NOT NULL CHECK (period >= interval '1 second'),
    ahead_periods integer  NOT NULL DEFAULT 2 CHECK (ahead_periods BETWEEN 1 AND 1000)
);
COMMENT ON TABLE history_settings IS
    'One row: the length of a period (every partitioned table has one partition per period) and '
    'how many periods ahead of now partitions exist. A changed period applies to the partitions '
    'made after the change.';

INSERT INTO history_settings (period)
VALUES (coalesce(nullif(current_setting('fulltime.history_period', true), ''),
                 '1 month')::interval);

CREATE TABLE history_periods (
    period_start timestamptz PRIMARY KEY,
    period_end   timestamptz NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    closed_at    timestamptz,
    archived_to  text        CHECK (octet_length(archived_to) BETWEEN 1 AND 1000),
    dropped_at   timestamptz,
    max_bet_id   bigint,
    CONSTRAINT history_periods_ordered CHECK (period_end > period_start),
    CONSTRAINT history_periods_closed_before_dropped
        CHECK (dropped_at IS NULL OR closed_at IS NOT NULL)
);
COMMENT ON TABLE history_periods IS
    'One row per period, [period_start, period_end): each partitioned table has one partition for '
    'it, named <table>_p<start as YYYYMMDD"t"HH24MISS UTC> (<table>_history for the period that '
    'starts at -infinity). closed_at: the balances at period_end are stored (period_balances, '
    'period_side_sums). dropped_at: its partitions were detached and dropped; max_bet_id is the '
    'highest bet id they held (the audit knows the ledger legs of older bets are of dropped bets).';

-- Each account's balance at the end of a closed period, and each currency's house and cash.
-- A period's rows are the previous closed period's plus the period's ledger legs: reconciliation
-- and the audit read the last closed period's rows and the legs after it.
CREATE TABLE period_balances (
    period_start timestamptz NOT NULL REFERENCES history_periods ON DELETE CASCADE,
    account_id   bigint      NOT NULL,
    available    bigint      NOT NULL,
    reserved     bigint      NOT NULL,
    owed         bigint      NOT NULL,
    PRIMARY KEY (period_start, account_id)
);
COMMENT ON TABLE period_balances IS
    'Per closed period, each account''s ledger sums of its three sides up to the period''s end. '
    'An account with no leg up to then has no row (its balances were zero).';

CREATE TABLE period_side_sums (
    period_start timestamptz   NOT NULL REFERENCES history_periods ON DELETE CASCADE,
    currency     currency_code NOT NULL,
    side         text          NOT NULL CHECK (side IN ('house', 'cash')),
    balance      bigint        NOT NULL,
    PRIMARY KEY (period_start, currency, side)
);
COMMENT ON TABLE period_side_sums IS
    'Per closed period, the house''s and cash''s ledger sums per currency up to the period''s end.';

-- --- Wallet keys ---------------------------------------------------------------------------------

CREATE TABLE wallet_keys (
    entry_key  text        PRIMARY KEY CHECK (octet_length(entry_key) BETWEEN 1 AND 320),
    account_id bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE wallet_keys IS
    'The entry keys of deposits and withdrawals (deposit:<account>:<key>, withdrawal:...), '
    'claimed before the transfer in the same transaction: a retried deposit conflicts here '
    'whatever period its first attempt landed in (entry_key is unique per ledger partition only). '
    'created_at is the transfer''s, so a replay finds it in its partition.';

-- --- The partitioned tables ----------------------------------------------------------------------

ALTER TABLE bets RENAME TO bets_unpartitioned;
ALTER TABLE bet_settlements RENAME TO bet_settlements_unpartitioned;
ALTER TABLE ledger_transfers RENAME TO ledger_transfers_unpartitioned;
ALTER TABLE outbox RENAME TO outbox_unpartitioned;
ALTER INDEX bets_pkey RENAME TO bets_unpartitioned_pkey;
ALTER INDEX bets_market_bet_idx RENAME TO bets_unpartitioned_market_bet_idx;
ALTER INDEX bets_account_bet_idx RENAME TO bets_unpartitioned_account_bet_idx;
ALTER INDEX bet_settlements_pkey RENAME TO bet_settlements_unpartitioned_pkey;
ALTER INDEX ledger_transfers_pkey RENAME TO ledger_transfers_unpartitioned_pkey;
ALTER INDEX ledger_transfers_debit_account_idx
    RENAME TO ledger_transfers_unpartitioned_debit_account_idx;
ALTER INDEX ledger_transfers_credit_account_idx
    RENAME TO ledger_transfers_unpartitioned_credit_account_idx;
ALTER INDEX outbox_pkey RENAME TO outbox_unpartitioned_pkey;

CREATE TABLE bets (
    bet_id          bigint        GENERATED ALWAYS AS IDENTITY,
    account_id      bigint        NOT NULL,
    market_id       bigint        NOT NULL,
    selection_id    bigint        NOT NULL,
    currency        currency_code NOT NULL,
    stake           bigint        NOT NULL CHECK (stake BETWEEN 1 AND 1000000000000000),
    odds            bigint        NOT NULL CHECK (odds BETWEEN 10100 AND 100000000),
    idempotency_key text          NOT NULL
                                  CHECK (octet_length(idempotency_key) BETWEEN 1 AND 255),
    placed_at       timestamptz   NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (bet_id, placed_at)
) PARTITION BY RANGE (placed_at);
COMMENT ON TABLE bets IS
    'Append-only, partitioned by placed_at (one partition per period, history_periods): a row '
    'is never updated. Settlement, void, cancellation and correction are rows of '
    'bet_settlements, in the partition of the same period. No foreign keys (docs/schema.md).';
COMMENT ON COLUMN bets.placed_at IS
    'clock_timestamp(), not now(): bets grouped into one transaction keep their own times. The '
    'partition key; the reservation leg in the ledger carries the same time.';
CREATE INDEX bets_market_bet_idx ON bets (market_id, bet_id);
CREATE INDEX bets_account_bet_idx ON bets (account_id, bet_id);

CREATE TABLE bet_settlements (
    bet_id          bigint      NOT NULL,
    version         integer     NOT NULL CHECK (version >= 1),
    kind            text        NOT NULL
                                CHECK (kind IN ('settle', 'reverse', 'cancel', 'uncancel')),
    outcome         text        CHECK (outcome IN ('won', 'lost', 'void', 'half_won',
                                                   'half_lost', 'dead_heat')),
    payout          bigint      CHECK (payout >= 0),
    result_event_id bigint      NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    reversal        boolean     NOT NULL
                                GENERATED ALWAYS AS (kind IN ('reverse', 'uncancel')) STORED,
    prior_version   integer     GENERATED ALWAYS AS (
                                    CASE WHEN kind IN ('reverse', 'uncancel') THEN version
                                         WHEN version > 1 THEN version - 1 END) STORED,
    prior_reversal  boolean     GENERATED ALWAYS AS (
                                    CASE WHEN kind IN ('reverse', 'uncancel') THEN false
                                         WHEN version > 1 THEN true END) STORED,
    placed_at       timestamptz NOT NULL,
    PRIMARY KEY (bet_id, version, reversal, placed_at),
    CONSTRAINT bet_settlements_effect_has_outcome
        CHECK ((kind IN ('settle', 'cancel')) = (outcome IS NOT NULL AND payout IS NOT NULL)),
    CONSTRAINT bet_settlements_reversal_is_bare
        CHECK ((kind IN ('reverse', 'uncancel')) = (outcome IS NULL AND payout IS NULL)),
    CONSTRAINT bet_settlements_cancel_is_void
        CHECK (kind <> 'cancel' OR outcome = 'void')
) PARTITION BY RANGE (placed_at);
COMMENT ON TABLE bet_settlements IS
    'Append-only history of what happened to each bet (docs/schema.md, "Settlement rows"), '
    'partitioned by the bet''s placed_at: a bet''s rows live in its bet''s period. The version '
    'rules'' self-referencing key (bet_id, prior_version, prior_reversal, placed_at) -> '
    '(bet_id, version, reversal, placed_at) is declared on each partition.';
COMMENT ON COLUMN bet_settlements.placed_at IS
    'The bet''s placed_at: the partition key, and what a lookup by bet passes for pruning.';

CREATE TABLE ledger_transfers (
    transfer_id       bigint        GENERATED ALWAYS AS IDENTITY,
    entry_key         text          NOT NULL
                                    CHECK (octet_length(entry_key) BETWEEN 1 AND 320),
    currency          currency_code NOT NULL,
    debit_side        text          NOT NULL,
    debit_account_id  bigint,
    credit_side       text          NOT NULL,
    credit_account_id bigint,
    amount            bigint        NOT NULL CHECK (amount > 0),
    bet_id            bigint,
    result_event_id   bigint,
    created_at        timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (transfer_id, created_at),
    CONSTRAINT ledger_transfers_debit_side_check
        CHECK (debit_side IN ('available', 'reserved', 'owed', 'house', 'cash')),
    CONSTRAINT ledger_transfers_credit_side_check
        CHECK (credit_side IN ('available', 'reserved', 'owed', 'house', 'cash')),
    CONSTRAINT ledger_debit_account_matches_side
        CHECK ((debit_side IN ('available', 'reserved', 'owed'))
               = (debit_account_id IS NOT NULL)),
    CONSTRAINT ledger_credit_account_matches_side
        CHECK ((credit_side IN ('available', 'reserved', 'owed'))
               = (credit_account_id IS NOT NULL)),
    CONSTRAINT ledger_sides_differ
        CHECK (debit_side <> credit_side
               OR debit_account_id IS DISTINCT FROM credit_account_id),
    CONSTRAINT ledger_no_bettor_to_bettor
        CHECK (debit_account_id IS NULL OR credit_account_id IS NULL
               OR debit_account_id = credit_account_id)
) PARTITION BY RANGE (created_at);
COMMENT ON TABLE ledger_transfers IS
    'Append-only double-entry ledger (docs/schema.md), partitioned by created_at: a closed '
    'period''s partition never receives a row again, and its sums are stored in '
    'period_balances and period_side_sums. entry_key is unique per partition (an index on each) '
    'and across partitions by construction (see migration 0005).';
COMMENT ON COLUMN ledger_transfers.entry_key IS
    'Exactly-once key: bet:<bet_id>:reserve; settlement legs bet:<bet_id>:v<version>:<code> '
    '(ss, sp, rs, rp, cr, ur); advance:<event>:<account>:<last bet>, '
    'repay:<event>:<account>:<last bet>; deposit:<account_id>:<key>, '
    'withdrawal:<account_id>:<key> (claimed in wallet_keys first).';
COMMENT ON COLUMN ledger_transfers.created_at IS
    'The partition key: now() (the transaction''s start), except a reservation, which carries '
    'its bet''s placed_at, so a bet and its reservation are always in the same period.';
CREATE INDEX ledger_transfers_debit_account_idx
    ON ledger_transfers (debit_account_id) INCLUDE (debit_side, amount)
    WHERE debit_account_id IS NOT NULL;
CREATE INDEX ledger_transfers_credit_account_idx
    ON ledger_transfers (credit_account_id) INCLUDE (credit_side, amount)
    WHERE credit_account_id IS NOT NULL;

CREATE TABLE outbox (
    outbox_id  bigint      GENERATED ALWAYS AS IDENTITY,
    xact_id    xid8        NOT NULL DEFAULT pg_current_xact_id(),
    topic      text        NOT NULL CHECK (octet_length(topic) BETWEEN 1 AND 64),
    account_id bigint,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (xact_id, outbox_id, created_at)
) PARTITION BY RANGE (created_at);
COMMENT ON TABLE outbox IS
    'Events written in the transaction that caused them, read by consumers in (xact_id, '
    'outbox_id) order after their cursors (docs/schema.md, "Outbox"). Partitioned by '
    'created_at: a period''s partition leaves once every consumer is past its rows.';

-- --- The history period: the rows written before this migration ---------------------------------

INSERT INTO history_periods (period_start, period_end) VALUES ('-infinity', now());

CREATE TABLE bets_history PARTITION OF bets FOR VALUES FROM (MINVALUE) TO (now());
CREATE TABLE bet_settlements_history PARTITION OF bet_settlements
    FOR VALUES FROM (MINVALUE) TO (now());
CREATE TABLE ledger_transfers_history PARTITION OF ledger_transfers
    FOR VALUES FROM (MINVALUE) TO (now());
CREATE TABLE outbox_history PARTITION OF outbox FOR VALUES FROM (MINVALUE) TO (now());
ALTER TABLE bets_history SET (autovacuum_vacuum_insert_scale_factor = 0.05,
                              autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE bet_settlements_history SET (autovacuum_vacuum_insert_scale_factor = 0.05,
                                         autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE ledger_transfers_history SET (autovacuum_vacuum_insert_scale_factor = 0.05,
                                          autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE outbox_history SET (autovacuum_vacuum_threshold = 1000,
                                autovacuum_vacuum_scale_factor = 0.02,
                                autovacuum_vacuum_insert_scale_factor = 0.05,
                                autovacuum_analyze_scale_factor = 0.05,
                                autovacuum_vacuum_cost_limit = 1000);
CREATE UNIQUE INDEX ledger_transfers_history_entry_key_idx
    ON ledger_transfers_history (entry_key);
ALTER TABLE bet_settlements_history ADD CONSTRAINT bet_settlements_history_prior_fkey
    FOREIGN KEY (bet_id, prior_version, prior_reversal, placed_at)
    REFERENCES bet_settlements_history (bet_id, version, reversal, placed_at);

INSERT INTO bets OVERRIDING SYSTEM VALUE
SELECT bet_id, account_id, market_id, selection_id, currency, stake, odds, idempotency_key,
       placed_at
FROM bets_unpartitioned ORDER BY bet_id;
-- Effects before reversals of each version, versions in order: each row's prior exists first.
INSERT INTO bet_settlements (bet_id, version, kind, outcome, payout, result_event_id, created_at,
                             placed_at)
SELECT s.bet_id, s.version, s.kind, s.outcome, s.payout, s.result_event_id, s.created_at,
       b.placed_at
FROM bet_settlements_unpartitioned s JOIN bets_unpartitioned b USING (bet_id)
ORDER BY s.bet_id, s.version, s.reversal;
INSERT INTO ledger_transfers OVERRIDING SYSTEM VALUE
SELECT transfer_id, entry_key, currency, debit_side, debit_account_id, credit_side,
       credit_account_id, amount, bet_id, result_event_id, created_at
FROM ledger_transfers_unpartitioned ORDER BY transfer_id;
INSERT INTO outbox OVERRIDING SYSTEM VALUE
SELECT outbox_id, xact_id, topic, account_id, payload, created_at
FROM outbox_unpartitioned ORDER BY xact_id, outbox_id;
INSERT INTO wallet_keys (entry_key, account_id, created_at)
SELECT entry_key, coalesce(credit_account_id, debit_account_id), created_at
FROM ledger_transfers_unpartitioned
WHERE entry_key LIKE 'deposit:%' OR entry_key LIKE 'withdrawal:%';

-- The identities continue after the copied rows.
SELECT setval(pg_get_serial_sequence('bets', 'bet_id'),
              coalesce((SELECT max(bet_id) FROM bets_unpartitioned), 0) + 1, false);
SELECT setval(pg_get_serial_sequence('ledger_transfers', 'transfer_id'),
              coalesce((SELECT max(transfer_id) FROM ledger_transfers_unpartitioned), 0) + 1,
              false);
SELECT setval(pg_get_serial_sequence('outbox', 'outbox_id'),
              coalesce((SELECT max(outbox_id) FROM outbox_unpartitioned), 0) + 1, false);

DROP TABLE bets_unpartitioned, bet_settlements_unpartitioned, ledger_transfers_unpartitioned,
           outbox_unpartitioned;

-- The settlement step's bet carries its placed_at, which the settlement rows need.
ALTER TYPE fulltime_settle_bet ADD ATTRIBUTE placed_at timestamptz;

-- The column CHECKs were named while the old tables still held their names (PostgreSQL added a
-- 1); they get their names back, on the parents and their partitions.
ALTER TABLE bets RENAME CONSTRAINT bets_stake_check1 TO bets_stake_check;
ALTER TABLE bets RENAME CONSTRAINT bets_odds_check1 TO bets_odds_check;
ALTER TABLE bets RENAME CONSTRAINT bets_idempotency_key_check1 TO bets_idempotency_key_check;
ALTER TABLE bet_settlements RENAME CONSTRAINT bet_settlements_version_check1
    TO bet_settlements_version_check;
ALTER TABLE bet_settlements RENAME CONSTRAINT bet_settlements_kind_check1
    TO bet_settlements_kind_check;
ALTER TABLE bet_settlements RENAME CONSTRAINT bet_settlements_outcome_check1
    TO bet_settlements_outcome_check;
ALTER TABLE bet_settlements RENAME CONSTRAINT bet_settlements_payout_check1
    TO bet_settlements_payout_check;
ALTER TABLE ledger_transfers RENAME CONSTRAINT ledger_transfers_entry_key_check1
    TO ledger_transfers_entry_key_check;
ALTER TABLE ledger_transfers RENAME CONSTRAINT ledger_transfers_amount_check1
    TO ledger_transfers_amount_check;
ALTER TABLE outbox RENAME CONSTRAINT outbox_topic_check1 TO outbox_topic_check;

-- The push loop stores its cursor after each page it read, in a transaction of its own
-- (net/settlement_pushes.cpp), not in a transaction that records the processing.
COMMENT ON TABLE outbox_cursors IS
    'Per consumer, the last (xact_id, outbox_id) it read, stored after each page (pushes are at '
    'least once). The lowest cursor bounds the purge and holds the outbox partitions of a period. '
    'A few rows updated after every page: fillfactor 50.';
