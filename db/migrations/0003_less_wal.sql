-- Less WAL per settled bet (issue 11; docs/benchmarks.md, "WAL per settled bet"). Every index on
-- a table that settlement appends to costs each settled bet one index insert record in the WAL,
-- and every placement commit waits behind that WAL. This migration drops the indexes on the
-- append-only tables that no query of the engine, the reconciliation or the audit reads through;
-- docs/schema.md names the queries that touch each table and what serves them.

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
