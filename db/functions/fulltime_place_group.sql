-- Placement, as a server-side function over a group of bets.
--
-- Natural group commit (docs/design.md, "Parts"): the requests that queued in one placement
-- actor's mailbox while its previous transaction ran are executed together, in one statement and
-- so one transaction and one commit, each keeping its own outcome. A group of one goes to
-- fulltime_place instead, the per-item function, which is cheaper for one bet; the two are held to
-- the same results by tests/db/placement_group_pgtest.cpp (see fulltime_place.sql).
--
-- Why a function: a placement's steps depend on each other (a refusal at any step must leave only
-- the stored refusal behind), and as one function call the group is one round trip; the engine
-- calls it as a single statement, its own transaction (autocommit): no session state, fine
-- through PgBouncer in transaction mode.
--
-- Set-based: a fixed number of statements per group whatever its size, never one per item. The
-- items are parallel arrays (item i is element i of each); the decisions are made in memory, in
-- arrival order, over rows read or locked by one statement per step:
--   (a) lock_timeout for this transaction (SET LOCAL): a lock wait becomes error 55P03, which the
--       engine counts and retries with the same keys (everything, keys included, rolls back);
--       then one SELECT of the items' accounts (currency), which converts each stake to the
--       currency's minor units: an item whose stake cannot be one (more decimals than the
--       currency has, or over 10^15 minor units) is 'invalid' and takes no further part, its key
--       not even claimed, as for any request the engine refuses as invalid_request;
--   (b) claim the keys with one INSERT ... ON CONFLICT DO NOTHING, sorted by (account, key), so
--       that two groups claiming overlapping keys wait for each other in one order, never in a
--       cycle. A key another transaction is claiming makes this wait for it; if it committed,
--       its stored response is read in (c);
--   (c) only when a key was not claimed: one SELECT of the stored keys. Same fingerprint: the
--       stored response, replayed. Another fingerprint: key_reused with {"code":
--       "idempotency_key_reused"}, stored nowhere;
--   (d) one SELECT of the items' selections and markets: validation that needs no lock, in the
--       order of checks below;
--   (e) lock the one preferred exposure shard of each market of the group, in (market, shard)
--       order, and decide the liability of each item in arrival order in memory. An item that
--       does not fit its preferred shard falls back to the one other shard with the most headroom
--       (see below); that rare path updates that row with a statement of its own;
--   (f) last, lock the balance rows of the group's accounts in ascending account_id (as
--       settlement's fulltime_settle_balances does, so the two never wait in a cycle) and decide
--       the funds in arrival order in memory: a second bet of one account sees the first one's
--       reservation, and each placed item's response carries available and reserved as they stand
--       after it. A refusal for funds gives its liability back;
--   (g) the writes, each one statement for the group: bets (in arrival order, so bet ids ascend
--       with arrival), exposure (per-shard sums), ledger reservations, outbox rows, balances
--       (per-account sums), and the response and bet id stored on each claimed key;
--   (h) one row per item, in item order.
-- So a group runs at most 14 statements (fewer when, say, every key replays), plus one per bet
-- whose preferred shard is full, whatever its size.
-- No subtransaction (the per-item EXCEPTION blocks of the loop this replaced each cost one, and
-- a transaction beyond 64 overflows the subtransaction cache: docs/schema.md).
--
-- The result is the one that placing the items one by one in arrival order in one transaction
-- would give (the outcome, the response and the stored rows), with one deliberate difference:
-- liability is decided for the whole group before funds, so a refusal for insufficient funds
-- gives its liability back only after the later items of the group were decided. A later item of
-- the same market may then be refused liability_limit (or fall back to another shard) for
-- headroom an earlier item of its group held and then gave back. This errs on the safe side: the
-- exposure can never exceed a limit, the item is refused rather than over-committed, and it needs
-- a shard filled to the brim and an unfunded bet ahead in the same group.
--
-- Two items with one (account, key) in a group behave as two requests in sequence: the second
-- gets the first's result replayed (or key_reused, for other parameters).
--
-- Amounts are bigint minor units, odds bigint units of 1/10000; the stakes arrive in units of
-- 10^-p_stake_digits of their currency (the engine passes thousandths: it parses a stake before
-- it knows the account) and are converted in (a) (fulltime_to_minor). The function returns
-- integers and structured refusal details (codes, current odds, limits), never prose: the
-- engine formats amounts and composes messages (core/bets_protocol), so no decimal formatting
-- lives in SQL.
-- Outcomes and refusal codes are fulltime_codes' domains place_outcome and place_refusal.
--
-- The exposure shard is chosen by the caller, not by bet id. Picked by bet id, the bets of one
-- group spread over every shard of the market and the placement actors' groups held each other's
-- shard rows until their commits: under load most lock timeouts (55P03) in the placement path
-- were these waits, and each retried a whole group (docs/decisions/0002-exposure-shard-by-actor.md
-- has the measurement). So every group names a preferred shard: a placement actor passes its own
-- index, so two actors' groups do not touch the same shard row until one shard fills. A full shard
-- falls back to the one other shard with the most headroom (in this statement's snapshot; a stale
-- snapshot only costs a refusal, the update itself rechecks the limit), not to the next one, so a
-- busy actor's bets spill where the market still has room instead of being refused while other
-- shards are empty. That fallback locks a second shard row after the preferred ones, out of their
-- order: two groups whose preferred shards are both full may then wait for each other (deadlock,
-- 40P01, retried by the engine like a lock timeout), as they could before this function.
--
-- Rows are locked FOR NO KEY UPDATE: the lock the later UPDATE of the same row takes anyway
-- (FOR UPDATE would add nothing but a conflict with foreign-key checks' FOR KEY SHARE).
--
-- Plans that do not depend on statistics. A pool connection plans each statement here once and
-- keeps that plan until something invalidates it (an ANALYZE of a table it reads, usually within
-- autovacuum's minute). Planned while a table was empty or small (a new database, a quiet night,
-- a table just vacuumed), an UPDATE ... FROM unnest(...) is cheapest as a hash join over a
-- sequential scan of the whole table, and so it stays while the table grows: every group then
-- scanned every idempotency key and every account (scripts/bench-placement's first run after
-- seeding spent three quarters of the server's CPU there,
-- docs/decisions/0008-plans-independent-of-statistics.md). So:
--   - seq scans are off for this function (SET below): each lookup is an index probe;
--   - the shard rows of (e) are locked by one primary-key probe per row (LATERAL);
--   - the rows this function updates are addressed by the ctid it read them at, and by nothing
--     else: the keys it inserted in (b), the shard rows it locked in (e) and the balance rows it
--     locked in (f) (a row this transaction inserted or locked cannot move until it ends). A join
--     on ctid alone has no index to merge along and a hash join would need the seq scan that is
--     off, so such an UPDATE is a nested loop of TID probes whatever the table's size is thought
--     to be. Each counts the rows it updated against the rows it meant to (RETURNING, in the
--     same statement) and raises XX000 if they differ.
-- tests/db/placement_group_pgtest.cpp places groups on freshly vacuumed empty tables and requires
-- no sequential scan of the tables that grow.

CREATE OR REPLACE FUNCTION fulltime_place_group(
    p_accounts        bigint[],  -- item i: the account (from the token) ...
    p_keys            text[],    -- ... its idempotency key ...
    p_fingerprints    text[],    -- ... the fingerprint of its parameters ...
    p_selections      bigint[],  -- ... the selection ...
    p_stakes          bigint[],  -- ... the stake, in units of 10^-p_stake_digits ...
    p_stake_digits    integer,   -- (every stake's scale, in its account's currency)
    p_odds            bigint[],  -- ... the odds asked ...
    p_accepts         text[],    -- ... and which current odds it accepts: exact | better | any
    p_lock_timeout_ms integer,
    p_shard_hint      integer)   -- every item's preferred exposure shard (modulo the market's)
RETURNS TABLE (item integer, outcome text, response jsonb)  -- item: 1-based position
LANGUAGE plpgsql
-- Each statement below is planned once per session, not at every call: with its arrays as
-- parameters, PL/pgSQL's plan cache would otherwise judge a plan made for the call's own arrays
-- (1 row for a group of 1) cheaper than the generic one (10 rows estimated) and plan every
-- statement again at every call, most of the cost of a small group. The lookups by key are
-- written as LATERAL subqueries (OFFSET 0 keeps them apart) so that the generic plan probes the
-- primary keys whatever the tables' sizes.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    n              integer := coalesce(cardinality(p_accounts), 0);
    -- Per item.
    v_new          boolean[];  -- its (account, key) was claimed by this call
    v_key_tid      tid[];      -- ... at this ctid
    v_first        integer[];  -- the first item of the group with its (account, key)
    v_stored_fp    text[];     -- the stored fingerprint of a key claimed before (c)
    v_stored       jsonb[];    -- ... and its stored response
    v_currency     text[];     -- (a): NULL when the account does not exist
    v_stake        bigint[];   -- (a): the stake in the currency's minor units
    v_invalid      boolean[];  -- (a): the stake cannot be one; nothing else happens to it
    v_market       bigint[];   -- NULL when the selection does not exist
    v_current_odds bigint[];
    v_status       text[];
    v_stake_min    bigint[];
    v_stake_max    bigint[];
    v_shards       integer[];
    v_limit        bigint[];   -- the market's liability limit
    v_liability    bigint[];   -- stake * (odds - 1), rounded up
    v_shard        integer[];  -- the shard holding its liability
    v_fallback     boolean[];  -- that shard is not the preferred one (already updated)
    v_code         text[];     -- why it is refused; NULL while it may be placed
    v_details      jsonb[];
    v_candidate    boolean[];  -- claimed, valid, and still to be placed
    v_available    bigint[];   -- the account's balance after it
    v_reserved     bigint[];
    v_bet_id       bigint[];
    v_placed_at    timestamptz[];
    v_outcome      text[];
    v_response     jsonb[];
    -- Locked rows: preferred exposure shards (one per market) and balances.
    v_lock_markets bigint[] := '{}';
    v_lock_shards  integer[] := '{}';
    v_ex_market    bigint[];
    v_ex_shard     integer[];
    v_ex_liability bigint[];
    v_ex_limit     bigint[];
    v_ex_tid       tid[];      -- where each preferred shard row was locked
    v_ex_delta     bigint[];   -- the liability its placed items add, for (g)
    v_ex_at        integer[];  -- per item: its preferred locked row (NULL after a fallback)
    v_lock_accounts bigint[] := '{}';
    v_acc_id       bigint[];
    v_acc_tid      tid[];      -- where each balance row was locked
    v_acc_available bigint[];
    v_acc_reserved bigint[];
    v_any_placed   boolean := false;
    v_pref         integer;
    v_other        integer;
    v_numeric      numeric;
    i              integer;
    j              integer;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    IF array_lower(p_accounts, 1) <> 1
       OR cardinality(p_keys) IS DISTINCT FROM n OR array_lower(p_keys, 1) <> 1
       OR cardinality(p_fingerprints) IS DISTINCT FROM n OR array_lower(p_fingerprints, 1) <> 1
       OR cardinality(p_selections) IS DISTINCT FROM n OR array_lower(p_selections, 1) <> 1
       OR cardinality(p_stakes) IS DISTINCT FROM n OR array_lower(p_stakes, 1) <> 1
       OR cardinality(p_odds) IS DISTINCT FROM n OR array_lower(p_odds, 1) <> 1
       OR cardinality(p_accepts) IS DISTINCT FROM n OR array_lower(p_accepts, 1) <> 1 THEN
        RAISE EXCEPTION 'fulltime_place_group: the item arrays must be one-dimensional, '
                        'start at 1 and have one length'
            USING ERRCODE = '22023';
    END IF;
    v_shard := array_fill(NULL::integer, ARRAY[n]);
    v_fallback := array_fill(false, ARRAY[n]);
    v_liability := array_fill(NULL::bigint, ARRAY[n]);
    v_code := array_fill(NULL::text, ARRAY[n]);
    v_details := array_fill(NULL::jsonb, ARRAY[n]);
    v_candidate := array_fill(false, ARRAY[n]);
    v_available := array_fill(NULL::bigint, ARRAY[n]);
    v_reserved := array_fill(NULL::bigint, ARRAY[n]);
    v_bet_id := array_fill(NULL::bigint, ARRAY[n]);
    v_placed_at := array_fill(NULL::timestamptz, ARRAY[n]);
    v_outcome := array_fill(NULL::text, ARRAY[n]);
    v_response := array_fill(NULL::jsonb, ARRAY[n]);

    -- (a) SET LOCAL, scoped to this statement's transaction.
    PERFORM set_config('lock_timeout', p_lock_timeout_ms::text || 'ms', true);

    --     The accounts' currencies and the stakes in their minor units. An account that does
    --     not exist is refused in (d) (insufficient_funds), after its key is claimed, as before.
    SELECT array_agg(a.currency::text ORDER BY g.ord),
           array_agg(fulltime_to_minor(g.stake, p_stake_digits, a.currency) ORDER BY g.ord),
           array_agg(a.currency IS NOT NULL
                     AND fulltime_to_minor(g.stake, p_stake_digits, a.currency) IS NULL
                     ORDER BY g.ord)
    INTO v_currency, v_stake, v_invalid
    FROM unnest(p_accounts, p_stakes) WITH ORDINALITY AS g(account_id, stake, ord)
    LEFT JOIN LATERAL (SELECT x.currency FROM accounts x WHERE x.account_id = g.account_id
                       OFFSET 0) a ON true;

    -- (b) Claim the keys: the first valid item of each (account, key) claims it with its
    --     fingerprint; an invalid item claims nothing and is never new.
    WITH claimed AS (
        INSERT INTO idempotency_keys AS k (account_id, idempotency_key, fingerprint)
        SELECT DISTINCT ON (c.account_id, c.idempotency_key COLLATE "C")
               c.account_id, c.idempotency_key, c.fingerprint
        FROM unnest(p_accounts, p_keys, p_fingerprints, v_invalid) WITH ORDINALITY
             AS c(account_id, idempotency_key, fingerprint, invalid, ord)
        WHERE NOT c.invalid
        ORDER BY c.account_id, c.idempotency_key COLLATE "C", c.ord
        ON CONFLICT DO NOTHING
        RETURNING k.account_id, k.idempotency_key, k.ctid
    )
    SELECT array_agg(x.is_new ORDER BY x.ord), array_agg(x.first_ord ORDER BY x.ord),
           array_agg(x.tid ORDER BY x.ord)
    INTO v_new, v_first, v_key_tid
    FROM (SELECT g.ord, cl.account_id IS NOT NULL AND NOT g.invalid AS is_new, cl.ctid AS tid,
                 (min(g.ord) FILTER (WHERE NOT g.invalid)
                      OVER (PARTITION BY g.account_id, g.idempotency_key))::integer
                     AS first_ord
          FROM unnest(p_accounts, p_keys, v_invalid) WITH ORDINALITY
               AS g(account_id, idempotency_key, invalid, ord)
          LEFT JOIN claimed cl
            ON cl.account_id = g.account_id AND cl.idempotency_key = g.idempotency_key) x;

    -- (c) Keys claimed before this call (by an earlier request, or by a concurrent one that
    --     committed while (b) waited for it): read in a new snapshot, which sees that commit.
    IF true = ANY (SELECT NOT x.is_new AND NOT x.invalid
                   FROM unnest(v_new, v_invalid) AS x(is_new, invalid)) THEN
        SELECT array_agg(k.fingerprint ORDER BY g.ord), array_agg(k.response ORDER BY g.ord)
        INTO v_stored_fp, v_stored
        FROM unnest(p_accounts, p_keys) WITH ORDINALITY AS g(account_id, idempotency_key, ord)
        LEFT JOIN LATERAL (SELECT x.fingerprint, x.response FROM idempotency_keys x
                           WHERE x.account_id = g.account_id
                             AND x.idempotency_key = g.idempotency_key
                           OFFSET 0) k ON true;
        FOR i IN 1 .. n LOOP
            IF NOT v_new[i] AND NOT v_invalid[i] THEN
                IF v_stored_fp[i] IS DISTINCT FROM p_fingerprints[i] THEN
                    v_outcome[i] := 'key_reused';
                    v_response[i] := jsonb_build_object('code', 'idempotency_key_reused');
                ELSE
                    v_outcome[i] := 'replayed';
                    v_response[i] := v_stored[i];
                END IF;
            END IF;
        END LOOP;
    END IF;

    -- (d) Validation that needs no lock: plain reads of the markets and selections (the
    --     accounts were read in (a)).
    IF true = ANY (v_new) THEN
        SELECT array_agg(s.market_id ORDER BY g.ord),
               array_agg(s.odds ORDER BY g.ord), array_agg(s.status ORDER BY g.ord),
               array_agg(s.stake_min ORDER BY g.ord), array_agg(s.stake_max ORDER BY g.ord),
               array_agg(s.exposure_shards::integer ORDER BY g.ord),
               array_agg(s.liability_limit ORDER BY g.ord)
        INTO v_market, v_current_odds, v_status, v_stake_min, v_stake_max, v_shards, v_limit
        FROM unnest(p_selections) WITH ORDINALITY AS g(selection_id, ord)
        LEFT JOIN LATERAL (SELECT y.market_id, y.odds, z.status, z.stake_min, z.stake_max,
                                  z.exposure_shards, z.liability_limit
                           FROM selections y JOIN markets z ON z.market_id = y.market_id
                           WHERE y.selection_id = g.selection_id OFFSET 0) s ON true;

        FOR i IN 1 .. n LOOP
            CONTINUE WHEN NOT v_new[i] OR v_first[i] <> i;
            IF v_currency[i] IS NULL THEN
                v_code[i] := 'insufficient_funds';
                v_details[i] := jsonb_build_object('account_missing', true);
            ELSIF v_market[i] IS NULL THEN
                v_code[i] := 'unknown_selection';
                v_details[i] := jsonb_build_object('selection_id', p_selections[i]);
            ELSIF v_status[i] <> 'open' THEN
                v_code[i] := 'market_suspended';
                v_details[i] := jsonb_build_object('market_id', v_market[i],
                                                   'market_status', v_status[i]);
            ELSIF (p_accepts[i] = 'exact' AND v_current_odds[i] <> p_odds[i])
               OR (p_accepts[i] = 'better' AND v_current_odds[i] < p_odds[i]) THEN
                v_code[i] := 'odds_changed';
                v_details[i] := jsonb_build_object('odds', v_current_odds[i]);
            ELSIF v_stake[i] < v_stake_min[i] OR v_stake[i] > v_stake_max[i] THEN
                -- The limits are minor units of whichever currency the bet is in: the currency
                -- lets the engine show them in its decimals.
                v_code[i] := 'stake_limit';
                v_details[i] := jsonb_build_object('stake_min', v_stake_min[i],
                                                   'stake_max', v_stake_max[i],
                                                   'currency', v_currency[i]);
            ELSE
                -- The house's liability if the bet wins: stake * (odds - 1), rounded up.
                -- numeric, because stake * odds units can exceed bigint; a liability above the
                -- whole market's limit is refused before any lock.
                v_numeric := ceil(v_stake[i]::numeric * (v_current_odds[i] - 10000) / 10000);
                IF v_numeric > v_limit[i] THEN
                    v_code[i] := 'liability_limit';
                ELSE
                    v_liability[i] := v_numeric::bigint;
                    v_candidate[i] := true;
                    v_pref := (p_shard_hint % v_shards[i] + v_shards[i]) % v_shards[i];
                    IF NOT v_market[i] = ANY (v_lock_markets) THEN
                        v_lock_markets := v_lock_markets || v_market[i];
                        v_lock_shards := v_lock_shards || v_pref;
                    END IF;
                END IF;
            END IF;
        END LOOP;
    END IF;

    -- (e) Exposure: the preferred shard of each market, locked in (market, shard) order: the
    --     sorted pairs drive one primary-key probe each (LATERAL), which locks as it goes.
    IF cardinality(v_lock_markets) > 0 THEN
        SELECT array_agg(e.market_id ORDER BY e.market_id, e.shard),
               array_agg(e.shard::integer ORDER BY e.market_id, e.shard),
               array_agg(e.liability ORDER BY e.market_id, e.shard),
               array_agg(e.liability_limit ORDER BY e.market_id, e.shard),
               array_agg(e.ctid ORDER BY e.market_id, e.shard)
        INTO v_ex_market, v_ex_shard, v_ex_liability, v_ex_limit, v_ex_tid
        FROM (SELECT w.market_id, w.shard
              FROM unnest(v_lock_markets, v_lock_shards) AS w(market_id, shard)
              ORDER BY w.market_id, w.shard
              OFFSET 0) w
        CROSS JOIN LATERAL (SELECT x.market_id, x.shard, x.liability, x.liability_limit, x.ctid
                            FROM market_exposure x
                            WHERE x.market_id = w.market_id AND x.shard = w.shard
                            FOR NO KEY UPDATE) e;
        v_ex_delta := array_fill(0::bigint, ARRAY[coalesce(cardinality(v_ex_market), 0)]);
        v_ex_at := array_fill(NULL::integer, ARRAY[n]);

        FOR i IN 1 .. n LOOP
            CONTINUE WHEN NOT v_candidate[i];
            -- One locked row per market: its preferred shard (none if the row is missing).
            j := array_position(v_ex_market, v_market[i]);
            IF j IS NOT NULL AND v_ex_liability[j] + v_liability[i] <= v_ex_limit[j] THEN
                v_ex_liability[j] := v_ex_liability[j] + v_liability[i];
                v_shard[i] := v_ex_shard[j];
                v_ex_at[i] := j;
            ELSIF v_shards[i] > 1 THEN
                -- Rare: the preferred shard is full. The other shard with the most headroom in
                -- this statement's snapshot; the update rechecks the limit on the locked row.
                v_pref := (p_shard_hint % v_shards[i] + v_shards[i]) % v_shards[i];
                UPDATE market_exposure e SET liability = e.liability + v_liability[i]
                WHERE e.market_id = v_market[i]
                  AND e.shard = (SELECT o.shard FROM market_exposure o
                                 WHERE o.market_id = v_market[i] AND o.shard <> v_pref
                                 ORDER BY o.liability_limit - o.liability DESC, o.shard
                                 LIMIT 1)
                  AND e.liability + v_liability[i] <= e.liability_limit
                RETURNING e.shard INTO v_other;
                IF v_other IS NULL THEN
                    v_code[i] := 'liability_limit';
                    v_candidate[i] := false;
                ELSE
                    v_shard[i] := v_other;
                    v_fallback[i] := true;
                END IF;
            ELSE
                v_code[i] := 'liability_limit';
                v_candidate[i] := false;
            END IF;
            IF v_candidate[i] AND NOT p_accounts[i] = ANY (v_lock_accounts) THEN
                v_lock_accounts := v_lock_accounts || p_accounts[i];
            END IF;
        END LOOP;
    END IF;

    -- (f) Last: the balance rows, locked in ascending account_id, and the funds decided in
    --     arrival order.
    IF cardinality(v_lock_accounts) > 0 THEN
        SELECT array_agg(b.account_id ORDER BY b.account_id),
               array_agg(b.available ORDER BY b.account_id),
               array_agg(b.reserved ORDER BY b.account_id),
               array_agg(b.ctid ORDER BY b.account_id)
        INTO v_acc_id, v_acc_available, v_acc_reserved, v_acc_tid
        FROM (SELECT x.account_id, x.available, x.reserved, x.ctid
              FROM accounts x
              WHERE x.account_id = ANY (v_lock_accounts)
              ORDER BY x.account_id
              FOR NO KEY UPDATE OF x) b;

        FOR i IN 1 .. n LOOP
            CONTINUE WHEN NOT v_candidate[i];
            j := array_position(v_acc_id, p_accounts[i]);
            IF j IS NOT NULL AND v_acc_available[j] >= v_stake[i] THEN
                v_acc_available[j] := v_acc_available[j] - v_stake[i];
                v_acc_reserved[j] := v_acc_reserved[j] + v_stake[i];
                v_available[i] := v_acc_available[j];
                v_reserved[i] := v_acc_reserved[j];
                v_any_placed := true;
                IF NOT v_fallback[i] THEN
                    v_ex_delta[v_ex_at[i]] := v_ex_delta[v_ex_at[i]] + v_liability[i];
                END IF;
            ELSE
                v_code[i] := 'insufficient_funds';
                v_candidate[i] := false;
                IF v_fallback[i] THEN
                    -- Rarer still: its fallback shard was already updated; give it back (a row
                    -- this transaction holds).
                    UPDATE market_exposure e SET liability = e.liability - v_liability[i]
                    WHERE e.market_id = v_market[i] AND e.shard = v_shard[i];
                END IF;
            END IF;
        END LOOP;
    END IF;

    -- (g) The writes.
    IF v_any_placed THEN
        -- The bets take the current odds: equal to the asked odds under 'exact', at least as good
        -- under 'better', whatever they are under 'any'. Inserted in arrival order.
        WITH inserted AS (
            INSERT INTO bets AS b (account_id, market_id, selection_id, currency, stake, odds,
                                   idempotency_key)
            SELECT g.account_id, g.market_id, g.selection_id, g.currency, g.stake, g.odds,
                   g.idempotency_key
            FROM unnest(p_accounts, v_market, p_selections, v_currency, v_stake, v_current_odds,
                        p_keys, v_candidate) WITH ORDINALITY
                 AS g(account_id, market_id, selection_id, currency, stake, odds,
                      idempotency_key, placed, ord)
            WHERE g.placed
            ORDER BY g.ord
            RETURNING b.bet_id, b.placed_at, b.account_id, b.idempotency_key
        )
        SELECT array_agg(ins.bet_id ORDER BY g.ord), array_agg(ins.placed_at ORDER BY g.ord)
        INTO v_bet_id, v_placed_at
        FROM unnest(p_accounts, p_keys, v_candidate) WITH ORDINALITY
             AS g(account_id, idempotency_key, placed, ord)
        LEFT JOIN inserted ins
          ON g.placed AND ins.account_id = g.account_id
         AND ins.idempotency_key = g.idempotency_key;
    END IF;

    -- The preferred shards: each by the sum of its placed items' liabilities, at the ctid (e)
    -- locked it at (a fallback never updates a preferred row: it picks another shard).
    IF v_any_placed AND 0 < ANY (v_ex_delta) THEN
        WITH d AS (
            SELECT x.tid, x.delta FROM unnest(v_ex_tid, v_ex_delta) AS x(tid, delta)
            WHERE x.delta <> 0
        ),
        done AS (
            UPDATE market_exposure e SET liability = e.liability + d.delta
            FROM d WHERE e.ctid = d.tid
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM done), (SELECT count(*) FROM d) INTO i, j;
        IF i <> j THEN
            RAISE EXCEPTION 'fulltime_place_group: % exposure rows updated, not every locked one',
                            i
                USING ERRCODE = 'XX000';
        END IF;
    END IF;

    IF v_any_placed THEN
        -- The reservations in the ledger and the outbox rows, in arrival order.
        -- A reservation carries its bet's placed_at: the two are in the same period (migration
        -- 0005).
        INSERT INTO ledger_transfers (entry_key, currency, debit_side, debit_account_id,
                                      credit_side, credit_account_id, amount, bet_id, created_at)
        SELECT 'bet:' || g.bet_id || ':reserve', g.currency, 'available', g.account_id,
               'reserved', g.account_id, g.stake, g.bet_id, g.placed_at
        FROM unnest(v_bet_id, v_currency, p_accounts, v_stake, v_placed_at) WITH ORDINALITY
             AS g(bet_id, currency, account_id, stake, placed_at, ord)
        WHERE g.bet_id IS NOT NULL
        ORDER BY g.ord;

        -- placed_at and currency let the read model's projector insert the bet without a
        -- lookup in bets (fulltime_project.sql).
        INSERT INTO outbox (topic, account_id, payload)
        SELECT 'bet_placed', g.account_id,
               jsonb_build_object('bet_id', g.bet_id, 'market_id', g.market_id,
                                  'selection_id', g.selection_id, 'stake', g.stake,
                                  'odds', g.odds, 'currency', g.currency,
                                  'placed_at', g.placed_at)
        FROM unnest(v_bet_id, p_accounts, v_market, p_selections, v_stake, v_current_odds,
                    v_currency, v_placed_at)
             WITH ORDINALITY AS g(bet_id, account_id, market_id, selection_id, stake, odds,
                                  currency, placed_at, ord)
        WHERE g.bet_id IS NOT NULL
        ORDER BY g.ord;

        -- The balances: each account once, by the sum of its placed stakes, at the ctid where
        -- (f) locked its row.
        WITH d AS (
            SELECT l.tid, s.stake
            FROM (SELECT x.account_id, sum(x.stake)::bigint AS stake
                  FROM unnest(p_accounts, v_stake, v_candidate) AS x(account_id, stake, placed)
                  WHERE x.placed
                  GROUP BY x.account_id) s
            JOIN unnest(v_acc_id, v_acc_tid) AS l(account_id, tid)
              ON l.account_id = s.account_id
        ),
        done AS (
            UPDATE accounts a
            SET available = a.available - d.stake, reserved = a.reserved + d.stake
            FROM d WHERE a.ctid = d.tid
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM done), (SELECT count(*) FROM d) INTO i, j;
        IF i <> j THEN
            RAISE EXCEPTION 'fulltime_place_group: % balance rows updated, not every locked one', i
                USING ERRCODE = 'XX000';
        END IF;
    END IF;

    -- The responses of the items that claimed their key.
    FOR i IN 1 .. n LOOP
        CONTINUE WHEN NOT v_new[i] OR v_first[i] <> i;
        IF v_code[i] IS NOT NULL THEN
            v_outcome[i] := 'rejected';
            v_response[i] := jsonb_build_object('code', v_code[i]) || coalesce(v_details[i], '{}');
        ELSE
            v_outcome[i] := 'placed';
            v_response[i] := jsonb_build_object(
                'bet_id', v_bet_id[i], 'account_id', p_accounts[i], 'market_id', v_market[i],
                'selection_id', p_selections[i], 'stake', v_stake[i],
                'odds', v_current_odds[i],
                'placed_at', to_char(v_placed_at[i] AT TIME ZONE 'UTC',
                                     'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'available', v_available[i], 'reserved', v_reserved[i],
                'currency', v_currency[i]);
        END IF;
        -- The first result for the key, success or refusal, is what every retry gets: returned
        -- now exactly as it is stored.
        v_response[i] := jsonb_build_object('outcome', v_outcome[i]) || v_response[i];
    END LOOP;

    -- At the ctid (b) inserted each key at: this transaction's own rows, which nothing else can
    -- have moved.
    WITH d AS (
        SELECT u.tid, u.response, u.bet_id
        FROM unnest(v_key_tid, v_response, v_bet_id, v_new, v_first) WITH ORDINALITY
             AS u(tid, response, bet_id, is_new, first_ord, ord)
        WHERE u.is_new AND u.first_ord = u.ord
    ),
    done AS (
        UPDATE idempotency_keys x SET response = d.response, bet_id = d.bet_id
        FROM d WHERE x.ctid = d.tid
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM done), (SELECT count(*) FROM d) INTO i, j;
    IF i <> j THEN
        RAISE EXCEPTION 'fulltime_place_group: % keys stored, not every claimed one', i
            USING ERRCODE = 'XX000';
    END IF;

    -- A later item with a key an earlier item of the group claimed: a second request after the
    -- first, which sees the first's stored result.
    FOR i IN 1 .. n LOOP
        CONTINUE WHEN NOT v_new[i] OR v_first[i] = i;
        IF p_fingerprints[v_first[i]] IS DISTINCT FROM p_fingerprints[i] THEN
            v_outcome[i] := 'key_reused';
            v_response[i] := jsonb_build_object('code', 'idempotency_key_reused');
        ELSE
            v_outcome[i] := 'replayed';
            v_response[i] := v_response[v_first[i]];
        END IF;
    END LOOP;

    -- An invalid item: what the engine needs to tell the client why, stored nowhere.
    FOR i IN 1 .. n LOOP
        CONTINUE WHEN NOT v_invalid[i];
        v_outcome[i] := 'invalid';
        v_response[i] := jsonb_build_object('outcome', 'invalid', 'stake', p_stakes[i],
                                            'stake_digits', p_stake_digits,
                                            'currency', v_currency[i]);
    END LOOP;

    -- (h) One row per item, in item order.
    RETURN QUERY
    SELECT r.ord::integer, r.outcome, r.response
    FROM unnest(v_outcome, v_response) WITH ORDINALITY AS r(outcome, response, ord)
    ORDER BY r.ord;
END;
$$;

COMMENT ON FUNCTION fulltime_place_group IS
    'Several placements in one transaction (natural group commit), each with its own outcome, in '
    'a fixed number of statements: claim the keys (sorted), validate without locks, lock the '
    'preferred exposure shards (sorted), last lock the balances in ascending account order, '
    'decide in arrival order in memory, write set-based; the first result is stored on each key. '
    'item is the 1-based position in the arrays.';
