-- relfilenode -> name for scripts/wal-split: the database's own relations ("database-oid
-- filenode name"; the shared catalogs' database oid is 0), as pg_waldump names a block
-- reference "rel TABLESPACE/DATABASE/FILENODE".
SELECT CASE WHEN c.reltablespace = 0 OR t.spcname = 'pg_default'
            THEN (SELECT oid FROM pg_database WHERE datname = current_database())
            ELSE 0 END, pg_relation_filenode(c.oid), c.relname
FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
WHERE pg_relation_filenode(c.oid) IS NOT NULL
