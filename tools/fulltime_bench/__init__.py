"""Fulltime's benchmarks and their helpers, one module per benchmark behind the thin entry
points in scripts/ (scripts/bench-placement runs `python3 -m fulltime_bench.placement`, ...).

Run with Debian's /usr/bin/python3 (psycopg and websockets come from its packages), with
tools/ on PYTHONPATH. README.md beside this file says what each module is."""
