-- Part of fulltime_settle_step (fulltime_settle_step.sql explains the step and its parts): the
-- balance rows of one batch, last, in ascending account_id, one update per account. They are
-- the only row locks a batch shares with placement, so they are taken last and held only until
-- the step commits.
--
-- The usual case is one conditional update. A correction or rollback takes back a payout the
-- bettor may already have staked or withdrawn; the reversal must still happen (the market cannot
-- stall on one account), and no balance may go negative: the part of the batch's debit that
-- available cannot cover is advanced by the house and recorded as the bettor's debt, on a side
-- of its own ('owed': the house's claim on the bettor),
--   advance:<event>:<account>:<last bet of the batch>  owed -> available  shortfall
-- and later credits of a settlement batch (winnings, refunds) repay it first,
--   repay:<event>:<account>:<last bet of the batch>    available -> owed  min(owed, available)
-- accounts.owed = debits - credits of the account's 'owed' side, never negative.
CREATE OR REPLACE FUNCTION fulltime_settle_balances(
    p_event_id  bigint,
    p_last_bet  bigint,     -- the batch's highest bet_id (names the advance and repay entries)
    p_accounts  bigint[],   -- ascending, each once (fulltime_settle_legs) ...
    p_available bigint[],   -- ... what the batch adds to each one's available ...
    p_reserved  bigint[])   -- ... and to its reserved
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_new_available bigint;
    v_owed          bigint;
    v_currency      text;
    v_move          bigint;
    i               integer;
BEGIN
    IF p_accounts IS NULL THEN
        RETURN;
    END IF;
    FOR i IN 1 .. array_length(p_accounts, 1) LOOP
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
    'row locks shared with placement, taken last), advancing a shortfall as debt (owed) and '
    'repaying debt from the batch''s credits.';
