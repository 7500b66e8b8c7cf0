"""The seeded model test at length: builds, starts a throwaway PostgreSQL, and runs
tests/e2e/model.py for many seeds against the real engine (SIGKILLs and restarts included).

  scripts/soak --seeds N [--first F] [--ops M]     seeds F .. F+N-1 (default F = 1, M = 150)
  scripts/soak --seed S [--ops M]                  one seed: how a failing seed is replayed

Each seed prints PASS with its figures (operations, bets, feed events by kind, SIGKILLs) or
FAIL with the operation that diverged, the last operations and the command that replays it.
Exits 1 if any seed failed."""

import os
import re
import subprocess

from . import cluster, common

E2E = os.path.join(common.ROOT, "tests", "e2e")


def non_negative(text):
    if not re.fullmatch(r"[0-9]+", text):
        common.die(f"takes a non-negative integer, got '{text}'")
    return text


def parse_args(argv=None):
    p = common.Parser("scripts/soak", __doc__)
    p.add_argument("--seeds", type=non_negative, metavar="N", help="how many seeds")
    p.add_argument("--first", type=non_negative, metavar="F", help="the first seed (1)")
    p.add_argument("--ops", type=non_negative, metavar="M", help="operations a seed (150)")
    p.add_argument("--seed", type=non_negative, metavar="S", help="one seed, to replay it")
    a = p.parse_args(argv)
    args = []
    for option in ("--seeds", "--first", "--ops", "--seed"):
        value = getattr(a, option[2:])
        if value is not None:
            args += [option, value]
    if not args:
        common.die("give --seeds N or --seed S (try --help)")
    return args


def main(argv=None):
    args = parse_args(argv)
    common.build()
    pg = cluster.Cluster(durable=False)
    try:
        env = dict(os.environ, FULLTIME_TEST_DATABASE_URL=pg.url,
                   # The cluster's superuser, which creates each run's database (as scripts/test
                   # gives it).
                   FULLTIME_TEST_ADMIN_URL=pg.admin_url, FULLTIME_TEST_PG_DIR=pg.dir,
                   FULLTIME_BINARY=common.BINARY)
        return subprocess.run(["/usr/bin/python3", "model.py", *args], cwd=E2E,
                              env=env).returncode
    finally:
        pg.stop()


if __name__ == "__main__":
    raise SystemExit(main())
