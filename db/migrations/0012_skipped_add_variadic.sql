-- fulltime_skipped_add adds any number of counts of skipped bets (VARIADIC jsonb[]) instead of
-- two, so an event's lanes add up with it when the event finishes (fulltime_settle_step). CREATE
-- OR REPLACE cannot change arguments, so the two-argument signature 0011's release created goes
-- here; the function file creates the new one in the function phase that follows. IF EXISTS: on
-- a fresh database the numbered migrations all run before any function file.
DROP FUNCTION IF EXISTS fulltime_skipped_add(jsonb, jsonb);
