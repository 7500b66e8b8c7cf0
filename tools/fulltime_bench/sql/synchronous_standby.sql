-- Makes the standby named :'name' synchronous (the superuser's to set). psql: -v name=.
ALTER SYSTEM SET synchronous_standby_names = :'name';
SELECT pg_reload_conf();
