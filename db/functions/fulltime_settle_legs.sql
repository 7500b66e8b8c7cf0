-- Part of fulltime_settle_step (fulltime_settle_step.sql explains the step and its parts): the
-- writes of one batch but the balance rows, in one statement. From fulltime_settle_plan's batch
-- it writes the settlement rows, the keyed ledger transfers and the batch's one outbox row, and
-- returns what the transfers it wrote change on each account, for fulltime_settle_balances.
-- Exactly once: the plan leaves out every bet this event already handled (its step holds the
-- market's progress row, so nothing else writes these bets' rows meanwhile), and the keys stay
-- unique: the settlement rows' (bet_id, version, reversal) and the transfers' entry_key. The
-- inserts are plain, not ON CONFLICT DO NOTHING: a duplicate would be an error that rolls the
-- whole step back (nothing moves twice, and the market's steps fail loudly), and a plain insert
-- spares each row the confirmation record in the WAL that a speculative insert writes
-- (docs/decisions/0010-less-wal-per-settled-bet.md).
--
-- Ledger legs (entry_key bet:<bet>:v<version>:<code>, the code = the kind's and the leg's
-- initials; until 0003_less_wal.sql the two words, bet:<bet>:v<version>:<kind>:<leg>, whose 10
-- more bytes in the heap and in the unique index cost each settled bet 66 bytes of WAL):
--   settle   stake  ss  reserved -> house      S     payout  sp  house -> available  P (if P > 0)
--   reverse  stake  rs  house -> reserved      S     payout  rp  available -> house  P (if P > 0)
--   cancel   refund cr  reserved -> available  S
--   uncancel refund ur  available -> reserved  S
CREATE OR REPLACE FUNCTION fulltime_settle_legs(
    p_event_id    bigint,
    p_batch       fulltime_settle_bet[],
    OUT effects   integer,    -- settlement rows written
    OUT accounts  bigint[],   -- the accounts the written transfers touch, ascending ...
    OUT available bigint[],   -- ... what they add to each one's available ...
    OUT reserved  bigint[])   -- ... and to its reserved
LANGUAGE plpgsql
-- Planned once per session, as fulltime_settle_plan: with the batch as a parameter, the plan
-- cache would plan the statement again at every step. It reads no table (the batch is its
-- input; the inserts return what they wrote), so the generic plan has nothing to scan.
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    -- The batch is read once (MATERIALIZED) and then by every leg below.
    WITH plan AS MATERIALIZED (
        SELECT * FROM unnest(p_batch)
    ),
    planned AS (
        SELECT p.bet_id, p.cur_version AS version,
               CASE p.cur_kind WHEN 'settle' THEN 'reverse' ELSE 'uncancel' END AS kind,
               NULL::text AS outcome, NULL::bigint AS payout, 1 AS step, p.placed_at
        FROM plan p WHERE p.rev
        UNION ALL
        SELECT p.bet_id, p.new_version, p.new_kind, p.new_outcome, p.new_payout, 2, p.placed_at
        FROM plan p WHERE p.new_kind IS NOT NULL
    ),
    ins_settlements AS (
        INSERT INTO bet_settlements (bet_id, version, kind, outcome, payout, result_event_id,
                                     placed_at)
        SELECT r.bet_id, r.version, r.kind, r.outcome, r.payout, p_event_id, r.placed_at
        FROM planned r
        ORDER BY r.bet_id, r.step
        RETURNING bet_id, version, kind, outcome, payout
    ),
    legs AS (
        -- key suffix, debit side, credit side, amount (account sides name the bet's account)
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.cur_version || ':rs' AS entry_key,
               'house' AS debit_side, 'reserved' AS credit_side, p.stake AS amount
        FROM plan p WHERE p.rev AND p.cur_kind = 'settle'
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.cur_version || ':rp',
               'available', 'house', p.cur_payout
        FROM plan p WHERE p.rev AND p.cur_kind = 'settle' AND p.cur_payout > 0
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.cur_version || ':ur',
               'available', 'reserved', p.stake
        FROM plan p WHERE p.rev AND p.cur_kind = 'cancel'
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.new_version || ':ss',
               'reserved', 'house', p.stake
        FROM plan p WHERE p.new_kind = 'settle'
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.new_version || ':sp',
               'house', 'available', p.new_payout
        FROM plan p WHERE p.new_kind = 'settle' AND p.new_payout > 0
        UNION ALL
        SELECT p.bet_id, p.account_id, p.currency,
               'bet:' || p.bet_id || ':v' || p.new_version || ':cr',
               'reserved', 'available', p.stake
        FROM plan p WHERE p.new_kind = 'cancel'
    ),
    ins_ledger AS (
        INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id,
                                      credit_side, credit_account_id, amount, bet_id,
                                      result_event_id)
        SELECT l.entry_key, l.currency,
               l.debit_side, CASE WHEN l.debit_side IN ('available', 'reserved')
                                  THEN l.account_id END,
               l.credit_side, CASE WHEN l.credit_side IN ('available', 'reserved')
                                   THEN l.account_id END,
               l.amount, l.bet_id, p_event_id
        FROM legs l
        ORDER BY l.entry_key
        RETURNING debit_side, debit_account_id, credit_side, credit_account_id, amount
    ),
    announced AS (
        -- A reversal followed by a new effect is announced once, by the new effect.
        SELECT p.account_id, s.bet_id, s.version, s.kind, s.outcome, s.payout
        FROM ins_settlements s JOIN plan p ON p.bet_id = s.bet_id
        WHERE s.kind IN ('settle', 'cancel') OR p.new_kind IS NULL
    ),
    ins_outbox AS (
        -- One row for the whole batch (0004_settlement_outbox_batches.sql): one row per bet
        -- cost each settled bet about 300 bytes of WAL, the list compressed in TOAST about 10.
        -- Each entry holds what the push (docs/protocol.md, "Pushed") and a reader of the
        -- outbox need: the account, the bet, the version, the kind and its outcome and payout.
        -- The bet's market and currency are in bets; the event is the row's.
        -- The entries are six parallel arrays in bet_id order, one per field
        -- (0010_settlement_batch_arrays.sql): a jsonb object per entry cost about 12 us a bet
        -- to build, the arrays about 3 (docs/decisions/0021-settlement-outbox-arrays.md). One
        -- aggregate node reads the sorted entries once and feeds every array the same row.
        INSERT INTO outbox (topic, account_id, payload)
        SELECT 'settlement_batch', NULL,
               jsonb_build_object(
                   'result_event_id', p_event_id,
                   'account_id', array_agg(a.account_id), 'bet_id', array_agg(a.bet_id),
                   'version', array_agg(a.version), 'kind', array_agg(a.kind),
                   'outcome', array_agg(a.outcome), 'payout', array_agg(a.payout))
        FROM (SELECT * FROM announced ORDER BY bet_id) a
        HAVING count(*) > 0
    ),
    deltas AS (
        SELECT acc, sum(d_available)::bigint AS d_available, sum(d_reserved)::bigint AS d_reserved
        FROM (
            SELECT credit_account_id AS acc,
                   CASE WHEN credit_side = 'available' THEN amount ELSE 0 END AS d_available,
                   CASE WHEN credit_side = 'reserved' THEN amount ELSE 0 END AS d_reserved
            FROM ins_ledger WHERE credit_account_id IS NOT NULL
            UNION ALL
            SELECT debit_account_id,
                   CASE WHEN debit_side = 'available' THEN -amount ELSE 0 END,
                   CASE WHEN debit_side = 'reserved' THEN -amount ELSE 0 END
            FROM ins_ledger WHERE debit_account_id IS NOT NULL
        ) x
        GROUP BY acc
    )
    SELECT (SELECT count(*) FROM ins_settlements),
           (SELECT array_agg(acc ORDER BY acc) FROM deltas),
           (SELECT array_agg(d_available ORDER BY acc) FROM deltas),
           (SELECT array_agg(d_reserved ORDER BY acc) FROM deltas)
    INTO effects, accounts, available, reserved;
END;
$$;

COMMENT ON FUNCTION fulltime_settle_legs IS
    'Part of fulltime_settle_step: one batch''s settlement rows, ledger transfers and outbox row '
    'in one statement (plain inserts: a duplicate key fails the step); returns the per-account '
    'balance deltas of the transfers it wrote, in ascending account order.';
