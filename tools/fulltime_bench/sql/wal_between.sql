-- The WAL bytes between two LSNs.
SELECT pg_wal_lsn_diff(%(end)s::pg_lsn, %(start)s::pg_lsn)
