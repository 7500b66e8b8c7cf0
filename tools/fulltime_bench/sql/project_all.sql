-- The read model's projector brought up to date: fulltime_project pages of proj.rows outbox
-- rows (PGOPTIONS -c proj.rows=N), back to back, a transaction each, until it has caught up
-- (the last page commits with the DO block).
DO $$
BEGIN
    FOR page IN 1..1000000 LOOP
        EXIT WHEN (SELECT caught_up
                   FROM fulltime_project('projector', current_setting('proj.rows')::integer));
        COMMIT;
    END LOOP;
END $$;
