"""Benchmarks reconciliation against the years of ledger history behind it (docs/schema.md,
"Closing a period"): a run compares each balance row with the latest closed period's stored
balances plus the ledger after it, so ten times more closed history should cost it nothing.

Defaults: 10,000 accounts; K = 50 closed legs and M = 10 open legs per account.

Three databases, each migrated by `fulltime migrate` and seeded with set-based SQL:
  1x      K legs per account before the first period's end, that period closed, then M legs
          per account in the open period (the balance rows match);
  10x     the same with 10 K closed legs per account;
  10x-open  the same rows as 10x but no period closed: what a run reads without closing
          (every leg), as before time partitions.
Each is vacuumed and analysed, then `fulltime reconcile` runs R times on each in turn (1x,
10x, 10x-open, 1x, ...), each run timed from outside; the medians, the ratio 10x / 1x (target
<= 1.5) and 10x-open / 10x are printed, and every run must find no incident. The last line is
the figures as one JSON object, prefixed "json: ".

It starts its own PostgreSQL in a temporary directory and stops it at the end."""

import subprocess
import time

from . import cluster, common, db, engine, stats, verdicts

DATABASES = ("b1x", "b10x", "b10xopen")


def parse_args(argv=None):
    p = common.Parser("scripts/bench-history", __doc__)
    p.add_argument("--accounts", type=int, default=10000, help="accounts")
    p.add_argument("--legs", type=int, default=50, help="closed legs per account (K)")
    p.add_argument("--open-legs", type=int, default=10, help="open legs per account (M)")
    p.add_argument("--runs", type=int, default=5, help="reconciliations per database (R)")
    return p.parse_args(argv)


def fulltime(env, *args):
    """`fulltime ARGS` with its output discarded; its exit status."""
    return subprocess.run([common.BINARY, *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode


def seed(pg, env_of, a, name, closed, close):
    db.psql(pg.url, "create_database", variables={"name": name},
            what=f"could not create {name}")
    url = pg.url_of(name)
    rc = fulltime(env_of(url), "migrate")
    if rc:
        raise SystemExit(rc)
    common.log(f"seeding {name}: {a.accounts} accounts, {closed} closed and {a.open_legs} open "
               "legs each")
    db.psql(url, "history_seed", what=f"seeding {name} failed",
            variables=dict(accounts=a.accounts, closed=closed, open_legs=a.open_legs))
    if close and "closed" not in [r[0] for r in db.rows(url, "history_close")]:
        common.die(f"{name}: the first period did not close")
    db.psql(url, "vacuum", what=f"vacuuming {name} failed")


def reconcile_ms(env, name):
    """One timed reconciliation; fails the benchmark when it found anything."""
    start = time.time_ns()
    if fulltime(env, "reconcile"):
        common.die(f"{name}: the reconciliation found incidents or failed")
    return (time.time_ns() - start) // 1000000


def report(a, times):
    m1, m10, m10open = (stats.lower_median(times[d]) for d in DATABASES)
    legs_1x = a.accounts * (a.legs + a.open_legs)
    legs_10x = a.accounts * (a.legs * 10 + a.open_legs)

    def runs(d):
        return " ".join(str(t) for t in times[d])

    print(f"history   ledger legs  closed  reconcile ms (median of {a.runs}; runs)")
    print(f"1x        {legs_1x:11d}  yes     {m1:6d}  ({runs('b1x')})")
    print(f"10x       {legs_10x:11d}  yes     {m10:6d}  ({runs('b10x')})")
    print(f"10x-open  {legs_10x:11d}  no      {m10open:6d}  ({runs('b10xopen')})")
    v = verdicts.history_closed(m10, m1)
    ratio, ratio_open = f"{v.value:.2f}", f"{m10open / m10:.2f}"
    print(f"10x / 1x (closed): {ratio} (target <= {v.target})")
    print(f"10x not closed / 10x closed: {ratio_open}")
    print(f'json: {{"accounts":{a.accounts},"legs_1x":{legs_1x},"legs_10x":{legs_10x},'
          f'"runs":{a.runs},"ms_1x":{m1},"ms_10x":{m10},"ms_10x_open":{m10open},'
          f'"ratio_10x_1x":{ratio},"ratio_open_closed":{ratio_open}}}')


def main(argv=None):
    common.line_buffered()
    a = parse_args(argv)
    common.build()
    work = common.WorkDir("fulltime-history.")
    pg = None
    try:
        pg = cluster.Cluster(durable=False)
        pg.grant_benchmark_privileges()

        def env_of(url):
            return engine.environment(work("state"), {"FULLTIME_DATABASE_URL": url})

        for name, closed, close in (("b1x", a.legs, True), ("b10x", a.legs * 10, True),
                                    ("b10xopen", a.legs * 10, False)):
            seed(pg, env_of, a, name, closed, close)
        times = {d: [] for d in DATABASES}
        for _ in range(a.runs):
            for d in DATABASES:
                times[d].append(reconcile_ms(env_of(pg.url_of(d)), d))
    finally:
        if pg:
            pg.stop()
        work.remove()
    report(a, times)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
