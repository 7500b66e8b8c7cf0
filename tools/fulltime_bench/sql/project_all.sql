-- The read model's projector brought up to date: fulltime_project pages of proj.rows outbox
-- rows (PGOPTIONS -c proj.rows=N), back to back, a transaction each, until it has caught up.
DO $$
DECLARE
    r record;
    n integer := 0;
BEGIN
    LOOP
        SELECT * INTO r FROM fulltime_project('projector', current_setting('proj.rows')::integer);
        COMMIT;
        n := n + 1;
        EXIT WHEN r.caught_up OR n > 1000000;
    END LOOP;
END $$;
