-- WAL bytes between two marks (wal_mark.sql) per settled bet; with a "before" pair of marks
-- (placements only), less the placements' WAL: per placed bet then, times the bets placed
-- between the two marks. Returns bytes per settled bet, placement bytes per placed bet, the
-- bets placed meanwhile.
SELECT round((d - p * n) / %(bets)s), round(p), n
FROM (SELECT pg_wal_lsn_diff(%(lsn1)s::pg_lsn, %(lsn0)s::pg_lsn),
             coalesce(pg_wal_lsn_diff(%(before_lsn1)s::pg_lsn, %(before_lsn0)s::pg_lsn)
                      / greatest(%(before_n1)s::bigint - %(before_n0)s::bigint, 1), 0),
             %(n1)s::bigint - %(n0)s::bigint) x(d, p, n)
