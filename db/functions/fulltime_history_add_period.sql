-- Time partitions (docs/schema.md, "Time partitions"): one period's row and its partitions,
-- called by fulltime_history_ensure.
--
-- Each partition is created as a plain table (LIKE its parent) and then attached: ATTACH
-- PARTITION takes SHARE UPDATE EXCLUSIVE on the parent, which placements and settlements (ROW
-- EXCLUSIVE) do not wait for, where CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE and
-- queue every placement behind it. A CHECK matching the bound spares ATTACH its scan. The
-- objects a partitioned parent cannot hold are made here per partition: the ledger's unique
-- entry_key and the settlement rows' version key (see migration 0005).
CREATE OR REPLACE FUNCTION fulltime_history_add_period(p_start timestamptz, p_end timestamptz)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_suffix text := fulltime_history_suffix(p_start);
    v_table  text;
    v_part   text;
    v_key    text;
BEGIN
    INSERT INTO history_periods (period_start, period_end) VALUES (p_start, p_end);
    FOREACH v_table IN ARRAY ARRAY['bets', 'bet_settlements', 'ledger_transfers', 'outbox'] LOOP
        v_part := v_table || '_' || v_suffix;
        v_key := CASE WHEN v_table IN ('bets', 'bet_settlements') THEN 'placed_at'
                      ELSE 'created_at' END;
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                       'INCLUDING GENERATED INCLUDING STORAGE)', v_part, v_table);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I >= %L AND %I < %L)',
                       v_part, v_part || '_bound', v_key, p_start, v_key, p_end);
        -- The append-only tables' vacuum settings (docs/schema.md, "Hot tables").
        IF v_table = 'outbox' THEN
            EXECUTE format('ALTER TABLE %I SET (autovacuum_vacuum_threshold = 1000, '
                           'autovacuum_vacuum_scale_factor = 0.02, '
                           'autovacuum_vacuum_insert_scale_factor = 0.05, '
                           'autovacuum_analyze_scale_factor = 0.05, '
                           'autovacuum_vacuum_cost_limit = 1000)', v_part);
        ELSE
            EXECUTE format('ALTER TABLE %I SET (autovacuum_vacuum_insert_scale_factor = 0.05, '
                           'autovacuum_analyze_scale_factor = 0.02)', v_part);
        END IF;
        IF v_table = 'ledger_transfers' THEN
            EXECUTE format('CREATE UNIQUE INDEX %I ON %I (entry_key)',
                           v_part || '_entry_key_idx', v_part);
        END IF;
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                       v_table, v_part, p_start, p_end);
        -- After ATTACH, which made the partition's primary key index from the parent's.
        IF v_table = 'bet_settlements' THEN
            EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY '
                           '(bet_id, prior_version, prior_reversal, placed_at) REFERENCES %I '
                           '(bet_id, version, reversal, placed_at)',
                           v_part, v_part || '_prior_fkey', v_part);
        END IF;
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', v_part, v_part || '_bound');
    END LOOP;
END;
$$;

COMMENT ON FUNCTION fulltime_history_add_period IS
    'Adds the period [p_start, p_end): its row and one partition of each partitioned table.';
