-- The reads benchmark: the database's block, tuple and transaction counts so far
-- (pg_stat_database; a backend's counts reach it within a second of its going idle).
SELECT blks_hit, blks_read, tup_returned, tup_fetched, xact_commit, xact_rollback
FROM pg_stat_database WHERE datname = current_database()
