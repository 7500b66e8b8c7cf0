-- A step of a reconciliation run; fulltime_reconcile_accounts.sql explains the run, and why
-- each comparison is one statement.

CREATE OR REPLACE FUNCTION fulltime_reconcile_currencies(
    p_currencies      text[],   -- every currency the run saw ...
    p_imbalances      bigint[], -- ... and its sum over the ledger after the closed period
    p_run_started     timestamptz,
    OUT opened        integer,
    OUT seen_again    integer,
    OUT resolved      integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_subjects text[];
    v_closed   timestamptz;
BEGIN
    -- The run's sums cover the ledger after the latest period closed when it started; the
    -- closed period's stored balances hold the rest, each account's in its currency and house
    -- and cash in theirs (zero per currency unless some transfer's currency was not its
    -- account's).
    SELECT h.period_start INTO v_closed FROM fulltime_history_closed(p_run_started) h;
    SELECT array_agg(s.currency ORDER BY s.currency), array_agg(s.amount ORDER BY s.currency)
    INTO p_currencies, p_imbalances
    FROM (SELECT x.currency, sum(x.amount)::bigint AS amount
          FROM (SELECT u.code AS currency, u.amount
                FROM unnest(p_currencies, p_imbalances) AS u(code, amount)
                UNION ALL
                SELECT a.currency::text, b.available + b.reserved - b.owed
                FROM period_balances b JOIN accounts a ON a.account_id = b.account_id
                WHERE b.period_start = v_closed
                UNION ALL
                SELECT s.currency::text, s.balance
                FROM period_side_sums s WHERE s.period_start = v_closed) x
          GROUP BY x.currency) s;
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
