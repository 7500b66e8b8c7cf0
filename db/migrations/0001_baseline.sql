-- Fulltime schema: the baseline (docs/schema.md explains every choice).
--
-- The tables, indexes, constraints and fixed data of the schema as it stood on 2026-12-01, when
-- the eight migrations written until then (schema, placement, group commit, shard hint,
-- settlement, incidents, reconciliation, terminal states) were squashed into this one file
-- before any deployment existed. Applied once, inside one transaction, by the migration runner
-- (include/fulltime/db/migrations.hpp). The SQL functions are not here: each lives in its own
-- file under db/functions/, applied after the numbered migrations and re-applied when it
-- changes. Later numbered migrations change tables, indexes, constraints, types and data, and
-- drop a function whose signature changes.
--
-- Rules that hold throughout:
--   * Money is bigint minor units, odds bigint units of 1/10000; never float or numeric.
--   * No index contains a balance, liability, odds, status or progress column, so the updates
--     of the hot paths can be HOT (heap-only) and need no index maintenance.
--   * Hot tables have fillfactor < 100 (room for HOT updates on the same page) and their own
--     autovacuum thresholds (the defaults wait for 20% of a table to be dead).
--   * Tables written once per bet or per money movement carry no foreign keys: each FK check
--     takes a FOR KEY SHARE lock on the parent row, so every placement on a popular market
--     would lock the same markets/selections row and churn MultiXacts. The writers validate
--     existence themselves and reconciliation checks the result. Cold parents (markets,
--     events) are referenced by cold children with FKs.

-- --- Domains -------------------------------------------------------------------------------------

CREATE DOMAIN currency_code AS text
    CHECK (VALUE ~ '^[A-Z]{3}$');
COMMENT ON DOMAIN currency_code IS
    'ISO 4217-style code: three upper-case ASCII letters. text + CHECK rather than char(3), '
    'whose blank padding makes ''EU'' a valid-looking ''EU ''.';

-- --- Accounts ------------------------------------------------------------------------------------

CREATE TABLE accounts (
    account_id bigint        PRIMARY KEY CHECK (account_id > 0),
    currency   currency_code NOT NULL,
    available  bigint        NOT NULL DEFAULT 0 CHECK (available >= 0),
    reserved   bigint        NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    created_at timestamptz   NOT NULL DEFAULT now(),
    owed       bigint        NOT NULL DEFAULT 0 CHECK (owed >= 0)
) WITH (
    fillfactor = 70,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_limit = 1000
);
COMMENT ON TABLE accounts IS
    'One balance row per bettor: a projection of ledger_transfers, updated in the same '
    'transaction as the transfers it projects. The row is a lock: placement takes it last and '
    'commits at once; settlement batches take it in ascending account_id order. fillfactor 70 '
    'and no index on the balance columns keep those updates HOT.';
COMMENT ON COLUMN accounts.account_id IS 'Assigned by the operator (POST /v1/accounts).';
COMMENT ON COLUMN accounts.available IS
    'Minor units the bettor may stake or withdraw = credits - debits of side ''available''.';
COMMENT ON COLUMN accounts.reserved IS
    'Minor units held by open bets = credits - debits of side ''reserved''.';
COMMENT ON COLUMN accounts.owed IS
    'Minor units the bettor owes the house: reversed winnings that available could not cover '
    '= debits - credits of side ''owed''. Repaid first from later settlement credits.';

-- --- Double-entry ledger ------------------------------------------------------------------------

CREATE TABLE ledger_transfers (
    transfer_id       bigint        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entry_key         text          NOT NULL UNIQUE
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
    -- The sides (fulltime_codes, domain ledger_side). The CHECKs stay CHECKs rather than
    -- foreign keys to fulltime_codes: a foreign key would take a FOR KEY SHARE lock on a codes
    -- row for every transfer (see the header); tests/db/codes_pgtest.cpp proves that every
    -- CHECK below that lists codes lists exactly its domain's codes.
    CONSTRAINT ledger_transfers_debit_side_check
        CHECK (debit_side IN ('available', 'reserved', 'owed', 'house', 'cash')),
    CONSTRAINT ledger_transfers_credit_side_check
        CHECK (credit_side IN ('available', 'reserved', 'owed', 'house', 'cash')),
    -- A bettor's sides name their account; the house and cash sides are per currency only.
    CONSTRAINT ledger_debit_account_matches_side
        CHECK ((debit_side IN ('available', 'reserved', 'owed'))
               = (debit_account_id IS NOT NULL)),
    CONSTRAINT ledger_credit_account_matches_side
        CHECK ((credit_side IN ('available', 'reserved', 'owed'))
               = (credit_account_id IS NOT NULL)),
    -- A transfer between two sides of the same ledger account would move nothing.
    CONSTRAINT ledger_sides_differ
        CHECK (debit_side <> credit_side
               OR debit_account_id IS DISTINCT FROM credit_account_id),
    -- Money never moves straight from one bettor to another: bettor-to-bettor transfers stay
    -- within one account (available <-> reserved).
    CONSTRAINT ledger_no_bettor_to_bettor
        CHECK (debit_account_id IS NULL OR credit_account_id IS NULL
               OR debit_account_id = credit_account_id)
) WITH (
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
COMMENT ON TABLE ledger_transfers IS
    'Append-only double-entry ledger: each row moves amount FROM the debit side TO the credit '
    'side. A side''s balance = sum(amount where it is credited) - sum(amount where it is '
    'debited), so every currency sums to zero by construction. House and cash balances exist '
    'only as such sums (a house balance row would be a hot row every settlement queues on). '
    'Never updated or deleted; no foreign keys (see the header of this migration).';
COMMENT ON COLUMN ledger_transfers.entry_key IS
    'Exactly-once key: bet:<bet_id>:reserve, bet:<bet_id>:v<version>:<settle|reverse|cancel|'
    'uncancel>:<leg>, deposit:<account_id>:<key>, withdrawal:<account_id>:<key>. A retried '
    'effect conflicts here instead of moving money twice.';
COMMENT ON COLUMN ledger_transfers.debit_side IS
    'available | reserved | owed (a bettor''s, with debit_account_id) | house | cash (per '
    'currency).';

-- A correction or rollback takes back a payout the bettor may already have staked or withdrawn.
-- The reversal must still happen (the market cannot stall on one account), and no balance may go
-- negative: the part of a batch's debit that available cannot cover is advanced by the house and
-- recorded as the bettor's debt, on a side of its own ('owed': the house's claim on the bettor),
--   advance:<event>:<account>:<last bet of the batch>  owed -> available  shortfall
-- and later credits of a settlement batch (winnings, refunds) repay it first,
--   repay:<event>:<account>:<last bet of the batch>    available -> owed  min(owed, available)
-- accounts.owed = debits - credits of the account's 'owed' side, never negative.
COMMENT ON COLUMN ledger_transfers.result_event_id IS
    'The result event whose application wrote this transfer (settlement entries only).';

-- Reconciliation sums each side of a range of accounts: covering partial indexes let it read
-- only the index (the insert-triggered autovacuum keeps the visibility map current).
CREATE INDEX ledger_transfers_debit_account_idx
    ON ledger_transfers (debit_account_id) INCLUDE (debit_side, amount)
    WHERE debit_account_id IS NOT NULL;
CREATE INDEX ledger_transfers_credit_account_idx
    ON ledger_transfers (credit_account_id) INCLUDE (credit_side, amount)
    WHERE credit_account_id IS NOT NULL;
-- Reversals and audits find a bet's transfers.
CREATE INDEX ledger_transfers_bet_idx
    ON ledger_transfers (bet_id)
    WHERE bet_id IS NOT NULL;

-- --- Events, markets, selections ---------------------------------------------------------------

CREATE TABLE events (
    event_id   bigint      PRIMARY KEY CHECK (event_id > 0),
    name       text        CHECK (octet_length(name) BETWEEN 1 AND 200),
    starts_at  timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE events IS
    'A sporting event. Created on the first market message that names it; the feed''s market '
    'message carries no event name or start, hence both nullable.';

CREATE TABLE markets (
    market_id          bigint      PRIMARY KEY CHECK (market_id > 0),
    event_id           bigint      NOT NULL REFERENCES events,
    name               text        NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 200),
    status             text        NOT NULL DEFAULT 'open'
                                   CHECK (status IN ('open', 'suspended', 'closed')),
    stake_min          bigint      NOT NULL CHECK (stake_min > 0),
    stake_max          bigint      NOT NULL CHECK (stake_max >= stake_min),
    liability_limit    bigint      NOT NULL CHECK (liability_limit > 0),
    exposure_shards    smallint    NOT NULL CHECK (exposure_shards BETWEEN 1 AND 64),
    settle_deadline_at timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 90);
COMMENT ON TABLE markets IS
    'Read (never locked) by every placement; updated on suspend/resume/close. status is not '
    'indexed so those updates stay HOT.';
COMMENT ON COLUMN markets.liability_limit IS
    'Market-wide limit in minor units, split evenly over the exposure shards.';
COMMENT ON COLUMN markets.exposure_shards IS
    'Number of market_exposure rows; fixed at creation because a placement picks one of them.';
COMMENT ON COLUMN markets.settle_deadline_at IS
    'Expected settlement time plus grace. Past it, reservations of unsettled bets belong to the '
    'reservation-deadline sweeper, which raises them rather than waiting forever.';

CREATE INDEX markets_event_idx ON markets (event_id);
CREATE INDEX markets_settle_deadline_idx
    ON markets (settle_deadline_at)
    WHERE settle_deadline_at IS NOT NULL;

CREATE TABLE selections (
    selection_id bigint      PRIMARY KEY CHECK (selection_id > 0),
    market_id    bigint      NOT NULL REFERENCES markets,
    name         text        NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 200),
    odds         bigint      NOT NULL CHECK (odds BETWEEN 10100 AND 100000000),
    updated_at   timestamptz NOT NULL DEFAULT now()
) WITH (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05
);
COMMENT ON TABLE selections IS
    'A market''s outcomes and their current odds. Read (never locked) by every placement; '
    'updated by odds messages during live play: fillfactor 80 and its own autovacuum thresholds '
    'keep those updates HOT and the table small.';
COMMENT ON COLUMN selections.odds IS
    'Current odds in units of 1/10000 (2.50 is 25000), 1.01 to 10000.00 as in core/money. '
    'Updated by the feed during live play; not indexed, so odds updates stay HOT.';

CREATE INDEX selections_market_idx ON selections (market_id);

-- --- Bets ----------------------------------------------------------------------------------------

CREATE TABLE bets (
    bet_id          bigint        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id      bigint        NOT NULL,
    market_id       bigint        NOT NULL,
    selection_id    bigint        NOT NULL,
    currency        currency_code NOT NULL,
    stake           bigint        NOT NULL CHECK (stake BETWEEN 1 AND 1000000000000000),
    odds            bigint        NOT NULL CHECK (odds BETWEEN 10100 AND 100000000),
    idempotency_key text          NOT NULL
                                  CHECK (octet_length(idempotency_key) BETWEEN 1 AND 255),
    placed_at       timestamptz   NOT NULL DEFAULT clock_timestamp()
) WITH (
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
COMMENT ON TABLE bets IS
    'Append-only: a row is never updated. Settlement, void, cancellation and correction are rows '
    'of bet_settlements. No foreign keys: each would lock the popular market''s parent row on '
    'every placement; placement has already read the selection and market, and the balance '
    'update proves the account exists.';
COMMENT ON COLUMN bets.stake IS 'Minor units, at most limits::amount_minor_max.';
COMMENT ON COLUMN bets.odds IS 'Accepted odds in units of 1/10000.';
COMMENT ON COLUMN bets.placed_at IS
    'clock_timestamp(), not now(): bets grouped into one transaction keep their own times. '
    'The future partition key (docs/schema.md).';

-- Settlement batches walk a market's bets after a checkpoint: WHERE market_id = $1 AND bet_id > $2
-- ORDER BY bet_id LIMIT n.
CREATE INDEX bets_market_bet_idx ON bets (market_id, bet_id);
-- A bettor's bets, newest first (a backward scan serves DESC).
CREATE INDEX bets_account_bet_idx ON bets (account_id, bet_id);

-- --- Settlement rows -----------------------------------------------------------------------------

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
    -- Derived columns that let plain constraints state the version rules below.
    reversal        boolean     NOT NULL
                                GENERATED ALWAYS AS (kind IN ('reverse', 'uncancel')) STORED,
    prior_version   integer     GENERATED ALWAYS AS (
                                    CASE WHEN kind IN ('reverse', 'uncancel') THEN version
                                         WHEN version > 1 THEN version - 1 END) STORED,
    prior_reversal  boolean     GENERATED ALWAYS AS (
                                    CASE WHEN kind IN ('reverse', 'uncancel') THEN false
                                         WHEN version > 1 THEN true END) STORED,
    -- Per bet and version: at most one effect (settle or cancel) and at most one reversal of it.
    PRIMARY KEY (bet_id, version, reversal),
    -- A reversal needs the effect of its own version; the effect of version v > 1 needs the
    -- reversal of version v - 1. Together with the key: a bet has at most one unreversed
    -- effect at any time, versions are consecutive from 1, and nothing is reversed twice.
    CONSTRAINT bet_settlements_prior_fkey
        FOREIGN KEY (bet_id, prior_version, prior_reversal)
        REFERENCES bet_settlements (bet_id, version, reversal),
    -- Effects carry their outcome and payout; a reversal carries neither, because it undoes
    -- exactly the one effect of its version and a copy could disagree with it.
    CONSTRAINT bet_settlements_effect_has_outcome
        CHECK ((kind IN ('settle', 'cancel')) = (outcome IS NOT NULL AND payout IS NOT NULL)),
    CONSTRAINT bet_settlements_reversal_is_bare
        CHECK ((kind IN ('reverse', 'uncancel')) = (outcome IS NULL AND payout IS NULL)),
    -- A cancellation voids the bet: the stake comes back, nothing else.
    CONSTRAINT bet_settlements_cancel_is_void
        CHECK (kind <> 'cancel' OR outcome = 'void')
) WITH (
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
COMMENT ON TABLE bet_settlements IS
    'Append-only history of what happened to each bet. A version is one effect (settle: an '
    'outcome with its payout; cancel: a void) and optionally its reversal (reverse, uncancel). '
    'A correction is reverse(v) then settle(v+1); rollback_result is reverse(v) alone (the bet '
    'is open again); a cancel after settlement is reverse(v) then cancel(v+1). The effective '
    'settlement of a bet is its highest-version effect that has no reversal, if any. No foreign '
    'key to bets (per-bet table; the future partitioned bets table would need placed_at in it).';
COMMENT ON COLUMN bet_settlements.payout IS
    'Minor units credited to available for this effect (stake included; 0 for lost). NULL for '
    'reversals, which undo exactly the effect of their version.';
COMMENT ON COLUMN bet_settlements.reversal IS
    'Generated: whether this row undoes the effect of its version. Part of the key.';
COMMENT ON COLUMN bet_settlements.prior_version IS
    'Generated: the version of the row this row requires (see bet_settlements_prior_fkey).';

-- A bet's settlement rows by event, for a batch's "already handled by this event" probe. (Reading
-- them through the primary key instead, to save the index's WAL, made the engine's run of
-- scripts/bench-settlement three times slower: 24.5 s instead of 8.5 s.)
CREATE INDEX bet_settlements_event_idx ON bet_settlements (result_event_id, bet_id);

-- --- Idempotency ---------------------------------------------------------------------------------

CREATE TABLE idempotency_keys (
    account_id      bigint      NOT NULL,
    idempotency_key text        NOT NULL CHECK (octet_length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint     text        NOT NULL CHECK (octet_length(fingerprint) BETWEEN 1 AND 128),
    response        jsonb,
    bet_id          bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, idempotency_key),
    CONSTRAINT idempotency_bet_needs_response CHECK (bet_id IS NULL OR response IS NOT NULL)
) WITH (
    fillfactor = 70,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_limit = 1000
);
COMMENT ON TABLE idempotency_keys IS
    'The first result for (account, key), success or refusal, returned to every retry (Stripe''s '
    'contract). Its own table so that bets can be partitioned by placed_at: a unique constraint '
    'on a partitioned table must include the partition key. The placement inserts the row first '
    '(ON CONFLICT DO NOTHING RETURNING) and stores the response at the end of the same '
    'transaction: that update touches no indexed column, so it is HOT within the fillfactor '
    'room. Purged by created_at in batches.';
COMMENT ON COLUMN idempotency_keys.fingerprint IS
    'Hash of the request parameters; the same key with another fingerprint is refused '
    '(idempotency_key_reused).';
COMMENT ON COLUMN idempotency_keys.response IS
    'The reply stored for retries; NULL only inside the transaction that claimed the key.';

CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- --- Market exposure -----------------------------------------------------------------------------

CREATE TABLE market_exposure (
    market_id       bigint   NOT NULL REFERENCES markets,
    shard           smallint NOT NULL CHECK (shard BETWEEN 0 AND 63),
    liability       bigint   NOT NULL DEFAULT 0 CHECK (liability >= 0),
    liability_limit bigint   NOT NULL CHECK (liability_limit > 0),
    PRIMARY KEY (market_id, shard),
    CONSTRAINT market_exposure_within_limit CHECK (liability <= liability_limit)
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_threshold = 500,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_limit = 1000
);
COMMENT ON TABLE market_exposure IS
    'A market''s liability spread over exposure_shards rows so that a popular market does not '
    'serialise its placements on one row lock. A placement updates one shard with '
    '"liability + $x <= liability_limit" in its WHERE (0 rows = refusal, no error); the CHECK '
    'is the backstop. Tiny and very hot: fillfactor 50, vacuumed after a fixed number of dead '
    'rows. The FK to markets is checked at market creation only (the hot updates change no key).';
COMMENT ON COLUMN market_exposure.liability IS
    'Minor units the book stands to lose on this shard''s bets.';
COMMENT ON COLUMN market_exposure.liability_limit IS
    'This shard''s share of markets.liability_limit.';

-- --- Outbox --------------------------------------------------------------------------------------

CREATE TABLE outbox (
    outbox_id  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    xact_id    xid8        NOT NULL DEFAULT pg_current_xact_id(),
    topic      text        NOT NULL CHECK (octet_length(topic) BETWEEN 1 AND 64),
    account_id bigint,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
) WITH (
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_limit = 1000
);
COMMENT ON TABLE outbox IS
    'Events written in the transaction that caused them (bet placed, bet settled), consumed by '
    'the relay. Rows are inserted and later purged, never updated: fillfactor stays 100 because '
    'free space kept for updates that never come is only waste.';
COMMENT ON COLUMN outbox.xact_id IS
    'Writing transaction. outbox_id order is not commit order (a lower id can commit later), so '
    'a consumer reads in (xact_id, outbox_id) order and only rows with xact_id < '
    'pg_snapshot_xmin(pg_current_snapshot()): those transactions are all finished, and no row '
    'can appear behind the cursor later.';

CREATE INDEX outbox_xact_idx ON outbox (xact_id, outbox_id);

CREATE TABLE outbox_cursors (
    consumer       text        PRIMARY KEY CHECK (octet_length(consumer) BETWEEN 1 AND 64),
    last_xact_id   xid8        NOT NULL DEFAULT '0',
    last_outbox_id bigint      NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL DEFAULT now()
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_threshold = 500,
    autovacuum_vacuum_scale_factor = 0
);
COMMENT ON TABLE outbox_cursors IS
    'Per consumer, the last (xact_id, outbox_id) it processed, updated in the transaction that '
    'records the processing. A few rows updated after every relay batch: fillfactor 50.';

-- --- Settlement queue and progress ---------------------------------------------------------------

CREATE TABLE result_events (
    result_event_id bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    market_id       bigint      NOT NULL REFERENCES markets,
    seq             integer     NOT NULL CHECK (seq >= 1),
    event_key       text        NOT NULL UNIQUE CHECK (octet_length(event_key) BETWEEN 1 AND 255),
    -- void_open: the operator's void of the market's open bets (settled or cancelled bets
    -- keep their state). Never sent by a producer: only fulltime_void_overdue stores it.
    kind            text        NOT NULL
                                CHECK (kind IN ('result', 'rollback_result', 'cancel',
                                                'rollback_cancel', 'void_open')),
    payload         jsonb       NOT NULL,
    producer        text        NOT NULL CHECK (octet_length(producer) BETWEEN 1 AND 64),
    received_at     timestamptz NOT NULL DEFAULT now(),
    applied_at      timestamptz,
    skipped         jsonb,
    -- Only these four: a void_open that wrote nothing is refused nothing_to_void whatever its
    -- bets' skip codes (already_void, already_settled), and a result or cancel can only skip
    -- bet_cancelled or already_cancelled (fulltime_settle_finish).
    refusal         text        CHECK (refusal IN ('bet_cancelled', 'already_cancelled',
                                                   'nothing_to_rollback', 'nothing_to_void')),
    CONSTRAINT result_events_market_seq_key UNIQUE (market_id, seq)
);
COMMENT ON TABLE result_events IS
    'The durable settlement queue. A producer''s event is acknowledged after this insert commits; '
    'a repeated event_key or (market_id, seq) conflicts and is acknowledged as a duplicate '
    '(INSERT ... ON CONFLICT DO NOTHING). Applied per market in seq order; the backlog age is '
    'now() - received_at of the oldest event past settlement_progress.applied_seq.';
COMMENT ON COLUMN result_events.payload IS
    'The producer''s message as validated (outcomes, factors, cancel window).';
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

CREATE TABLE settlement_progress (
    market_id         bigint      PRIMARY KEY REFERENCES markets,
    applied_seq       integer     NOT NULL DEFAULT 0 CHECK (applied_seq >= 0),
    current_seq       integer,
    version           integer     NOT NULL DEFAULT 0 CHECK (version >= 0),
    checkpoint_bet_id bigint      NOT NULL DEFAULT 0 CHECK (checkpoint_bet_id >= 0),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- Placements that read the market as open before an event's intake committed must finish
    -- before the event is applied, or a late commit could land behind the checkpoint. Set when
    -- an event starts: the first transaction id not yet assigned then.
    fence_xid         xid8,
    -- The result in force for the market (NULL before any, and after rollback_result): what a
    -- rollback_cancel settles the restored bets with.
    effective_result_id bigint,
    -- The running counts of the event in progress, advanced with the checkpoint in each
    -- batch's transaction, so a batch that rolls back counts nothing and one that commits
    -- counts once.
    event_effects     bigint      NOT NULL DEFAULT 0 CHECK (event_effects >= 0),
    event_skipped     jsonb       NOT NULL DEFAULT '{}',
    -- Events apply strictly in order: the one in progress is the next one.
    CONSTRAINT settlement_progress_next_seq
        CHECK (current_seq IS NULL OR current_seq = applied_seq + 1),
    -- A checkpoint belongs to the event in progress; finishing an event resets it.
    CONSTRAINT settlement_progress_checkpoint_in_event
        CHECK (current_seq IS NOT NULL OR checkpoint_bet_id = 0)
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_threshold = 500,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_limit = 1000
);
COMMENT ON TABLE settlement_progress IS
    'Per-market checkpoint, updated in the same transaction as each settlement batch''s effects, '
    'so a worker killed mid-batch resumes after the last committed batch. One update per batch: '
    'fillfactor 50, no index beyond the key.';
COMMENT ON COLUMN settlement_progress.applied_seq IS 'Last result event fully applied.';
COMMENT ON COLUMN settlement_progress.current_seq IS
    'Event being applied (applied_seq + 1), or NULL between events.';
COMMENT ON COLUMN settlement_progress.version IS
    'Number of result versions applied to the market (a correction increments it). Per-bet '
    'versions live in bet_settlements and can run ahead of it (windowed cancels touch some bets).';
COMMENT ON COLUMN settlement_progress.checkpoint_bet_id IS
    'Highest bet_id of the current event already handled; the next batch starts after it.';
COMMENT ON COLUMN settlement_progress.fence_xid IS
    'pg_snapshot_xmax when the current event started; its batches wait until every transaction '
    'of this database with an older id has finished (pg_stat_activity.backend_xid), so no '
    'placement that read the market open can commit behind the checkpoint.';
COMMENT ON COLUMN settlement_progress.effective_result_id IS
    'The result event in force, re-applied to bets a rollback_cancel restores.';
COMMENT ON COLUMN settlement_progress.event_effects IS
    'Settlement rows the current event has written so far.';
COMMENT ON COLUMN settlement_progress.event_skipped IS
    'Bets the current event has skipped so far, per terminal-state code.';


-- --- Incidents -----------------------------------------------------------------------------------

-- An incident is one problem, seen for the first time at first_seen and again at every later
-- run that still finds it (last_seen). A run that finds the same problem again updates that
-- incident instead of adding one, so a drifted balance row is exactly one incident however many
-- runs see it; the problem's identity is (kind, subject). Nothing here corrects money: an
-- incident is closed (resolved_at) by the run that no longer finds the problem, or by an
-- operator's decision.
--
-- Kinds:
--   balance_drift        accounts.<side> differs from the ledger's sum for that side
--                        (expected = the ledger, actual = the row); side available, reserved
--                        or owed
--   currency_mismatch    a transfer whose currency differs from its account's
--   currency_imbalance   a currency's transfers do not sum to zero (expected 0, actual = sum)
--   overdue_reservation  a market whose open bets (their reservations) are past its settlement
--                        deadline plus the grace period (expected = the deadline in epoch
--                        seconds). One incident per market, not per bet: a market's open bets
--                        share their owner and deadline, and one market can hold a million.
CREATE TABLE incidents (
    incident_id bigint        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text          NOT NULL
                              CHECK (kind IN ('balance_drift', 'currency_mismatch',
                                              'currency_imbalance', 'overdue_reservation')),
    account_id  bigint,
    currency    currency_code,
    side        text          CHECK (side IN ('available', 'reserved', 'owed')),
    expected    bigint,
    actual      bigint,
    details     jsonb         NOT NULL DEFAULT '{}',
    first_seen  timestamptz   NOT NULL DEFAULT now(),
    subject     text          NOT NULL CHECK (octet_length(subject) BETWEEN 1 AND 200),
    market_id   bigint,
    bet_id      bigint,
    last_seen   timestamptz   NOT NULL DEFAULT now(),
    runs        integer       NOT NULL DEFAULT 1 CHECK (runs >= 1),
    resolved_at timestamptz,
    resolution  text          CHECK (octet_length(resolution) <= 500),
    CONSTRAINT incidents_resolution_when_resolved
        CHECK ((resolved_at IS NULL) = (resolution IS NULL))
);
COMMENT ON TABLE incidents IS
    'Problems the reconciler and the reservation sweeper found: one row per problem (kind, '
    'subject) while it lasts, first_seen / last_seen / runs updated by every run that finds it '
    'again; closed with resolved_at and a resolution when a later run no longer finds it or an '
    'operator acts. Never corrects money.';
COMMENT ON COLUMN incidents.subject IS
    'What the incident is about, stable across runs: account:<id>:<side>, currency:<code>, '
    'transfer:<id>, market:<id> (overdue_reservation: the market whose open bets are past their '
    'deadline).';
COMMENT ON COLUMN incidents.expected IS
    'balance_drift: the ledger''s sum; currency_imbalance: 0; overdue_reservation: the deadline '
    '(epoch seconds).';
COMMENT ON COLUMN incidents.actual IS
    'balance_drift: the balance row (NULL: no such account); currency_imbalance: the '
    'currency''s sum; currency_mismatch: the transfer''s amount; overdue_reservation: the '
    'reserved stake of the market''s open bets (NULL when they are in several currencies: '
    'details.reserved has each).';

CREATE INDEX incidents_first_seen_idx ON incidents (first_seen);
CREATE INDEX incidents_account_idx ON incidents (account_id) WHERE account_id IS NOT NULL;
-- One open incident per problem: a run that sees it again updates it (ON CONFLICT ... DO UPDATE).
CREATE UNIQUE INDEX incidents_open_subject_idx ON incidents (kind, subject)
    WHERE resolved_at IS NULL;
CREATE INDEX incidents_market_idx ON incidents (market_id) WHERE market_id IS NOT NULL;

-- --- Codes ---------------------------------------------------------------------------------------

-- Every fixed code that the schema stores or the SQL functions return and the engine reads, once,
-- per domain. The engine's copy is include/fulltime/db/codes.hpp; tests/db/codes_pgtest.cpp
-- proves that the two agree exactly per domain, and that every CHECK constraint listing codes
-- lists exactly its domain's. Those CHECKs are not turned into foreign keys to this table: a
-- foreign key takes a FOR KEY SHARE lock on the referenced row for every insert, and bets,
-- settlement rows and transfers are inserted on the hot paths (see the header). A code is added
-- by a numbered migration that inserts it here and widens the CHECK, together with the header.
CREATE TABLE fulltime_codes (
    domain      text NOT NULL CHECK (domain ~ '^[a-z][a-z_]{0,63}$'),
    code        text NOT NULL CHECK (code ~ '^[a-z][a-z_]{0,63}$'),
    description text NOT NULL CHECK (octet_length(description) BETWEEN 1 AND 500),
    PRIMARY KEY (domain, code)
);
COMMENT ON TABLE fulltime_codes IS
    'The fixed codes the schema stores and the SQL functions return, per domain; the engine''s '
    'copy is include/fulltime/db/codes.hpp, kept equal by tests/db/codes_pgtest.cpp. Read-only '
    'at run time.';

INSERT INTO fulltime_codes (domain, code, description) VALUES
    -- fulltime_settle_step(...).status
    ('settle_status', 'idle', 'no event to apply'),
    ('settle_status', 'gap', 'the next event by seq is missing while a later one is stored'),
    ('settle_status', 'started', 'the next event was started (its fence set)'),
    ('settle_status', 'fenced', 'a transaction older than the event''s start is still running'),
    ('settle_status', 'batch', 'one batch of bets was settled and the checkpoint advanced'),
    ('settle_status', 'finished', 'the event is applied; the next one may start'),
    -- result_events.skipped keys: why an event did nothing to one bet
    ('bet_skip', 'bet_cancelled', 'a result or rollback_result for a bet whose cancel is in force'),
    ('bet_skip', 'already_cancelled', 'a cancel for a bet whose cancel is in force'),
    ('bet_skip', 'nothing_to_rollback',
     'a rollback_result for a bet with no effect in force, or a rollback_cancel for a bet with '
     'no cancel in force'),
    ('bet_skip', 'already_void', 'a void_open for a bet whose cancel is in force'),
    ('bet_skip', 'already_settled', 'a void_open for a bet whose settlement is in force'),
    -- result_events.refusal: why an event wrote no settlement row at all
    ('event_refusal', 'nothing_to_rollback',
     'a rollback_result or rollback_cancel found nothing of its kind in force'),
    ('event_refusal', 'nothing_to_void', 'a void_open found no open bet'),
    ('event_refusal', 'bet_cancelled',
     'a result whose bets were all skipped: their cancel is in force'),
    ('event_refusal', 'already_cancelled', 'a cancel whose bets were all cancelled already'),
    -- result_events.kind
    ('result_event_kind', 'result', 'settles the market''s bets with its outcomes'),
    ('result_event_kind', 'rollback_result',
     'reverses the result in force; the bets are open again'),
    ('result_event_kind', 'cancel', 'voids the bets placed in its window'),
    ('result_event_kind', 'rollback_cancel',
     'restores cancelled bets and settles them with the result in force'),
    ('result_event_kind', 'void_open', 'the operator''s void of the market''s open bets'),
    -- fulltime_record_result(...).outcome
    ('record_result_outcome', 'stored', 'the event was stored'),
    ('record_result_outcome', 'duplicate', 'the same event was stored before'),
    ('record_result_outcome', 'conflict', 'another event holds the event_key or (market, seq)'),
    ('record_result_outcome', 'unknown_market', 'no such market'),
    ('record_result_outcome', 'unknown_selection',
     'an outcome names a selection of another market or none'),
    -- fulltime_void_overdue(...).outcome
    ('void_overdue_outcome', 'stored', 'the void_open event was stored'),
    ('void_overdue_outcome', 'duplicate', 'the same void was stored before'),
    ('void_overdue_outcome', 'conflict',
     'the event_key belongs to another event, or the next seq kept being taken'),
    ('void_overdue_outcome', 'unknown_market', 'no such market'),
    ('void_overdue_outcome', 'not_overdue',
     'the market''s reservations are not past their deadline'),
    ('void_overdue_outcome', 'nothing_to_void', 'the market holds no open bet'),
    -- fulltime_note_overdue(...).outcome
    ('note_overdue_outcome', 'opened', 'a new overdue_reservation incident'),
    ('note_overdue_outcome', 'updated', 'the open incident was seen again'),
    ('note_overdue_outcome', 'resolved', 'the open incident was closed'),
    ('note_overdue_outcome', 'none', 'nothing to record'),
    -- fulltime_place(...).outcome and fulltime_place_group(...).outcome
    ('place_outcome', 'placed', 'the bet was placed'),
    ('place_outcome', 'rejected', 'the placement was refused (response.code says why)'),
    ('place_outcome', 'replayed', 'a retry: the stored response of the first attempt'),
    ('place_outcome', 'key_reused', 'the idempotency key was used with other parameters'),
    -- fulltime_place(...).response->>'code' when refused
    ('place_refusal', 'idempotency_key_reused',
     'the idempotency key was used with other parameters'),
    ('place_refusal', 'insufficient_funds', 'available cannot cover the stake, or no such account'),
    ('place_refusal', 'unknown_selection', 'no such selection'),
    ('place_refusal', 'market_suspended', 'the market is not open'),
    ('place_refusal', 'odds_changed', 'the current odds do not satisfy the accept mode'),
    ('place_refusal', 'stake_limit', 'the stake is outside the market''s limits'),
    ('place_refusal', 'liability_limit', 'the market''s liability limit would be exceeded'),
    -- fulltime_place(p_accept): which current odds the bettor accepts
    ('place_accept', 'exact', 'only the asked odds'),
    ('place_accept', 'better', 'the asked odds or better'),
    ('place_accept', 'any', 'whatever the current odds are'),
    -- markets.status
    ('market_status', 'open', 'bets are accepted'),
    ('market_status', 'suspended', 'bets are refused until the market is resumed'),
    ('market_status', 'closed', 'final: no further bets or changes'),
    -- bet_settlements.kind
    ('settlement_kind', 'settle', 'an effect: an outcome with its payout'),
    ('settlement_kind', 'reverse', 'undoes the settle of its version'),
    ('settlement_kind', 'cancel', 'an effect: the bet is void, the stake comes back'),
    ('settlement_kind', 'uncancel', 'undoes the cancel of its version'),
    -- bet_settlements.outcome
    ('settlement_outcome', 'won', 'a win'),
    ('settlement_outcome', 'lost', 'a loss'),
    ('settlement_outcome', 'void', 'the stake comes back'),
    ('settlement_outcome', 'half_won', 'a win with a void factor'),
    ('settlement_outcome', 'half_lost', 'a loss with a void factor'),
    ('settlement_outcome', 'dead_heat', 'a win with a dead-heat factor'),
    -- ledger_transfers.debit_side and .credit_side
    ('ledger_side', 'available', 'a bettor''s money to stake or withdraw'),
    ('ledger_side', 'reserved', 'a bettor''s money held by open bets'),
    ('ledger_side', 'owed', 'the house''s claim on a bettor (reversed winnings already spent)'),
    ('ledger_side', 'house', 'the house, per currency'),
    ('ledger_side', 'cash', 'money outside the book (deposits, withdrawals), per currency'),
    -- incidents.kind
    ('incident_kind', 'balance_drift', 'a balance row differs from its ledger sum'),
    ('incident_kind', 'currency_mismatch', 'a transfer''s currency differs from its account''s'),
    ('incident_kind', 'currency_imbalance', 'a currency''s transfers do not sum to zero'),
    ('incident_kind', 'overdue_reservation', 'a market''s open bets are past their deadline'),
    -- incidents.side
    ('incident_side', 'available', 'accounts.available'),
    ('incident_side', 'reserved', 'accounts.reserved'),
    ('incident_side', 'owed', 'accounts.owed'),
    -- outbox.topic
    ('outbox_topic', 'bet_placed', 'a bet was placed'),
    ('outbox_topic', 'bet_settled', 'a settle or cancel of a bet'),
    ('outbox_topic', 'bet_unsettled', 'a reversal that leaves the bet open');

-- --- Settlement step ---------------------------------------------------------------------------

-- One bet of a settlement batch as fulltime_settle_plan decided it, passed on to
-- fulltime_settle_legs (db/functions/fulltime_settle_step.sql explains the parts). A type is
-- schema: changing it is a numbered migration that drops the two functions first.
CREATE TYPE fulltime_settle_bet AS (
    bet_id      bigint,
    account_id  bigint,
    currency    currency_code,
    stake       bigint,
    cur_version integer,   -- the bet's latest effect (NULL: none) ...
    cur_kind    text,      -- ... settle or cancel ...
    cur_payout  bigint,    -- ... and its payout
    rev         boolean,   -- reverse that effect
    new_kind    text,      -- then write this effect (settle, cancel; NULL: none) ...
    new_version integer,   -- ... under this version ...
    new_outcome text,      -- ... with this outcome ...
    new_payout  bigint,    -- ... and payout
    skip_code   text       -- why the event does nothing to the bet (fulltime_codes bet_skip)
);
COMMENT ON TYPE fulltime_settle_bet IS
    'One bet of a settlement batch: its effect in force, and what the event does to it.';
