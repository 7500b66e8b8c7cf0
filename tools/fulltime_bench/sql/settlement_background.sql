-- What else the database was doing, sampled beside the settlement's series: the relations
-- autovacuum workers were vacuuming ("-": none; another database's as name:oid) and whether
-- the checkpointer was writing (1) or idle (0), so that a placement p99 spike can be told from
-- settlement's own cost.
SELECT (SELECT coalesce(string_agg(CASE WHEN p.datname = current_database()
                                        THEN p.relid::regclass::text
                                        ELSE p.datname || ':' || p.relid END, ',' ORDER BY p.pid),
                        '-')
        FROM pg_stat_progress_vacuum p),
       (SELECT count(*) FROM pg_stat_activity a
        WHERE a.backend_type = 'checkpointer' AND a.wait_event IS DISTINCT FROM 'CheckpointerMain')
