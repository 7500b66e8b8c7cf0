-- One outbox row per settlement step instead of one per settled bet (issue 11; docs/benchmarks.md,
-- "WAL per settled bet"). Every outbox row costs a tuple header, its own columns and one insert
-- into outbox_pkey in the WAL, about 300 bytes per settled bet, and every placement commit waits
-- behind that WAL. A step's settlements now go out as one `settlement_batch` row whose payload
-- lists them (db/functions/fulltime_settle_legs.sql; docs/schema.md, "Outbox", gives the
-- payload). TOAST compresses the list: a batch of 500 costs about 10 bytes per bet.
--
-- bet_settled and bet_unsettled stay as codes: rows written before this migration keep them, and
-- the push loop still reads them (a deployment upgraded mid-settlement pushes both kinds).
INSERT INTO fulltime_codes (domain, code, description) VALUES
    ('outbox_topic', 'settlement_batch',
     'the settlements, cancels and reversals one settlement step wrote, one entry each');

-- fulltime_settle_legs loses its `pushed` result (the count of outbox rows, which no caller read);
-- a function's result type cannot be replaced in place, so the old one goes and its file creates
-- the new one.
DROP FUNCTION IF EXISTS fulltime_settle_legs(bigint, fulltime_settle_bet[]);

COMMENT ON TABLE outbox IS
    'Events written in the transaction that caused them (one row per bet placed, one row per '
    'settlement step listing its bets), consumed by the relay. Rows are inserted and later '
    'purged, never updated: fillfactor stays 100 because free space kept for updates that never '
    'come is only waste.';
