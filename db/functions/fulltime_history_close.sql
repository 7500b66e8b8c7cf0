-- Time partitions (docs/schema.md, "Closing a period"): closes the oldest open period that is
-- over, storing every account's balance and every currency's house and cash at its end, so that
-- reconciliation and the audit start from those rows and read only the ledger after them.
--
-- A period can be closed once no row with a time inside it can still appear. Ledger rows carry
-- now() (their transaction's start) or, for a reservation, their bet's clock_timestamp(), both at
-- or after their transaction's start; so once no transaction of this database that started
-- before the period's end is still running (nor prepared), every row of the period is committed
-- or gone. That check is this function's first statement; the sums are read by later
-- statements, with later snapshots, which see every one of those transactions finished. The
-- caller also waits p_grace past the end, so a period is not tried while its last transactions
-- are still usual.
--
-- A period's balances are the previous closed period's plus its own partition's legs: the cost
-- of closing is one period's ledger and one row per account, whatever the years before.
-- Outcomes: closed, not_over (the oldest open period ends after now - p_grace), running (a
-- transaction older than its end is still running), none (every period that is over is closed).
CREATE OR REPLACE FUNCTION fulltime_history_close(
    p_grace          interval,
    OUT outcome      text,
    OUT period_start timestamptz,
    OUT period_end   timestamptz,
    OUT accounts     integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_prev timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('fulltime_history'));
    SELECT h.period_start, h.period_end INTO period_start, period_end
    FROM history_periods h
    WHERE h.closed_at IS NULL
    ORDER BY h.period_start
    LIMIT 1;
    IF period_start IS NULL THEN
        outcome := 'none';
        RETURN;
    END IF;
    IF period_end > now() - p_grace THEN
        outcome := 'not_over';
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_stat_activity a
               WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
                 AND a.backend_type = 'client backend'
                 AND a.xact_start < period_end)
       OR EXISTS (SELECT 1 FROM pg_prepared_xacts x
                  WHERE x.database = current_database() AND x.prepared < period_end) THEN
        outcome := 'running';
        RETURN;
    END IF;

    SELECT max(h.period_start) INTO v_prev
    FROM history_periods h
    WHERE h.closed_at IS NOT NULL AND h.period_start < fulltime_history_close.period_start;

    INSERT INTO period_balances (period_start, account_id, available, reserved, owed)
    SELECT fulltime_history_close.period_start, x.account_id, sum(x.available)::bigint,
           sum(x.reserved)::bigint, sum(x.owed)::bigint
    FROM (
        SELECT b.account_id, b.available, b.reserved, b.owed
        FROM period_balances b WHERE b.period_start = v_prev
        UNION ALL
        SELECT t.credit_account_id,
               CASE WHEN t.credit_side = 'available' THEN t.amount ELSE 0 END,
               CASE WHEN t.credit_side = 'reserved' THEN t.amount ELSE 0 END,
               CASE WHEN t.credit_side = 'owed' THEN -t.amount ELSE 0 END
        FROM ledger_transfers t
        WHERE t.created_at >= fulltime_history_close.period_start
          AND t.created_at < fulltime_history_close.period_end
          AND t.credit_account_id IS NOT NULL
        UNION ALL
        SELECT t.debit_account_id,
               CASE WHEN t.debit_side = 'available' THEN -t.amount ELSE 0 END,
               CASE WHEN t.debit_side = 'reserved' THEN -t.amount ELSE 0 END,
               CASE WHEN t.debit_side = 'owed' THEN t.amount ELSE 0 END
        FROM ledger_transfers t
        WHERE t.created_at >= fulltime_history_close.period_start
          AND t.created_at < fulltime_history_close.period_end
          AND t.debit_account_id IS NOT NULL
    ) x
    GROUP BY x.account_id;
    GET DIAGNOSTICS accounts = ROW_COUNT;

    INSERT INTO period_side_sums (period_start, currency, side, balance)
    SELECT fulltime_history_close.period_start, x.currency, x.side, sum(x.amount)::bigint
    FROM (
        SELECT s.currency, s.side, s.balance AS amount
        FROM period_side_sums s WHERE s.period_start = v_prev
        UNION ALL
        SELECT t.currency, t.credit_side, t.amount
        FROM ledger_transfers t
        WHERE t.created_at >= fulltime_history_close.period_start
          AND t.created_at < fulltime_history_close.period_end
          AND t.credit_side IN ('house', 'cash')
        UNION ALL
        SELECT t.currency, t.debit_side, -t.amount
        FROM ledger_transfers t
        WHERE t.created_at >= fulltime_history_close.period_start
          AND t.created_at < fulltime_history_close.period_end
          AND t.debit_side IN ('house', 'cash')
    ) x
    GROUP BY x.currency, x.side;

    UPDATE history_periods h SET closed_at = now()
    WHERE h.period_start = fulltime_history_close.period_start;
    outcome := 'closed';
END;
$$;

COMMENT ON FUNCTION fulltime_history_close IS
    'Closes the oldest open period that is over (its end before now - p_grace, no transaction '
    'older than its end still running): stores the balances at its end in period_balances and '
    'period_side_sums. outcome: closed, not_over, running, none.';
