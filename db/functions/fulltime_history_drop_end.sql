-- Time partitions (docs/schema.md, "Retention"): the last step of dropping a period, after the
-- partition keeper detached and dropped its partitions. Marks it dropped, forgets the wallet
-- keys of its transfers (a deposit retried after its ledger row left is a new deposit, as an
-- idempotency key past its retention is a new request), and deletes its stored balances when a
-- later period is closed (reconciliation starts from the latest closed period only).
CREATE OR REPLACE FUNCTION fulltime_history_drop_end(p_period_start timestamptz)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_end timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('fulltime_history'));
    UPDATE history_periods h SET dropped_at = now()
    WHERE h.period_start = p_period_start AND h.max_bet_id IS NOT NULL AND h.dropped_at IS NULL
    RETURNING h.period_end INTO v_end;
    IF v_end IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM wallet_keys k WHERE k.created_at < v_end;
    IF EXISTS (SELECT 1 FROM history_periods h
               WHERE h.period_start > p_period_start AND h.closed_at IS NOT NULL) THEN
        DELETE FROM period_balances b WHERE b.period_start = p_period_start;
        DELETE FROM period_side_sums s WHERE s.period_start = p_period_start;
    END IF;
END;
$$;

COMMENT ON FUNCTION fulltime_history_drop_end IS
    'Marks a period whose partitions were dropped as dropped; forgets its wallet keys and, when a '
    'later period is closed, its stored balances.';
