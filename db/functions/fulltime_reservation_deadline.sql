-- Reservation deadlines. A reservation (an open bet: no effect in force) belongs to its market;
-- its deadline is the market's settle_deadline_at plus a grace period, or, for a market
-- created without one, created_at plus a default, so every reservation has a deadline. Both
-- periods come from the engine's config (reservations.grace_s and
-- reservations.default_deadline_s). The sweeper (actors/reservation_sweeper.cpp) reports
-- markets past their deadline that still hold open bets as overdue_reservation incidents
-- (fulltime_note_overdue), one per market; it never moves money. Releasing them is the
-- operator's decision: `fulltime void-overdue` stores a void_open event
-- (fulltime_void_overdue), which the market's settlement applies like any other event.
--
-- LANGUAGE sql: its body is checked when it is created, so it may name tables only (the
-- function files are applied in name order, after every numbered migration).

CREATE OR REPLACE FUNCTION fulltime_reservation_deadline(
    p_market_id          bigint,
    p_grace_s            bigint,
    p_default_deadline_s bigint)
RETURNS timestamptz
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(m.settle_deadline_at + make_interval(secs => p_grace_s),
                    m.created_at + make_interval(secs => p_default_deadline_s))
    FROM markets m WHERE m.market_id = p_market_id;
$$;
COMMENT ON FUNCTION fulltime_reservation_deadline IS
    'The deadline of the market''s reservations: settle_deadline_at + grace, or created_at + '
    'the default when the feed gave none (reservations.grace_s, .default_deadline_s).';
