-- Whether a standby has replayed up to the LSN given.
SELECT pg_last_wal_replay_lsn() >= %(lsn)s::pg_lsn
