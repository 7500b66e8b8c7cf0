-- Reconciliation (docs/design.md, "Invariants": a scheduled reconciliation sums the ledger per
-- account and reports drift as an incident; it never silently corrects).
--
-- A run is a sequence of short transactions, each one call of a function below, driven by the
-- reconciliation actor (actors/reconciliation_*.cpp) or by `fulltime reconcile`, which make the
-- same calls:
--   1. fulltime_reconcile_accounts over the accounts in ascending account_id, a bounded chunk
--      per call: each account's available, reserved and owed against its ledger sums;
--   2. fulltime_reconcile_transfers over the ledger in ascending transfer_id, a bounded chunk
--      per call: each transfer's currency against its accounts' currencies, and the chunk's
--      contribution to each currency's sum;
--   3. fulltime_reconcile_currencies once the whole ledger was read: each currency's sum.
-- What differs becomes an incident: one row per problem (kind, subject), updated by every
-- later run that finds it again (last_seen, runs + 1) and closed (resolved_at, resolution) by the
-- first run that checks it and no longer finds it. Nothing here writes accounts or
-- ledger_transfers: a drift is reported, never corrected.
--
-- Why each comparison is ONE statement. A balance row and the transfers it projects are written
-- by one transaction (a placement, a settlement batch, a deposit). Under Read Committed a plpgsql
-- function takes a new snapshot for every statement, so reading the balance rows in one
-- statement and the ledger in another could see a placement's reservation in one and not in the
-- other and report a drift that does not exist. Each comparison below is a single SELECT: one
-- snapshot, in which every transaction is either wholly visible or not at all, so concurrent
-- placements, settlements and deposits never make a false drift. It is a plain read: no row
-- lock (no FOR UPDATE / FOR SHARE), no table lock beyond ACCESS SHARE, so placement and
-- settlement never wait on it; the only rows a chunk writes are incidents.
--
-- Sides (ledger_side in fulltime_codes): available and reserved are credits - debits of their side; owed is debits
-- - credits of side 'owed'.
--
-- Currencies. A transfer carries one amount in one currency, so the ledger summed per transfer
-- currency is zero by construction, and checking that would prove nothing. What can break the
-- books is a transfer whose currency differs from its account's: the bettor's side moves in the
-- account's currency while the house or cash side moves in the transfer's, so one currency's
-- books gain what another's lose. Each currency is therefore summed the way its owners hold it:
-- an account side in its account's currency, a house or cash side in the transfer's. Only a
-- mismatched transfer adds anything to those sums, so the contributions of the chunks (each read
-- in its own statement) add up to the exact sums, never to a false imbalance; a transfer that
-- commits behind a chunk already read is seen by the next run. Per-currency running totals
-- updated by every money movement would be a hot row (docs/design.md forbids it), and a single
-- statement over the whole ledger would hold one snapshot for as long as the scan lasts (it
-- holds back vacuum of the hot tables); the chunked pass has neither cost.

CREATE OR REPLACE FUNCTION fulltime_reconcile_accounts(
    p_after_account     bigint,   -- the chunk starts after this account_id (0: the first chunk)
    p_limit             integer,  -- accounts per chunk
    p_run_started       timestamptz,
    OUT last_account    bigint,   -- the chunk's highest account_id; NULL when none was left
    OUT accounts_checked integer, -- accounts compared (fewer than p_limit: the last chunk)
    OUT drifts          integer,  -- (account, side) pairs that differ from the ledger
    OUT opened          integer,  -- incidents opened
    OUT seen_again      integer,  -- open incidents found again
    OUT resolved        integer,  -- open incidents of the chunk's accounts no longer found
    OUT currencies      text[],   -- the currencies of the chunk's accounts ...
    OUT currency_accounts integer[])  -- ... and how many accounts each
LANGUAGE plpgsql
AS $$
DECLARE
    v_upper    bigint;
    v_ids      bigint[];
    v_sides    text[];
    v_currency text[];
    v_expected bigint[];
    v_actual   bigint[];
    v_subjects text[];
    v_closed   timestamptz;
    v_since    timestamptz;
BEGIN
    -- The latest period closed when the run started: its stored balances stand for every leg
    -- before its end, so the chunk reads only the legs after it (docs/schema.md, "Closing a
    -- period"), and a run costs the same whatever the years of history.
    SELECT h.period_start, h.period_end INTO v_closed, v_since
    FROM fulltime_history_closed(p_run_started) h;
    -- The comparison: one statement, so one snapshot (see the header). The chunk's accounts are
    -- read by primary key; each side's sums come from the covering partial indexes
    -- ledger_transfers_{credit,debit}_account_idx as index-only range scans over the chunk's
    -- account_id range. The last chunk's range is open-ended, so that transfers naming an
    -- account that does not exist are compared too (as a balance row of zero).
    WITH a AS MATERIALIZED (
        SELECT ac.account_id, ac.currency, ac.available, ac.reserved, ac.owed
        FROM accounts ac
        WHERE ac.account_id > p_after_account
        ORDER BY ac.account_id
        LIMIT p_limit
    ),
    bounds AS MATERIALIZED (
        SELECT count(*)::integer AS n, max(a.account_id) AS hi,
               CASE WHEN count(*) < p_limit THEN 9223372036854775807
                    ELSE max(a.account_id) END AS upper
        FROM a
    ),
    legs AS (
        SELECT t.credit_account_id AS account_id, t.credit_side AS side, t.amount
        FROM ledger_transfers t
        WHERE t.credit_account_id > p_after_account
          AND t.credit_account_id <= (SELECT b.upper FROM bounds b)
          AND t.created_at >= v_since
        UNION ALL
        SELECT t.debit_account_id, t.debit_side, -t.amount
        FROM ledger_transfers t
        WHERE t.debit_account_id > p_after_account
          AND t.debit_account_id <= (SELECT b.upper FROM bounds b)
          AND t.created_at >= v_since
        UNION ALL
        -- The stored balances, as legs (owed is stored as debits - credits).
        SELECT pb.account_id, v.side, v.amount
        FROM period_balances pb
        CROSS JOIN LATERAL (VALUES ('available', pb.available), ('reserved', pb.reserved),
                                   ('owed', -pb.owed)) AS v(side, amount)
        WHERE pb.period_start = v_closed
          AND pb.account_id > p_after_account
          AND pb.account_id <= (SELECT b.upper FROM bounds b)
    ),
    sums AS (
        SELECT l.account_id,
               coalesce(sum(l.amount) FILTER (WHERE l.side = 'available'), 0) AS available,
               coalesce(sum(l.amount) FILTER (WHERE l.side = 'reserved'), 0) AS reserved,
               -coalesce(sum(l.amount) FILTER (WHERE l.side = 'owed'), 0) AS owed
        FROM legs l
        GROUP BY l.account_id
    ),
    cmp AS MATERIALIZED (
        SELECT coalesce(a.account_id, s.account_id) AS account_id, a.currency, v.side,
               v.expected::bigint AS expected, v.actual
        FROM a FULL JOIN sums s ON s.account_id = a.account_id
        CROSS JOIN LATERAL (VALUES ('available', coalesce(s.available, 0), a.available),
                                   ('reserved', coalesce(s.reserved, 0), a.reserved),
                                   ('owed', coalesce(s.owed, 0), a.owed))
            AS v(side, expected, actual)
        WHERE v.expected <> coalesce(v.actual, 0)
    ),
    per_currency AS (
        SELECT a.currency::text AS currency, count(*)::integer AS n
        FROM a
        GROUP BY a.currency
    )
    SELECT b.n, b.hi, b.upper,
           (SELECT array_agg(c.account_id ORDER BY c.account_id, c.side) FROM cmp c),
           (SELECT array_agg(c.side ORDER BY c.account_id, c.side) FROM cmp c),
           (SELECT array_agg(c.currency::text ORDER BY c.account_id, c.side) FROM cmp c),
           (SELECT array_agg(c.expected ORDER BY c.account_id, c.side) FROM cmp c),
           (SELECT array_agg(c.actual ORDER BY c.account_id, c.side) FROM cmp c),
           (SELECT array_agg(p.currency ORDER BY p.currency) FROM per_currency p),
           (SELECT array_agg(p.n ORDER BY p.currency) FROM per_currency p)
    INTO accounts_checked, last_account, v_upper, v_ids, v_sides, v_currency, v_expected,
         v_actual, currencies, currency_accounts
    FROM bounds b;

    drifts := coalesce(array_length(v_ids, 1), 0);
    opened := 0;
    seen_again := 0;
    IF drifts > 0 THEN
        v_subjects := ARRAY(SELECT 'account:' || u.id || ':' || u.side
                            FROM unnest(v_ids, v_sides) AS u(id, side));
        -- One incident per (account, side) while the drift lasts: a run that finds it again
        -- updates the open row (the partial unique index incidents_open_subject_idx) instead of adding one.
        WITH up AS (
            INSERT INTO incidents AS i (kind, subject, account_id, currency, side, expected,
                                        actual, details, first_seen, last_seen)
            SELECT 'balance_drift', 'account:' || f.id || ':' || f.side, f.id, f.currency,
                   f.side, f.expected, f.actual,
                   CASE WHEN f.actual IS NULL THEN '{"account_missing": true}'::jsonb
                        ELSE '{}'::jsonb END,
                   now(), now()
            FROM unnest(v_ids, v_sides, v_currency, v_expected, v_actual)
                AS f(id, side, currency, expected, actual)
            ON CONFLICT (kind, subject) WHERE resolved_at IS NULL
            DO UPDATE SET last_seen = excluded.last_seen, runs = i.runs + 1,
                          expected = excluded.expected, actual = excluded.actual,
                          currency = excluded.currency, details = excluded.details
            RETURNING i.runs
        )
        SELECT count(*) FILTER (WHERE up.runs = 1), count(*) FILTER (WHERE up.runs > 1)
        INTO opened, seen_again
        FROM up;
    END IF;

    -- The chunk's open drifts that this comparison did not find are gone (an operator fixed the
    -- row or the ledger): closed, with the run that established it.
    resolved := fulltime_reconcile_close_unseen('balance_drift', v_subjects, p_run_started,
                                                p_after_account, v_upper);
END;
$$;

COMMENT ON FUNCTION fulltime_reconcile_accounts IS
    'One reconciliation chunk: the next p_limit accounts after p_after_account, each side '
    'compared with its ledger sum in one statement (one snapshot, no row locks); drift opened '
    'or updated as balance_drift incidents, drift no longer found resolved. Never writes money.';
