-- A database of its own for a benchmark, made by the superuser for the role that runs the
-- engine (psql: -v name=, -v owner=), as docs/operations.md sets one up.
CREATE DATABASE :"name" OWNER :"owner";
