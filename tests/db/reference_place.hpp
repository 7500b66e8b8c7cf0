#pragma once
/// The reference the set-based fulltime_place_group is compared with
/// (tests/db/placement_group_pgtest.cpp): reference_place_group, the loop the engine ran before,
/// calling the per-item fulltime_place (db/functions/fulltime_place.sql) once per item in one
/// transaction. fulltime_place is also what the engine runs for a group of one, so the
/// comparison holds the engine's two placement functions to the same results. Test code only:
/// the tests create the loop in their scratch databases.

namespace fulltime::test {

/// Creates reference_place_group(<the arrays of fulltime_place_group>).
inline constexpr const char* reference_place_sql = R"sql(
-- The group as the engine ran it before: one call of the per-item fulltime_place per item, in
-- arrival order, in one statement (so one transaction).
CREATE OR REPLACE FUNCTION reference_place_group(
    p_accounts bigint[], p_keys text[], p_fingerprints text[], p_selections bigint[],
    p_stakes bigint[], p_stake_digits integer, p_odds bigint[], p_accepts text[], p_lock_timeout_ms integer,
    p_shard_hint integer)
RETURNS TABLE (item integer, outcome text, response jsonb)
LANGUAGE plpgsql
AS $$
DECLARE
    v_row record;
BEGIN
    FOR i IN 1 .. coalesce(cardinality(p_accounts), 0) LOOP
        SELECT p.outcome, p.response INTO v_row
        FROM fulltime_place(p_accounts[i], p_keys[i], p_fingerprints[i], p_selections[i],
                            p_stakes[i], p_stake_digits, p_odds[i], p_accepts[i],
                            p_lock_timeout_ms,
                            p_shard_hint) AS p;
        item := i;
        outcome := v_row.outcome;
        response := v_row.response;
        RETURN NEXT;
    END LOOP;
END;
$$;
)sql";

}  // namespace fulltime::test
