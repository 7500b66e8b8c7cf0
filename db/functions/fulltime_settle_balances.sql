-- Part of fulltime_settle_step (fulltime_settle_step.sql explains the step and its parts): the
-- balance rows of one batch, last, in ascending account_id, each account once. They are the
-- only row locks a batch shares with placement, so they are taken last and held only until
-- the step commits.
--
-- The usual batch (a first result or a cancel: every account's available grows or stays, and
-- no account of the batch owes the house) is one UPDATE for all its accounts. A correction or
-- rollback takes back a payout the bettor may already have staked or withdrawn; the reversal
-- must still happen (the market cannot stall on one account), and no balance may go negative:
-- the part of the batch's debit that available cannot cover is advanced by the house and
-- recorded as the bettor's debt, on a side of its own ('owed': the house's claim on the bettor),
--   advance:<event>:<account>:<last bet of the batch>  owed -> available  shortfall
-- and later credits of a settlement batch (winnings, refunds) repay it first,
--   repay:<event>:<account>:<last bet of the batch>    available -> owed  min(owed, available)
-- accounts.owed = debits - credits of the account's 'owed' side, never negative. A batch with a
-- debit or an account in debt takes the accounts one by one (the loop below: one conditional
-- update each, rarely three statements).
--
-- The lock order. A placement group locks its accounts in ascending account_id too
-- (fulltime_place_group, step f), so the two never wait in a cycle. The one UPDATE keeps that
-- order by its plan: a nested loop driven by the ascending array, each account's row found and
-- updated by a primary-key probe in turn (hash and merge joins and sequential scans are off
-- below; a hash join probed by the table would update the rows in the table's physical
-- order). A test holds one account of a batch and finds the batch holding exactly the accounts
-- below it (tests/db/placement_group_pgtest.cpp). Rare: an account that came into debt between
-- the check and the update (another market's correction, committed in between) is left by the
-- UPDATE and taken by the loop after the others, out of that order; a cycle with a placement
-- group is then possible and the deadlock detector breaks it (a deadlock is a retryable failure
-- for the placement and for the step alike, db/error.cpp).
CREATE OR REPLACE FUNCTION fulltime_settle_balances(
    p_event_id  bigint,
    p_last_bet  bigint,     -- the batch's highest bet_id (names the advance and repay entries)
    p_accounts  bigint[],   -- ascending, each once (fulltime_settle_legs) ...
    p_available bigint[],   -- ... what the batch adds to each one's available ...
    p_reserved  bigint[])   -- ... and to its reserved
RETURNS void
LANGUAGE plpgsql
-- Planned once per session, and the one UPDATE a nested loop along the array (the lock order,
-- above) whatever the statistics say: the generic plan estimates the array at 10 rows and,
-- with merge joins on, merges it with a scan of the whole primary key (every account up to the
-- batch's highest, each read from the heap for its owed). JIT off (the disabled plans' costs
-- would trigger it).
SET plan_cache_mode = force_generic_plan
SET enable_hashjoin = off
SET enable_mergejoin = off
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_new_available bigint;
    v_owed          bigint;
    v_currency      text;
    v_move          bigint;
    v_done          bigint[] := '{}';   -- accounts the one UPDATE took, ascending
    i               integer;
BEGIN
    IF p_accounts IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM unnest(p_available) d WHERE d < 0)
       AND NOT EXISTS (SELECT 1 FROM accounts a
                       WHERE a.account_id = ANY (p_accounts) AND a.owed > 0) THEN
        WITH done AS (
            UPDATE accounts a
            SET available = a.available + u.available, reserved = a.reserved + u.reserved
            FROM unnest(p_accounts, p_available, p_reserved) AS u(account_id, available, reserved)
            WHERE a.account_id = u.account_id AND a.owed = 0
            RETURNING a.account_id
        )
        SELECT coalesce(array_agg(d.account_id ORDER BY d.account_id), '{}') INTO v_done
        FROM done d;
        IF cardinality(v_done) = cardinality(p_accounts) THEN
            RETURN;
        END IF;
    END IF;
    FOR i IN 1 .. array_length(p_accounts, 1) LOOP
        CONTINUE WHEN p_accounts[i] = ANY (v_done);
        UPDATE accounts a
        SET available = a.available + p_available[i], reserved = a.reserved + p_reserved[i]
        WHERE a.account_id = p_accounts[i] AND a.available + p_available[i] >= 0
        RETURNING a.available, a.owed, a.currency INTO v_new_available, v_owed, v_currency;
        IF NOT FOUND THEN
            -- Rare: lock the row to read what it holds, then advance the shortfall.
            SELECT a.available, a.owed, a.currency INTO v_new_available, v_owed, v_currency
            FROM accounts a WHERE a.account_id = p_accounts[i] FOR NO KEY UPDATE;
            v_move := -(v_new_available + p_available[i]);
            INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id,
                                          credit_side, credit_account_id, amount,
                                          result_event_id)
            VALUES ('advance:' || p_event_id || ':' || p_accounts[i] || ':' || p_last_bet,
                    v_currency, 'owed', p_accounts[i], 'available', p_accounts[i], v_move,
                    p_event_id);
            UPDATE accounts a
            SET available = 0, reserved = a.reserved + p_reserved[i], owed = a.owed + v_move
            WHERE a.account_id = p_accounts[i];
        ELSIF v_owed > 0 AND p_available[i] > 0 AND v_new_available > 0 THEN
            -- Only this batch's credit repays: other money on the account stays the bettor's
            -- to use (the operator collects the rest of a debt).
            v_move := least(v_owed, p_available[i], v_new_available);
            INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id,
                                          credit_side, credit_account_id, amount,
                                          result_event_id)
            VALUES ('repay:' || p_event_id || ':' || p_accounts[i] || ':' || p_last_bet,
                    v_currency, 'available', p_accounts[i], 'owed', p_accounts[i], v_move,
                    p_event_id);
            UPDATE accounts a SET available = a.available - v_move, owed = a.owed - v_move
            WHERE a.account_id = p_accounts[i];
        END IF;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION fulltime_settle_balances IS
    'Part of fulltime_settle_step: one batch''s balance updates in ascending account order (the '
    'row locks shared with placement, taken last): one UPDATE for a batch of credits to accounts '
    'without debt; otherwise per account, advancing a shortfall as debt (owed) and repaying debt '
    'from the batch''s credits.';
