-- A copy of a seeded database (psql: -v name=, -v template=).
CREATE DATABASE :"name" TEMPLATE :"template";
