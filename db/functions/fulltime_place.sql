-- One placement, as a server-side function: the path of a group of one bet.
--
-- fulltime_place_group (db/functions/fulltime_place_group.sql) places a group with a fixed number
-- of set-based statements, and explains the rules. For one bet its array bookkeeping costs more
-- than it saves (about 0.9 ms of server CPU against 0.5 ms here, measured in
-- docs/decisions/0007-set-based-placement-group.md), and under light load a group is one bet:
-- so the engine calls this function for a group of one, and the pgbench baseline of
-- scripts/bench-placement calls it too.
-- The two must give the same outcome, response and rows for the same bets in the same order:
-- tests/db/placement_group_pgtest.cpp proves it on seeded random groups, calling this function
-- once per item (tests/db/reference_place.hpp) beside the group function.
--
-- The statements run in docs/design.md's order: read the account's currency (to convert the
-- stake), claim the key, validate without locks, the bet row, one exposure shard, the ledger
-- reservation and outbox row, and last the conditional balance update. The engine calls it as a
-- single statement, its own transaction (autocommit): no session state, fine through PgBouncer
-- in transaction mode.
--
-- Amounts are bigint minor units, odds bigint units of 1/10000; the stake arrives in units of
-- 10^-p_stake_digits of its currency (the engine passes thousandths: it parses the stake before
-- it knows the account) and is converted with the account's currency (fulltime_to_minor). A
-- stake with more decimals than the currency, or above 10^15 minor units, is the outcome
-- 'invalid', checked before the key is claimed so that nothing at all is stored, as for any
-- request the engine refuses as invalid_request. The function returns integers and structured
-- refusal details (codes, current odds, limits), never prose. Outcomes and refusal
-- codes are fulltime_codes' domains place_outcome and place_refusal.
--
-- Every statement reads or writes rows by key, and must whatever the tables' statistics say: see
-- "Plans that do not depend on statistics" in fulltime_place_group.sql. So seq scans are off for
-- this function, and the key row it claimed is stored by its ctid (a TID scan, no index probe).
--
-- The exposure shard is the caller's preferred one (a placement actor passes its own index); a
-- full shard falls back to the one other shard with the most headroom (fulltime_place_group.sql
-- says why).
--
-- Raised inside fulltime_place to undo the bet's writes when a step after the first write
-- refuses (liability limit, insufficient funds). Never escapes the function.
-- SQLSTATE FT001, MESSAGE = the refusal code.

CREATE OR REPLACE FUNCTION fulltime_place(
    p_account_id      bigint,
    p_idempotency_key text,
    p_fingerprint     text,
    p_selection_id    bigint,
    p_stake           bigint,   -- in units of 10^-p_stake_digits of the account's currency
    p_stake_digits    integer,
    p_odds            bigint,
    p_accept          text,     -- 'exact' | 'better' | 'any'
    p_lock_timeout_ms integer,
    p_shard_hint      integer,  -- the caller's preferred exposure shard (modulo the market's)
    OUT outcome       text,     -- 'placed' | 'rejected' | 'replayed' | 'key_reused' | 'invalid'
    OUT response      jsonb)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
    v_key_tid       tid;      -- the key row this call claimed (NULL: claimed before)
    v_fingerprint   text;
    v_currency      text;
    v_stake         bigint;   -- p_stake in the currency's minor units
    v_market_id     bigint;
    v_market_status text;
    v_current_odds  bigint;
    v_stake_min     bigint;
    v_stake_max     bigint;
    v_shards        integer;
    v_odds          bigint;
    v_bet_id        bigint;
    v_placed_at     timestamptz;
    v_liability     numeric;
    v_shard         integer;
    v_other         integer;
    v_done          boolean;
    v_available     bigint;
    v_reserved      bigint;
    v_liability_max bigint;
    v_code          text;
    v_details       jsonb;
BEGIN
    -- SET LOCAL, scoped to this statement's transaction: a lock wait becomes error 55P03, which
    -- the engine counts and retries with the same key.
    PERFORM set_config('lock_timeout', p_lock_timeout_ms::text || 'ms', true);

    -- 0. The account's currency, which says how many decimals the stake may have. An account
    --    that does not exist is refused after the key is claimed (insufficient_funds), as before.
    SELECT a.currency INTO v_currency FROM accounts a WHERE a.account_id = p_account_id;
    v_stake := fulltime_to_minor(p_stake, p_stake_digits, v_currency);
    IF v_currency IS NOT NULL AND v_stake IS NULL THEN
        outcome := 'invalid';
        response := jsonb_build_object('outcome', outcome, 'stake', p_stake,
                                       'stake_digits', p_stake_digits, 'currency', v_currency);
        RETURN;
    END IF;

    -- 1. Claim the key. A concurrent claim of the same key makes this wait for that
    --    transaction; if it committed, the key exists and its stored response is read below.
    INSERT INTO idempotency_keys (account_id, idempotency_key, fingerprint)
    VALUES (p_account_id, p_idempotency_key, p_fingerprint)
    ON CONFLICT DO NOTHING
    RETURNING ctid INTO v_key_tid;

    IF v_key_tid IS NULL THEN
        SELECT k.fingerprint, k.response INTO v_fingerprint, response
        FROM idempotency_keys k
        WHERE k.account_id = p_account_id AND k.idempotency_key = p_idempotency_key;
        IF v_fingerprint IS DISTINCT FROM p_fingerprint THEN
            outcome := 'key_reused';
            response := jsonb_build_object('code', 'idempotency_key_reused');
        ELSE
            outcome := 'replayed';
        END IF;
        RETURN;
    END IF;

    -- 2. Validation that needs no lock: plain reads of the market and selection (the account
    --    was read in 0).
    SELECT s.market_id, s.odds, m.status, m.stake_min, m.stake_max, m.exposure_shards,
           m.liability_limit
    INTO v_market_id, v_current_odds, v_market_status, v_stake_min, v_stake_max, v_shards,
         v_liability_max
    FROM selections s JOIN markets m ON m.market_id = s.market_id
    WHERE s.selection_id = p_selection_id;

    IF v_currency IS NULL THEN
        v_code := 'insufficient_funds';
        v_details := jsonb_build_object('account_missing', true);
    ELSIF v_market_id IS NULL THEN
        v_code := 'unknown_selection';
        v_details := jsonb_build_object('selection_id', p_selection_id);
    ELSIF v_market_status <> 'open' THEN
        v_code := 'market_suspended';
        v_details := jsonb_build_object('market_id', v_market_id, 'market_status', v_market_status);
    ELSIF (p_accept = 'exact' AND v_current_odds <> p_odds)
       OR (p_accept = 'better' AND v_current_odds < p_odds) THEN
        v_code := 'odds_changed';
        v_details := jsonb_build_object('odds', v_current_odds);
    ELSIF v_stake < v_stake_min OR v_stake > v_stake_max THEN
        -- The limits are minor units of whichever currency the bet is in: the currency lets the
        -- engine show them in its decimals.
        v_code := 'stake_limit';
        v_details := jsonb_build_object('stake_min', v_stake_min, 'stake_max', v_stake_max,
                                        'currency', v_currency);
    ELSE
        -- The house's liability if the bet wins: stake * (odds - 1), rounded up. numeric,
        -- because stake * odds units can exceed bigint; a liability above the whole market's
        -- limit is refused before any write.
        v_liability := ceil(v_stake::numeric * (v_current_odds - 10000) / 10000);
        IF v_liability > v_liability_max THEN
            v_code := 'liability_limit';
        END IF;
    END IF;

    IF v_code IS NULL THEN
        -- The bet takes the current odds: equal to the asked odds under 'exact', at least as
        -- good under 'better', whatever they are under 'any'.
        v_odds := v_current_odds;
        BEGIN
            -- 3. The bet row.
            INSERT INTO bets (account_id, market_id, selection_id, currency, stake, odds,
                              idempotency_key)
            VALUES (p_account_id, v_market_id, p_selection_id, v_currency, v_stake, v_odds,
                    p_idempotency_key)
            RETURNING bet_id, placed_at INTO v_bet_id, v_placed_at;

            -- 4. One exposure shard: the caller's (a placement actor passes its own index, so
            --    concurrent groups hold different shard rows); when that shard is full, the one
            --    other shard with the most headroom in this statement's snapshot. A stale
            --    snapshot only costs a refusal: the update itself rechecks the limit.
            v_shard := (p_shard_hint % v_shards + v_shards) % v_shards;
            UPDATE market_exposure SET liability = liability + v_liability::bigint
            WHERE market_id = v_market_id AND shard = v_shard
              AND liability + v_liability::bigint <= liability_limit
            RETURNING true INTO v_done;
            IF v_done IS NULL AND v_shards > 1 THEN
                SELECT e.shard INTO v_other FROM market_exposure e
                WHERE e.market_id = v_market_id AND e.shard <> v_shard
                ORDER BY e.liability_limit - e.liability DESC, e.shard
                LIMIT 1;
                UPDATE market_exposure SET liability = liability + v_liability::bigint
                WHERE market_id = v_market_id AND shard = v_other
                  AND liability + v_liability::bigint <= liability_limit
                RETURNING true INTO v_done;
            END IF;
            IF v_done IS NULL THEN
                RAISE SQLSTATE 'FT001' USING MESSAGE = 'liability_limit';
            END IF;

            -- 5. The reservation in the ledger and the outbox row.
            -- A reservation carries its bet's placed_at (same period; migration 0005).
            INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id,
                                          credit_side, credit_account_id, amount, bet_id,
                                          created_at)
            VALUES ('bet:' || v_bet_id || ':reserve', v_currency, 'available', p_account_id,
                    'reserved', p_account_id, v_stake, v_bet_id, v_placed_at);
            -- placed_at and currency let the read model's projector insert the bet without a
            -- lookup in bets (fulltime_project.sql).
            INSERT INTO outbox (topic, account_id, payload)
            VALUES ('bet_placed', p_account_id,
                    jsonb_build_object('bet_id', v_bet_id, 'market_id', v_market_id,
                                       'selection_id', p_selection_id, 'stake', v_stake,
                                       'odds', v_odds, 'currency', v_currency,
                                       'placed_at', v_placed_at));

            -- 6. Last: the balance row, conditional on the funds.
            UPDATE accounts
            SET available = available - v_stake, reserved = reserved + v_stake
            WHERE account_id = p_account_id AND available >= v_stake
            RETURNING available, reserved INTO v_available, v_reserved;
            IF v_available IS NULL THEN
                RAISE SQLSTATE 'FT001' USING MESSAGE = 'insufficient_funds';
            END IF;
        EXCEPTION WHEN SQLSTATE 'FT001' THEN
            -- The block's writes are undone (the bet row too: forget its id); the key stays
            -- claimed and stores the refusal.
            v_code := SQLERRM;
            v_bet_id := NULL;
        END;
    END IF;

    IF v_code IS NOT NULL THEN
        outcome := 'rejected';
        response := jsonb_build_object('code', v_code) || coalesce(v_details, '{}');
    ELSE
        outcome := 'placed';
        response := jsonb_build_object(
            'bet_id', v_bet_id, 'account_id', p_account_id, 'market_id', v_market_id,
            'selection_id', p_selection_id, 'stake', v_stake, 'odds', v_odds,
            'placed_at', to_char(v_placed_at AT TIME ZONE 'UTC',
                                 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'available', v_available, 'reserved', v_reserved, 'currency', v_currency);
    END IF;
    -- The first result for the key, success or refusal, is what every retry gets: returned now
    -- exactly as it is stored. The row is this transaction's own insert: nothing else can have
    -- moved it since.
    response := jsonb_build_object('outcome', outcome) || response;
    UPDATE idempotency_keys
    SET response = fulltime_place.response,
        bet_id = v_bet_id
    WHERE ctid = v_key_tid
      AND account_id = p_account_id AND idempotency_key = p_idempotency_key;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fulltime_place: the claimed key row was not found at %', v_key_tid
            USING ERRCODE = 'XX000';
    END IF;
END;
$$;

COMMENT ON FUNCTION fulltime_place(bigint, text, text, bigint, bigint, integer, bigint, text, integer, integer) IS
    'One placement in one transaction, in docs/design.md''s order: convert the stake to the '
    'account''s minor units (invalid, storing nothing, when it cannot be), claim the '
    'idempotency key, validate without locks, bet row, one exposure shard (the caller''s, or the emptiest other), ledger reservation and outbox row, '
    'and last the conditional balance update; the first result is stored on the key.';
