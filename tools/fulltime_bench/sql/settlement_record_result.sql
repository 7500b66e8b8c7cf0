-- Market 1's result stored with the SQL function the feed calls (the benchmark's clones, and
-- the engine's fallback when POST /v1/feed refuses a result): "stored" when it was.
SELECT outcome FROM fulltime_record_result(1, 1, 'bench-r1', 'result', %(result)s::jsonb, 'bench')
