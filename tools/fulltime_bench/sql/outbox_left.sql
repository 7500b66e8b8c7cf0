-- Outbox rows up to the id given that the push loop has not purged yet.
SELECT count(*) FROM outbox WHERE outbox_id <= %(last)s
