-- No synchronous standby again (the superuser's to reset).
ALTER SYSTEM RESET synchronous_standby_names;
SELECT pg_reload_conf();
