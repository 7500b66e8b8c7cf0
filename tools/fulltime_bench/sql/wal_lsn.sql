-- The primary's current WAL position (an LSN).
SELECT pg_current_wal_lsn()::text
