-- The placement benchmark: the stored results of a pgbench run's new keys (those with the
-- prefix given), {"placed": N, "rejected CODE": N, ...}.
SELECT coalesce(json_object_agg(o, n), '{}') FROM (
    SELECT response->>'outcome' || coalesce(' ' || (response->>'code'), '') AS o,
           count(*) AS n
    FROM idempotency_keys WHERE starts_with(idempotency_key, %(prefix)s) GROUP BY 1) t
