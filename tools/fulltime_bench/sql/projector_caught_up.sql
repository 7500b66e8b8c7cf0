-- A row when the read model's projector has caught up: its cursor is past every outbox row
-- (tests/e2e/test_reads.py's probe). Not "projections.consumed_below >= pg_snapshot_xmax(...)":
-- an idle projector page returns without moving the horizon, so it stays below the xmax of any
-- transaction that came after the last outbox row (the settlement's own bookkeeping, the
-- history keeper's).
SELECT 1 FROM outbox_cursors c WHERE c.consumer = 'projector'
AND NOT EXISTS (SELECT 1 FROM outbox o WHERE (o.xact_id, o.outbox_id)
                > (c.last_xact_id, c.last_outbox_id))
