-- psql: -v name=.
DROP DATABASE :"name";
