-- Row updates of the projector's horizon row and cursor row so far.
SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables
WHERE relname IN ('projections', 'outbox_cursors')
