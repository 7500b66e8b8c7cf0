-- Settlement lanes (issue 11; docs/design.md, "Settlement"; docs/schema.md,
-- "settlement_lanes"): one large event may be settled by several database backends at once.
--
-- Until now a market's event was settled by one chain of steps under its progress row's lock,
-- one backend at a time, so one market could never settle faster than one backend of the
-- database runs its batches. When an event starts on a market with more bets than
-- p_lanes * p_batch_size, fulltime_settle_step now splits its bets into p_lanes lanes by
-- account (account_id % lanes): each lane has a row here with its own checkpoint and running
-- counts, locked by each of its batches (fulltime_settle_lane), so the lanes run side by side
-- and a lane's batches one after another. Lanes share no account, so no balance row and no bet:
-- exactly once holds per lane as it held per market. The market's step finishes the event once
-- every lane is done, with the lanes' counts summed.
--
-- The lane count of the event in progress is kept on its progress row, so a restart, or an
-- instance configured differently, finishes the event in the lanes it started with.
ALTER TABLE settlement_progress
    ADD COLUMN lanes smallint NOT NULL DEFAULT 1 CHECK (lanes BETWEEN 1 AND 64);
ALTER TABLE settlement_progress
    ADD CONSTRAINT settlement_progress_lanes_in_event CHECK (current_seq IS NOT NULL OR lanes = 1);
COMMENT ON COLUMN settlement_progress.lanes IS
    'Lanes the current event''s bets are settled in (1: one chain of batches on this row''s '
    'checkpoint; more: settlement_lanes rows, account_id % lanes).';
COMMENT ON COLUMN settlement_progress.fence_xid IS
    'pg_snapshot_xmax when the current event started; its batches wait until every transaction '
    'of this database with an older id has finished (pg_stat_activity.backend_xid), so no '
    'placement that read the market open can commit behind the checkpoint. NULL once that '
    'held: no transaction can be assigned an older id later, so the fence is read once.';

CREATE TABLE settlement_lanes (
    market_id         bigint      NOT NULL REFERENCES settlement_progress ON DELETE CASCADE,
    lane              smallint    NOT NULL CHECK (lane >= 0 AND lane < 64),
    seq               bigint      NOT NULL,   -- the event the lane belongs to
    checkpoint_bet_id bigint      NOT NULL DEFAULT 0 CHECK (checkpoint_bet_id >= 0),
    effects           bigint      NOT NULL DEFAULT 0 CHECK (effects >= 0),
    skipped           jsonb       NOT NULL DEFAULT '{}',
    done              boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (market_id, lane)
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_threshold = 500,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_limit = 1000
);
COMMENT ON TABLE settlement_lanes IS
    'One row per lane of an event settled in lanes (settlement_progress.lanes > 1), written when '
    'the event starts and deleted when it finishes: the lane''s checkpoint and running counts, '
    'updated in each of its batches'' transactions, as settlement_progress''s for one lane. '
    'One update per batch: fillfactor 50, no index beyond the key.';
COMMENT ON COLUMN settlement_lanes.lane IS
    'The lane''s bets are the event''s market''s bets with account_id % lanes = lane.';
COMMENT ON COLUMN settlement_lanes.done IS
    'A batch of this lane found no bet after its checkpoint.';

INSERT INTO fulltime_codes (domain, code, description) VALUES
    ('settle_status', 'lanes',
     'the event is settled in lanes (fulltime_settle_lane); not every lane is done');

-- fulltime_settle_step takes the lane count for the events it starts and returns the lane
-- count of the event in progress; fulltime_settle_plan reads one lane's bets.
DROP FUNCTION IF EXISTS fulltime_settle_step(bigint, integer, integer);
DROP FUNCTION IF EXISTS fulltime_settle_plan(bigint, bigint, integer, bigint, text, jsonb,
                                             timestamptz, timestamptz);
