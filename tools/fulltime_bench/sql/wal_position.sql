-- The cluster's WAL position in bytes.
SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')
