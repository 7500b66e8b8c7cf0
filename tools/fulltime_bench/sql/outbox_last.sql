-- The last outbox row's id (0 when there is none).
SELECT coalesce(max(outbox_id), 0) FROM outbox
