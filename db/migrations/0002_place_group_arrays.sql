-- fulltime_place_group takes the group as parallel arrays instead of one jsonb array, and decides
-- the whole group with a fixed number of statements (db/functions/fulltime_place_group.sql).
-- CREATE OR REPLACE cannot change arguments, so the old signature goes here; the function file
-- creates the new one in the function phase that follows (docs/schema.md, "Migrations and
-- functions"). IF EXISTS: on a fresh database the numbered migrations all run before any
-- function file, so the old function was never created. fulltime_place keeps its signature and
-- becomes a wrapper of the new function.
DROP FUNCTION IF EXISTS fulltime_place_group(jsonb, integer, integer);
