-- A database vacuumed and analyzed by its owner (the shared catalogs are the superuser's, so
-- no warning per catalog).
SET client_min_messages = error;
VACUUM ANALYZE;
