-- The standby's replication state on the primary (async, sync, ...), by its application_name.
SELECT sync_state FROM pg_stat_replication WHERE application_name = %(name)s
