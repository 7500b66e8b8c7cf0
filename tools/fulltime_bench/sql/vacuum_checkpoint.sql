-- A database vacuumed, analyzed and checkpointed before a benchmark's window, as a clone of a
-- seeded database is (its owner vacuums; the shared catalogs are the superuser's, so no
-- warning per catalog).
SET client_min_messages = error;
VACUUM ANALYZE;
CHECKPOINT;
