-- A step of a reconciliation run; fulltime_reconcile_accounts.sql explains the run, and why
-- each comparison is one statement.

CREATE OR REPLACE FUNCTION fulltime_reconcile_currencies(
    p_currencies      text[],   -- every currency the run saw ...
    p_imbalances      bigint[], -- ... and its sum over the whole ledger, as its owners hold it
    p_run_started     timestamptz,
    OUT opened        integer,
    OUT seen_again    integer,
    OUT resolved      integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_subjects text[];
BEGIN
    v_subjects := ARRAY(SELECT 'currency:' || u.code
                        FROM unnest(p_currencies, p_imbalances) AS u(code, amount)
                        WHERE u.amount <> 0);
    WITH up AS (
        INSERT INTO incidents AS i (kind, subject, currency, expected, actual, first_seen,
                                    last_seen)
        SELECT 'currency_imbalance', 'currency:' || u.code, u.code, 0, u.amount, now(), now()
        FROM unnest(p_currencies, p_imbalances) AS u(code, amount)
        WHERE u.amount <> 0
        ON CONFLICT (kind, subject) WHERE resolved_at IS NULL
        DO UPDATE SET last_seen = excluded.last_seen, runs = i.runs + 1,
                      actual = excluded.actual
        RETURNING i.runs
    )
    SELECT count(*) FILTER (WHERE up.runs = 1), count(*) FILTER (WHERE up.runs > 1)
    INTO opened, seen_again
    FROM up;

    -- Called only after a complete pass over the ledger: an open imbalance it did not find is
    -- gone.
    resolved := fulltime_reconcile_close_unseen('currency_imbalance', v_subjects, p_run_started);
END;
$$;

COMMENT ON FUNCTION fulltime_reconcile_currencies IS
    'The end of a reconciliation run: each currency''s sum over the whole ledger (the chunks'' '
    'contributions added up) recorded as a currency_imbalance incident when nonzero; open '
    'imbalances no longer found resolved.';
