-- A database of its own for a benchmark, owned by the role that creates it (psql: -v name=).
CREATE DATABASE :"name";
