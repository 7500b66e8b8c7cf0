-- A settlement_batch row's entries as six parallel arrays instead of one object per entry
-- (issue 11; docs/benchmarks.md, "issue 11, eleventh pass"; docs/schema.md, "Outbox").
--
-- fulltime_settle_legs built one jsonb object per announced bet and aggregated them: about
-- 12 us of each settled bet's 70 or so went into that, where one array per field takes about 3.
-- The payload was
--     {"result_event_id": E, "settlements": [{"account_id": .., "bet_id": .., "version": ..,
--      "kind": .., "outcome": .., "payout": ..}, ...]}
-- and is now
--     {"result_event_id": E, "account_id": [..], "bet_id": [..], "version": [..],
--      "kind": [..], "outcome": [..], "payout": [..]}
-- entry i being the i-th element of every array, in bet_id order as before. The rows already in
-- the outbox are rewritten here to the new form, each entry in its place, so that the readers
-- (fulltime_project, fulltime_project_verify, the push loop) read one form. Run with every
-- instance stopped, as every migration: no writer of the old form runs meanwhile, and the
-- function files that read and write the new form are applied after it. The rows keep their
-- xact_id, outbox_id and created_at, so every cursor stays where it was. Keys other than
-- "settlements" (result_event_id; the first release of the topic had none) are kept.
UPDATE outbox o
SET payload = (o.payload - 'settlements') || (
    SELECT jsonb_build_object(
               'account_id', coalesce(jsonb_agg(t.e->'account_id' ORDER BY t.n), '[]'),
               'bet_id', coalesce(jsonb_agg(t.e->'bet_id' ORDER BY t.n), '[]'),
               'version', coalesce(jsonb_agg(t.e->'version' ORDER BY t.n), '[]'),
               'kind', coalesce(jsonb_agg(t.e->'kind' ORDER BY t.n), '[]'),
               'outcome', coalesce(jsonb_agg(t.e->'outcome' ORDER BY t.n), '[]'),
               'payout', coalesce(jsonb_agg(t.e->'payout' ORDER BY t.n), '[]'))
    FROM jsonb_array_elements(o.payload->'settlements') WITH ORDINALITY AS t(e, n))
WHERE o.topic = 'settlement_batch'
  AND jsonb_typeof(o.payload->'settlements') = 'array';

UPDATE fulltime_codes
SET description = 'the settlements, cancels and reversals one settlement step wrote, as parallel '
                  'arrays with one element per entry'
WHERE domain = 'outbox_topic' AND code = 'settlement_batch';
