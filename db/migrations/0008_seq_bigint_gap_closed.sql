-- A market's event numbers (`seq`) are 64-bit, and the operator can close a hole in a market's
-- feed (docs/protocol-feed.md, "POST /v1/markets/{id}/close-gap").
--
-- seq was a PostgreSQL integer: a producer that sent seq 2147483647 left the operator's void
-- (stored under the market's next seq) failing with "integer out of range" for good. It is a
-- bigint now, in result_events and in settlement_progress, and the functions that take or
-- return it are dropped here so that the function files create them with bigint (CREATE OR
-- REPLACE cannot change an argument's or a result's type).
--
-- A hole (seq 5 stored, 1 to 4 never sent) held every later event of the market back with no
-- way out. An event of the new kind gap_closed, stored by the operator only, takes the hole's
-- first seq and names its last (payload {"through": N}); settlement applies it by moving the
-- market's progress to N, and a producer event later sent with a seq inside the hole is refused
-- `conflict`.
--
-- Rewrites result_events (one row per market event, not per bet): run with every instance
-- stopped, as every migration.
ALTER TABLE result_events ALTER COLUMN seq TYPE bigint;
ALTER TABLE settlement_progress
    ALTER COLUMN applied_seq TYPE bigint,
    ALTER COLUMN current_seq TYPE bigint;

ALTER TABLE result_events DROP CONSTRAINT result_events_kind_check;
ALTER TABLE result_events ADD CONSTRAINT result_events_kind_check
    CHECK (kind IN ('result', 'rollback_result', 'cancel', 'rollback_cancel', 'void_open',
                    'gap_closed'));

INSERT INTO fulltime_codes (domain, code, description) VALUES
    ('result_event_kind', 'gap_closed',
     'the operator''s close of a hole in the market''s seq (seqs up to payload.through)'),
    ('close_gap_outcome', 'stored', 'the gap_closed event was stored'),
    ('close_gap_outcome', 'duplicate', 'the same close was stored before'),
    ('close_gap_outcome', 'conflict', 'the event_key belongs to another event'),
    ('close_gap_outcome', 'unknown_market', 'no such market'),
    ('close_gap_outcome', 'not_a_gap',
     'a seq of the range is stored, or no stored event follows the range'),
    ('void_overdue_outcome', 'feed_gap',
     'a hole in the market''s seq would hold the void back; close it first');

DROP FUNCTION IF EXISTS fulltime_record_result(bigint, integer, text, text, jsonb, text);
DROP FUNCTION IF EXISTS fulltime_settle_step(bigint, integer, integer);
DROP FUNCTION IF EXISTS fulltime_settle_finish(bigint, bigint, integer, text, bigint, jsonb);
DROP FUNCTION IF EXISTS fulltime_void_overdue(bigint, text, text, boolean, bigint, bigint);
