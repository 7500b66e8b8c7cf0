-- The settlement control's steps (fulltime_bench.settlement): with ctl.lane = -1 the market's
-- steps (fulltime_settle_step, which starts the event in ctl.lanes lanes; until it answers
-- finished, idle or lanes), else lane ctl.lane's batches (fulltime_settle_lane, until the lane
-- is finished), back to back from one session, a transaction each, ctl.batch bets a batch,
-- paced as the engine paces: settlement.duty_percent (ctl.duty) and a rate (ctl.rate bets/s,
-- shared evenly by the lanes; 0: none). Ends with a notice "control steps: N, last STATUS".
-- Settings: PGOPTIONS -c.
DO $$
DECLARE
    r record;
    n integer := 0;
    t timestamptz;
    t0 timestamptz := clock_timestamp();
    settled bigint := 0;
    lane integer := current_setting('ctl.lane')::integer;
    lanes integer := current_setting('ctl.lanes')::integer;
    rate numeric := current_setting('ctl.rate')::numeric
                    / CASE WHEN current_setting('ctl.lane')::integer >= 0 THEN lanes ELSE 1 END;
BEGIN
    LOOP
        t := clock_timestamp();
        IF lane < 0 THEN
            SELECT s.status, s.bets INTO r
            FROM fulltime_settle_step(1, current_setting('ctl.batch')::integer, 200, lanes) s;
        ELSE
            SELECT s.status, s.bets INTO r
            FROM fulltime_settle_lane(1, lane, current_setting('ctl.batch')::integer, 200) s;
        END IF;
        COMMIT;
        n := n + 1;
        -- Paced like settlement.duty_percent: after a step that took T, rest T * (100 - D) / D.
        IF r.status = 'batch' AND current_setting('ctl.duty')::integer < 100 THEN
            PERFORM pg_sleep(extract(epoch FROM clock_timestamp() - t)
                             * (100 - current_setting('ctl.duty')::integer)
                             / current_setting('ctl.duty')::integer);
        END IF;
        -- Paced to a rate (--control-rate): rest until the average so far is that rate.
        IF r.status = 'batch' AND rate > 0 THEN
            settled := settled + r.bets;
            PERFORM pg_sleep(greatest(0, extract(epoch FROM t0 - clock_timestamp())
                                         + settled / rate));
        END IF;
        EXIT WHEN r.status IN ('finished', 'idle', 'lanes') OR n > 100000;
        IF r.status IN ('fenced', 'gap') THEN PERFORM pg_sleep(0.005); END IF;
    END LOOP;
    RAISE NOTICE 'control steps: %, last %', n, r.status;
END $$;
