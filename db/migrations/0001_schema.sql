-- Placeholder; the schema is written in its own change.
SELECT 1;
