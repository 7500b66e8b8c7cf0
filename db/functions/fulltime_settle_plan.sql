-- Part of fulltime_settle_step (fulltime_settle_step.sql explains the step and its parts): the
-- plan of one batch. Reads the next p_batch_size bets of the market after p_after_bet_id and
-- decides, per bet, what the event does to it: reverse the effect in force (or not), then a new
-- effect with its outcome and payout (or none), or why it does nothing (the bet's terminal
-- state, counted per code). Read-only: one statement, so one snapshot, and every lookup is a
-- per-bet index probe, so a batch costs the same at the end of a large market as at its start.
--
-- Payouts, in integer minor units (stake S, odds O, void factor v and dead-heat factor d, each
-- in 1/10000 units): payout = floor(S*v + [win] * S*(1-v)*d*O). The fraction of a minor unit
-- below the exact payout stays with the house. Outcome names: void (v = 1), dead_heat (win,
-- d < 1), half_won (win, 0 < v < 1), won, half_lost (lose, 0 < v < 1), lost. A selection that a
-- result does not name loses.
--
-- Terminal states (fulltime_codes domain bet_skip). An event can meet a bet whose state makes
-- the event meaningless for it: a result for a bet whose cancel is in force, a second cancel, a
-- rollback with nothing in force, an operator's void of a bet that is no longer open. Such a bet
-- is skipped (no row, no money) and counted under its code in this same statement (no per-bet
-- query); fulltime_settle_checkpoint carries the counts across the event's batches and
-- fulltime_settle_finish writes them on the event's row:
--   bet_cancelled        a result or rollback_result for a bet whose cancel is in force
--   already_cancelled    a cancel for a bet whose cancel is in force
--   nothing_to_rollback  a rollback_result for a bet with no effect in force, or a
--                        rollback_cancel for a bet with no cancel in force
--   already_void         a void_open for a bet whose cancel is in force
--   already_settled      a void_open for a bet whose settlement is in force
CREATE OR REPLACE FUNCTION fulltime_settle_plan(
    p_market_id    bigint,
    p_after_bet_id bigint,       -- the checkpoint: the batch starts after it
    p_batch_size   integer,
    p_event_id     bigint,       -- the event being applied ...
    p_event_kind   text,         -- ... its kind ...
    p_outcomes     jsonb,        -- ... the outcomes that settle (NULL: none) ...
    p_from         timestamptz,  -- ... and a cancel's window (NULL: open-ended)
    p_to           timestamptz,
    p_lane         integer,      -- the lane (0 when the event is not settled in lanes) ...
    p_lanes        integer,      -- ... of the event's lanes (1: every bet of the market)
    OUT batch      fulltime_settle_bet[],  -- every bet of the batch, in bet_id order (NULL: none)
    OUT skipped    jsonb)        -- the batch's skipped bets per code (NULL: none)
LANGUAGE plpgsql
-- Planned once per session, not at every step: PL/pgSQL's plan cache judged the plan made for
-- the step's own values (LIMIT p_batch_size) cheaper than the generic one (a tenth of the market
-- estimated) and planned the statement again at every step, over every partition of bets and
-- bet_settlements: most of a step's fixed cost, 4.6 ms against 85 us a bet
-- (docs/decisions/0008-plans-independent-of-statistics.md). Without sequential scans, so that
-- the one plan reads by key whatever the statistics said when it was made; JIT off (the disabled
-- scans' costs would trigger it).
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    -- The CTEs are MATERIALIZED: each is computed once per batch (inlined, the plan repeated
    -- the per-bet lookups in every CASE that reads them).
    WITH b AS MATERIALIZED (
        SELECT bt.bet_id, bt.account_id, bt.selection_id, bt.currency, bt.stake, bt.odds,
               bt.placed_at
        FROM bets bt
        WHERE bt.market_id = p_market_id AND bt.bet_id > p_after_bet_id
          AND (p_lanes = 1 OR bt.account_id % p_lanes = p_lane)
        ORDER BY bt.bet_id
        LIMIT p_batch_size
    ),
    -- Each bet's latest effect (settle or cancel), whether it is still in force, and whether
    -- this event already handled the bet (a batch run twice).
    st AS MATERIALIZED (
        SELECT b.*, cur.version AS cur_version, cur.kind AS cur_kind, cur.payout AS cur_payout,
               coalesce(cur.in_force, false) AS in_force,
               coalesce(done.handled, false) AS handled,
               (p_event_kind IN ('result', 'rollback_result')
                OR ((p_from IS NULL OR b.placed_at >= p_from)
                    AND (p_to IS NULL OR b.placed_at < p_to))) AS in_scope
        FROM b
        LEFT JOIN LATERAL (
            SELECT e.version, e.kind, e.payout,
                   NOT EXISTS (SELECT 1 FROM bet_settlements r
                               WHERE r.bet_id = e.bet_id AND r.placed_at = e.placed_at
                                 AND r.version = e.version AND r.reversal) AS in_force
            FROM bet_settlements e
            WHERE e.bet_id = b.bet_id AND e.placed_at = b.placed_at AND NOT e.reversal
            ORDER BY e.version DESC
            LIMIT 1) cur ON true
        -- A LATERAL probe with LIMIT, not EXISTS: EXISTS was planned as a hashed subplan over every
        -- settlement row of the event so far, which grew with each batch. It reads the bet's newest
        -- row, one backward step on the primary key (bet_id, version, reversal): the event being
        -- applied is the market's newest (events apply in seq order, a bet's batches one at a time
        -- under its progress or lane row's lock), so a row it wrote for the bet (a reversal of
        -- version v, an effect v + 1) is above every older row of the bet, and the bet has a row of
        -- this event exactly when its newest row is one. No index on the event is kept for the
        -- probe: every settled bet would pay its insert in the WAL
        -- (docs/decisions/0010-less-wal-per-settled-bet.md). Every probe names
        -- the bet's placed_at, the partition key of bet_settlements (migration 0005): it reads the
        -- one partition of the bet's period, not all of them.
        LEFT JOIN LATERAL (
            SELECT x.result_event_id = p_event_id AS handled FROM bet_settlements x
            WHERE x.bet_id = b.bet_id AND x.placed_at = b.placed_at
            ORDER BY x.version DESC, x.reversal DESC
            LIMIT 1) done ON true
    ),
    -- The plan per bet: reverse the effect in force (or not), then a new effect (or none).
    plan0 AS MATERIALIZED (
        SELECT st.*,
               CASE
                   WHEN st.handled OR NOT st.in_scope THEN false
                   WHEN p_event_kind = 'result' THEN st.in_force AND st.cur_kind = 'settle'
                   WHEN p_event_kind = 'rollback_result' THEN st.in_force AND st.cur_kind = 'settle'
                   WHEN p_event_kind = 'cancel' THEN st.in_force AND st.cur_kind = 'settle'
                   WHEN p_event_kind = 'rollback_cancel' THEN st.in_force AND st.cur_kind = 'cancel'
                   WHEN p_event_kind = 'void_open' THEN false
               END AS rev,
               CASE
                   WHEN st.handled OR NOT st.in_scope THEN NULL
                   WHEN p_event_kind = 'result'
                        AND NOT (st.in_force AND st.cur_kind = 'cancel') THEN 'settle'
                   WHEN p_event_kind = 'cancel'
                        AND NOT (st.in_force AND st.cur_kind = 'cancel') THEN 'cancel'
                   WHEN p_event_kind = 'rollback_cancel' AND st.in_force
                        AND st.cur_kind = 'cancel' AND p_outcomes IS NOT NULL THEN 'settle'
                   -- The operator's void: open bets only.
                   WHEN p_event_kind = 'void_open' AND NOT st.in_force THEN 'cancel'
               END AS new_kind,
               -- Why the event does nothing to this bet, when that is its terminal state (see
               -- the header). Bets outside a cancel's window are not skipped: the event is not
               -- about them.
               CASE
                   WHEN st.handled OR NOT st.in_scope THEN NULL
                   WHEN p_event_kind IN ('result', 'rollback_result') AND st.in_force
                        AND st.cur_kind = 'cancel' THEN 'bet_cancelled'
                   WHEN p_event_kind = 'rollback_result' AND NOT st.in_force
                        THEN 'nothing_to_rollback'
                   WHEN p_event_kind = 'cancel' AND st.in_force AND st.cur_kind = 'cancel'
                        THEN 'already_cancelled'
                   WHEN p_event_kind = 'rollback_cancel'
                        AND NOT (st.in_force AND st.cur_kind = 'cancel')
                        THEN 'nothing_to_rollback'
                   WHEN p_event_kind = 'void_open' AND st.in_force AND st.cur_kind = 'cancel'
                        THEN 'already_void'
                   WHEN p_event_kind = 'void_open' AND st.in_force THEN 'already_settled'
               END AS skip_code
        FROM st
    ),
    plan AS MATERIALIZED (
        SELECT p.*,
               coalesce(p.cur_version, 0) + 1 AS new_version,
               CASE WHEN p.new_kind = 'cancel' THEN 'void'
                    WHEN p.new_kind = 'settle' THEN
                        CASE WHEN o.vu = 10000 THEN 'void'
                             WHEN o.win AND o.du < 10000 THEN 'dead_heat'
                             WHEN o.win AND o.vu > 0 THEN 'half_won'
                             WHEN o.win THEN 'won'
                             WHEN o.vu > 0 THEN 'half_lost'
                             ELSE 'lost' END
               END AS new_outcome,
               CASE WHEN p.new_kind = 'cancel' THEN p.stake
                    WHEN p.new_kind = 'settle' THEN
                        floor((p.stake::numeric * o.vu * 100000000
                               + CASE WHEN o.win
                                      THEN p.stake::numeric * (10000 - o.vu) * o.du * p.odds
                                      ELSE 0 END) / 1000000000000)::bigint
               END AS new_payout
        FROM plan0 p
        LEFT JOIN LATERAL (
            SELECT coalesce((x->>'win')::boolean, false) AS win,
                   coalesce((x->>'void_factor')::bigint, 0) AS vu,
                   coalesce((x->>'dead_heat_factor')::bigint, 10000) AS du
            FROM jsonb_array_elements(coalesce(p_outcomes, '[]'::jsonb)) x
            WHERE (x->>'selection_id')::bigint = p.selection_id
            UNION ALL
            SELECT false, 0::bigint, 10000::bigint   -- not named: loses
            LIMIT 1) o ON true
    )
    SELECT (SELECT array_agg(ROW(p.bet_id, p.account_id, p.currency, p.stake, p.cur_version,
                                 p.cur_kind, p.cur_payout, p.rev, p.new_kind, p.new_version,
                                 p.new_outcome, p.new_payout, p.skip_code,
                                 p.placed_at)::fulltime_settle_bet
                             ORDER BY p.bet_id)
            FROM plan p),
           (SELECT jsonb_object_agg(k.skip_code, k.n)
            FROM (SELECT p.skip_code, count(*) AS n FROM plan0 p
                  WHERE p.skip_code IS NOT NULL GROUP BY p.skip_code) k)
    INTO batch, skipped;
END;
$$;

COMMENT ON FUNCTION fulltime_settle_plan IS
    'Part of fulltime_settle_step: what the event does to each bet of the next batch after the '
    'checkpoint (reversal, new effect with outcome and payout, or skip code), and the batch''s '
    'skips per code. Read-only.';
