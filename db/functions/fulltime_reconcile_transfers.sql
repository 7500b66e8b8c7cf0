-- A step of a reconciliation run; fulltime_reconcile_accounts.sql explains the run, and why
-- each comparison is one statement.

CREATE OR REPLACE FUNCTION fulltime_reconcile_transfers(
    p_after_transfer    bigint,   -- the chunk starts after this transfer_id (0: the first chunk)
    p_limit             integer,  -- transfers per chunk
    p_run_started       timestamptz,
    OUT last_transfer   bigint,   -- the chunk's highest transfer_id; NULL when none was left
    OUT transfers_checked integer,-- transfers read (fewer than p_limit: the last chunk)
    OUT mismatches      integer,  -- transfers whose currency differs from an account's
    OUT opened          integer,
    OUT seen_again      integer,
    OUT resolved        integer,
    OUT currencies      text[],   -- every currency of the chunk's transfers and accounts ...
    OUT imbalances      bigint[]) -- ... and what the chunk adds to its owners' sum (0 normally)
LANGUAGE plpgsql
AS $$
DECLARE
    v_upper    bigint;
    v_ids      bigint[];
    v_accounts bigint[];
    v_sides    text[];
    v_currency text[];
    v_owner    text[];
    v_amounts  bigint[];
    v_subjects text[];
    v_since    timestamptz;
BEGIN
    -- Only the transfers after the latest period closed when the run started: the closed
    -- periods' currency sums are stored (fulltime_reconcile_currencies adds them).
    SELECT h.period_end INTO v_since FROM fulltime_history_closed(p_run_started) h;
    -- One statement: the chunk's transfers by primary key, in heap order (identity order is
    -- insertion order), each account leg's currency compared with its account's (a primary key
    -- probe per leg). A leg naming an account that does not exist is the accounts pass's
    -- finding (balance_drift with account_missing), not a currency mismatch.
    WITH t AS MATERIALIZED (
        SELECT lt.transfer_id, lt.currency, lt.debit_side, lt.debit_account_id, lt.credit_side,
               lt.credit_account_id, lt.amount
        FROM ledger_transfers lt
        WHERE lt.transfer_id > p_after_transfer AND lt.created_at >= v_since
        ORDER BY lt.transfer_id
        LIMIT p_limit
    ),
    legs AS (
        SELECT t.transfer_id, t.currency, t.debit_side AS side, t.debit_account_id AS account_id,
               -t.amount AS amount
        FROM t WHERE t.debit_account_id IS NOT NULL
        UNION ALL
        SELECT t.transfer_id, t.currency, t.credit_side, t.credit_account_id, t.amount
        FROM t WHERE t.credit_account_id IS NOT NULL
    ),
    bad AS MATERIALIZED (
        SELECT l.transfer_id, l.currency::text AS transfer_currency,
               a.currency::text AS account_currency, l.account_id, l.side, l.amount
        FROM legs l JOIN accounts a ON a.account_id = l.account_id
        WHERE a.currency <> l.currency
    ),
    -- One incident per transfer (a transfer between two sides of one account has two legs).
    per_transfer AS MATERIALIZED (
        SELECT DISTINCT ON (b.transfer_id) b.transfer_id, b.account_id, b.side,
               b.transfer_currency, b.account_currency, abs(b.amount) AS amount
        FROM bad b
        ORDER BY b.transfer_id, b.side
    ),
    -- A mismatched leg belongs to its account's currency but the ledger balances it in the
    -- transfer's: + to the one, - to the other. Every other leg adds nothing.
    contrib AS (
        SELECT c.currency, sum(c.amount)::bigint AS amount
        FROM (SELECT b.account_currency AS currency, b.amount FROM bad b
              UNION ALL
              SELECT b.transfer_currency, -b.amount FROM bad b
              UNION ALL
              SELECT DISTINCT t.currency::text, 0::bigint FROM t) c
        GROUP BY c.currency
    )
    SELECT (SELECT count(*)::integer FROM t), (SELECT max(t.transfer_id) FROM t),
           (SELECT array_agg(p.transfer_id ORDER BY p.transfer_id) FROM per_transfer p),
           (SELECT array_agg(p.account_id ORDER BY p.transfer_id) FROM per_transfer p),
           (SELECT array_agg(p.side ORDER BY p.transfer_id) FROM per_transfer p),
           (SELECT array_agg(p.transfer_currency ORDER BY p.transfer_id) FROM per_transfer p),
           (SELECT array_agg(p.account_currency ORDER BY p.transfer_id) FROM per_transfer p),
           (SELECT array_agg(p.amount ORDER BY p.transfer_id) FROM per_transfer p),
           (SELECT array_agg(c.currency ORDER BY c.currency) FROM contrib c),
           (SELECT array_agg(c.amount ORDER BY c.currency) FROM contrib c)
    INTO transfers_checked, last_transfer, v_ids, v_accounts, v_sides, v_currency, v_owner,
         v_amounts, currencies, imbalances;

    v_upper := CASE WHEN transfers_checked < p_limit THEN 9223372036854775807
                    ELSE last_transfer END;
    mismatches := coalesce(array_length(v_ids, 1), 0);
    opened := 0;
    seen_again := 0;
    IF mismatches > 0 THEN
        v_subjects := ARRAY(SELECT 'transfer:' || u.id FROM unnest(v_ids) AS u(id));
        WITH up AS (
            INSERT INTO incidents AS i (kind, subject, account_id, currency, side, expected,
                                        actual, details, first_seen, last_seen)
            SELECT 'currency_mismatch', 'transfer:' || f.id, f.account_id, f.currency, f.side,
                   NULL, f.amount,
                   jsonb_build_object('transfer_id', f.id, 'transfer_currency', f.currency,
                                      'account_currency', f.owner),
                   now(), now()
            FROM unnest(v_ids, v_accounts, v_sides, v_currency, v_owner, v_amounts)
                AS f(id, account_id, side, currency, owner, amount)
            ON CONFLICT (kind, subject) WHERE resolved_at IS NULL
            DO UPDATE SET last_seen = excluded.last_seen, runs = i.runs + 1,
                          actual = excluded.actual, currency = excluded.currency,
                          details = excluded.details
            RETURNING i.runs
        )
        SELECT count(*) FILTER (WHERE up.runs = 1), count(*) FILTER (WHERE up.runs > 1)
        INTO opened, seen_again
        FROM up;
    END IF;

    -- The chunk's open mismatches that it did not find again (the last chunk's range is open-
    -- ended) are gone.
    resolved := fulltime_reconcile_close_unseen('currency_mismatch', v_subjects, p_run_started,
                                                p_after_transfer, v_upper);
END;
$$;

COMMENT ON FUNCTION fulltime_reconcile_transfers IS
    'One reconciliation chunk of the ledger: the next p_limit transfers after p_after_transfer, '
    'each account leg''s currency compared with its account''s in one statement; mismatches '
    'opened or updated as currency_mismatch incidents; returns the chunk''s contribution to '
    'each currency''s sum (nonzero only through mismatches).';
