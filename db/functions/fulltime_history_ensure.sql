-- Time partitions (docs/schema.md, "Time partitions"): the periods ahead of now. Every
-- partitioned table (bets, bet_settlements, ledger_transfers, outbox) has one partition per row
-- of history_periods; this function adds periods after the last one until p_until (default: now
-- plus history_settings.ahead_periods periods), so a placement never finds no partition for its
-- time. Called by the migration runner after every migrate and by the partition keeper on every
-- round (actors/partition_keeper.cpp).
--
-- Boundaries are aligned (fulltime_history_boundary): the first period after the history period
-- (which ends when migration 0005 ran) is therefore shorter than the others.
CREATE OR REPLACE FUNCTION fulltime_history_ensure(p_until timestamptz DEFAULT NULL)
RETURNS integer   -- periods added
LANGUAGE plpgsql
AS $$
DECLARE
    v_period interval;
    v_ahead  integer;
    v_until  timestamptz;
    v_start  timestamptz;
    v_end    timestamptz;
    v_added  integer := 0;
BEGIN
    -- One maker at a time (the runner and the keeper of several engines may call together).
    PERFORM pg_advisory_xact_lock(hashtext('fulltime_history'));
    SELECT s.period, s.ahead_periods INTO v_period, v_ahead FROM history_settings s;
    v_until := coalesce(p_until, clock_timestamp() + v_period * v_ahead);
    SELECT max(h.period_end) INTO v_start FROM history_periods h;
    WHILE v_start <= v_until LOOP
        v_end := fulltime_history_boundary(v_start, v_period);
        PERFORM fulltime_history_add_period(v_start, v_end);
        v_start := v_end;
        v_added := v_added + 1;
    END LOOP;
    RETURN v_added;
END;
$$;

COMMENT ON FUNCTION fulltime_history_ensure IS
    'Adds periods (and their partitions) after the last one until p_until, by default '
    'history_settings.ahead_periods periods past now. Returns how many it added.';
