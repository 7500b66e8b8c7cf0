-- A step of a reconciliation run (fulltime_reconcile_accounts.sql explains the run): closes the
-- open incidents of one kind, within what the calling pass just checked, that the pass did not
-- find again. The problem is gone (an operator fixed the row or the ledger), so the incident is
-- resolved, with the run that established it; the three passes (fulltime_reconcile_accounts,
-- _transfers, _currencies) share the resolution text and the count through this function.
--
-- The scope is each pass's own: a chunk of the accounts pass checked its account_id range, a
-- chunk of the transfers pass its transfer_id range (the last chunk's range of either is
-- open-ended), and the currencies pass, called after a whole pass over the ledger, every
-- currency. Each scope is the predicate of a statement of its own rather than one statement
-- with a CASE: a plpgsql statement may run on a generic plan, where only a plain range on
-- account_id lets balance_drift use incidents_account_idx beside incidents_open_subject_idx
-- (a BitmapAnd); the other two kinds are read from incidents_open_subject_idx by kind and
-- filtered, as before. No row is read that the passes did not read when each held its own
-- UPDATE, and the only row locks are those of the incidents it closes.

CREATE OR REPLACE FUNCTION fulltime_reconcile_close_unseen(
    p_kind        text,          -- balance_drift | currency_mismatch | currency_imbalance
    p_seen        text[],        -- the subjects the pass found (NULL: none)
    p_run_started timestamptz,
    p_after       bigint DEFAULT NULL,  -- the scope, after this account_id / transfer_id ...
    p_upto        bigint DEFAULT NULL)  -- ... up to this one (currency_imbalance: none)
RETURNS integer                  -- incidents closed
LANGUAGE plpgsql
AS $$
DECLARE
    v_seen       text[] := coalesce(p_seen, '{}'::text[]);
    v_resolution text := 'not found by the reconciliation run started at '
                         || to_char(p_run_started AT TIME ZONE 'UTC',
                                    'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_closed     integer;
BEGIN
    IF p_kind = 'balance_drift' THEN
        UPDATE incidents i SET resolved_at = now(), resolution = v_resolution
        WHERE i.kind = 'balance_drift' AND i.resolved_at IS NULL
          AND i.account_id > p_after AND i.account_id <= p_upto
          AND i.subject <> ALL (v_seen);
    ELSIF p_kind = 'currency_mismatch' THEN
        UPDATE incidents i SET resolved_at = now(), resolution = v_resolution
        WHERE i.kind = 'currency_mismatch' AND i.resolved_at IS NULL
          AND (i.details->>'transfer_id')::bigint > p_after
          AND (i.details->>'transfer_id')::bigint <= p_upto
          AND i.subject <> ALL (v_seen);
    ELSIF p_kind = 'currency_imbalance' THEN
        UPDATE incidents i SET resolved_at = now(), resolution = v_resolution
        WHERE i.kind = 'currency_imbalance' AND i.resolved_at IS NULL
          AND i.subject <> ALL (v_seen);
    ELSE
        RAISE EXCEPTION 'fulltime_reconcile_close_unseen: no reconciliation scope for kind %',
            p_kind;
    END IF;
    GET DIAGNOSTICS v_closed = ROW_COUNT;
    RETURN v_closed;
END;
$$;
COMMENT ON FUNCTION fulltime_reconcile_close_unseen IS
    'A reconciliation pass''s open incidents of p_kind within its scope (account_id or '
    'transfer_id range, or none) that it did not find again, resolved as "not found by the '
    'reconciliation run started at <UTC time>"; returns how many.';
