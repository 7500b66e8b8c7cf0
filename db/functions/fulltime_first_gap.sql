-- The first hole in a market's feed: seqs that never arrived while a later event waits for
-- them (fulltime_void_overdue refuses to store behind one; fulltime_close_gap closes one).

CREATE OR REPLACE FUNCTION fulltime_first_gap(
    p_market_id      bigint,
    OUT from_seq     bigint,
    OUT through_seq  bigint)
LANGUAGE sql
STABLE
AS $$
    -- The first hole above the market's applied seq and below its newest event; both NULL when
    -- there is none. A gap_closed event not yet applied covers its whole range.
    WITH applied AS (
        SELECT coalesce((SELECT p.applied_seq FROM settlement_progress p
                         WHERE p.market_id = p_market_id), 0) AS seq
    ), known AS (
        SELECT a.seq, a.seq AS last FROM applied a
        UNION ALL
        SELECT e.seq,
               CASE WHEN e.kind = 'gap_closed' THEN (e.payload->>'through')::bigint
                    ELSE e.seq END
        FROM result_events e, applied a
        WHERE e.market_id = p_market_id AND e.seq > a.seq
    ), ordered AS (
        SELECT k.last, lead(k.seq) OVER (ORDER BY k.seq) AS next FROM known k
    )
    SELECT o.last + 1, o.next - 1 FROM ordered o
    WHERE o.next > o.last + 1
    ORDER BY o.last
    LIMIT 1
$$;

COMMENT ON FUNCTION fulltime_first_gap IS
    'The first run of missing seqs of a market that a stored event waits for (NULLs: none).';
