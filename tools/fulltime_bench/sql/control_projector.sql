-- The settlement control's read model (fulltime_bench.settlement), in the background beside
-- its placements and its steps: the projector's pages (fulltime_project, proj.rows outbox rows
-- each) back to back while rows come, a rest of proj.rest seconds when caught up (the engine's
-- read.projector_interval_ms). With proj.through = 1 it runs beside the steps, until the
-- result is applied and it has caught up with it; otherwise it yields to the settlement as the
-- engine's projector does (read.projector_yield_ms, proj.yield seconds): from the result (its
-- settlement_progress row) it skips its pages for at most that long, then catches up in full
-- before it may skip again, until the result is applied. (A projector that stopped at the
-- result for good would leave a settlement longer than the yield, a million bets, with the
-- engine's projector catching up beside it and not the control's.) Settings: PGOPTIONS -c.
DO $$
DECLARE
    r record;
    n integer := 0;
    through boolean := current_setting('proj.through') = '1';
    yield_s float8 := current_setting('proj.yield')::float8;
    skip_from timestamptz;           -- when the current skip began
    catching_up boolean := false;    -- the skip is spent: pages until caught up
BEGIN
    LOOP
        IF NOT through AND EXISTS (SELECT 1 FROM settlement_progress WHERE market_id = 1) THEN
            EXIT WHEN EXISTS (SELECT 1 FROM settlement_progress
                              WHERE market_id = 1 AND applied_seq >= 1);
            IF NOT catching_up THEN
                skip_from := coalesce(skip_from, clock_timestamp());
                IF yield_s <= 0 OR clock_timestamp() < skip_from + make_interval(secs => yield_s) THEN
                    PERFORM pg_sleep(0.05);
                    CONTINUE;
                END IF;
                catching_up := true;
            END IF;
        END IF;
        SELECT * INTO r FROM fulltime_project('projector', current_setting('proj.rows')::integer);
        COMMIT;
        n := n + 1;
        IF catching_up AND r.caught_up THEN
            catching_up := false;
            skip_from := clock_timestamp();
        END IF;
        EXIT WHEN (through AND r.caught_up AND EXISTS (SELECT 1 FROM settlement_progress
                                                       WHERE market_id = 1 AND applied_seq >= 1))
                  OR n > 1000000;
        IF r.caught_up THEN PERFORM pg_sleep(current_setting('proj.rest')::float8); END IF;
    END LOOP;
END $$;
