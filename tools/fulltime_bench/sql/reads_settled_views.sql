-- How many bets the read model shows settled (a version once settled).
SELECT count(version) FROM bet_views
