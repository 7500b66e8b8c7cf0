-- Less WAL per settled bet (issue 11; docs/benchmarks.md, "WAL per settled bet"). Every index on
-- a table that settlement appends to costs each settled bet one index insert record in the WAL,
-- and every placement commit waits behind that WAL. This migration drops the indexes on the
-- append-only tables that no query of the engine, the reconciliation or the audit reads through
-- (docs/schema.md names the queries that touch each table and what serves them), drops the old
-- signature of fulltime_settle_legs, and records the shorter settlement entry keys.

-- bet_settlements (result_event_id, bet_id): served only the batch's "already handled by this
-- event" probe, which now reads the bet's newest row through the primary key (bet_id, version,
-- reversal) instead (db/functions/fulltime_settle_plan.sql). Nothing else reads settlement rows
-- by event.
DROP INDEX bet_settlements_event_idx;

-- ledger_transfers (bet_id) WHERE bet_id IS NOT NULL: no statement finds a bet's transfers by
-- bet_id. Settlement takes what it reverses from the settlement rows (the payout in force), the
-- audit's per-bet invariants aggregate or join the whole ledger (bet_ledger_matches_state) or
-- probe the reservation by its entry_key (bet_has_one_reservation), and the reconciliation
-- reads by account and by transfer_id. Every bet's reservation and settlement legs paid its
-- insert in the WAL.
DROP INDEX ledger_transfers_bet_idx;

-- outbox: one key instead of two. Every reader takes the outbox in (xact_id, outbox_id) order
-- after a cursor (db/push_statements.cpp, docs/schema.md "Outbox"), through outbox_xact_idx;
-- nothing reads by outbox_id alone. The primary key becomes (xact_id, outbox_id) and the
-- separate index on it goes: the cursor's order keeps its unique index (and a replica identity
-- for a purge), and every outbox row (one per placed bet, one per settled bet) pays one index
-- insert in the WAL instead of two.
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey;
DROP INDEX outbox_xact_idx;
ALTER TABLE outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (xact_id, outbox_id);

-- fulltime_settle_legs loses its market argument (its outbox rows no longer copy the market,
-- the currency and the event into each payload); its file creates the new signature.
DROP FUNCTION IF EXISTS fulltime_settle_legs(bigint, bigint, fulltime_settle_bet[]);

-- Settlement legs' entry keys are shorter from now on (db/functions/fulltime_settle_legs.sql):
-- bet:<bet>:v<version>:<code>, the code being the initials of the kind and the leg.
COMMENT ON COLUMN ledger_transfers.entry_key IS
    'Exactly-once key: bet:<bet_id>:reserve; settlement legs bet:<bet_id>:v<version>:<code>, '
    'code ss | sp (settle: stake, payout), rs | rp (reverse: stake, payout), cr (cancel: '
    'refund), ur (uncancel: refund), written as bet:<bet_id>:v<version>:<kind>:<leg> before '
    'migration 0003; advance:<event>:<account>:<last bet>, repay:<event>:<account>:<last bet>, '
    'deposit:<account_id>:<key>, withdrawal:<account_id>:<key>. A retried effect conflicts here '
    'instead of moving money twice.';
