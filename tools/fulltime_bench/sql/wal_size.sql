-- The WAL between two LSNs, as a person reads a size.
SELECT pg_size_pretty(pg_wal_lsn_diff(%(lsn1)s::pg_lsn, %(lsn0)s::pg_lsn))
