-- Settles market 1 with the engine's steps, back to back from one session and with nothing
-- else running: fulltime_settle_step at the engine's batch size (PGOPTIONS -c wal.batch=N), a
-- transaction each, until it answers finished (or idle). The settlement benchmark's WAL run:
-- the WAL it writes is settlement's alone.
DO $$
DECLARE
    r record;
    n integer := 0;
BEGIN
    LOOP
        SELECT * INTO r FROM fulltime_settle_step(1, current_setting('wal.batch')::integer, 200);
        COMMIT;
        n := n + 1;
        EXIT WHEN r.status IN ('finished', 'idle') OR n > 1000000;
        IF r.status IN ('fenced', 'gap') THEN PERFORM pg_sleep(0.005); END IF;
    END LOOP;
END $$;
