"""Benchmarks the read side (docs/architecture.md, "Reads") against one durable throwaway
PostgreSQL 15 (fsync on) and a streaming hot standby of it, in two parts:

  1. What a bettor's history costs the primary. The same `bets` reads (limit 50, status all,
     sometimes the next page with `before`) in three configurations of the engine:
       (a) read.bets_source = write_tables, no standby: bets joined with bet_settlements on
           the primary (the path before the read model);
       (b) read.bets_source = read_model, no standby: bet_views on the primary;
       (c) read_model with database.read_url = the hot standby: the reads on the standby,
           the primary only projecting.
     Per run: reads/s, the client's p50/p99, the CPU of every process of the primary's cluster
     and of the standby's (/proc: the postmaster, its live children and what it reaped of
     those that ended), the engine's and the client's, the primary's pg_stat_database block
     and tuple counts and WAL bytes, and where /metrics' fulltime_reads_total says the reads
     ran. Printed: the primary's CPU ms per 1000 reads and the ratios (b)/(a) and (c)/(a).
  2. What a synchronous standby costs a placement. With the standby in the primary's
     synchronous_standby_names, `fulltime bench-placement` (closed loop, as
     scripts/bench-placement runs it) against the engine with:
       local        placement.synchronous_commit = local, no read_url: the baseline, a local
                    durable commit (what `on` is without a synchronous standby);
       local+url    local with read_url: adds the engine's post-commit LSN read (one round trip
                    per placement group) for read-your-writes;
       on+url       on with read_url: each commit also waits until the standby flushed it
                    (what `on`, the server's default, means once the standby is synchronous);
       apply+url    remote_apply with read_url: each commit waits until the standby applied
                    it (the engine then skips the LSN read).
     Printed: placements/s, p50/p99, CPU and commits per placement, ratios to the baseline.
     synchronous_standby_names is reset afterwards.

Setup, once: the cluster, a standby with a slot (kept for every run), the engine migrated;
markets 100 and 200 over POST /v1/feed; --accounts accounts opened and funded over the operator
API; --bets-per-account bets each over WebSocket (32 accounts at a time, 4 in flight each),
spread evenly over both markets; a result settling market 100 (so half of every history is
settled, half of that won); then a wait until the settlement is applied and the projector has
caught up, and VACUUM ANALYZE (what autovacuum would have done by then; both read paths get
their visibility map and statistics).

A measured run: the engine started afresh with the configuration's environment (and, for (c),
dated fresh by its own sampler), --connections WebSocket sessions opened, each a different
bettor who never places (so no read waits for its own writes), a warm-up of reads, CHECKPOINT,
3 s of the engine idle with the sessions open (what the engine costs the primary by itself: its
projector's rounds and its sampler; the "net" CPU per read leaves it out), then the sessions
read in a closed loop (one request in flight each) until --reads in total. The configurations
alternate within each repeat (a b c a b c ..., then the placement ones) and the medians over
--repeat are reported. pg_stat_database counts reach the view up to a second after a backend
idles (PostgreSQL 15), so its snapshots are taken 1.5 s after the warm-up and after the run:
they include about a second of the idle engine. The client's CPU is this process's (the reads'
WebSocket client; the engine's log reader runs in it too) and its ended children's
(bench-placement).
--quick: 20 accounts x 60 bets, 2000 reads over 8 sessions, one repeat, 4 s placement runs
(a smoke run, about a minute and a half).

It does not build: run scripts/build first (the binary must have the `project` command). The
machine's CPU not used by the clusters, the engine or the clients is printed as "rest" (other
processes, and interrupt work charged to none), so a run that shared the machine shows it. The
last line is every figure as one JSON object, prefixed "json: ". Exit status 1 when a run had
errors or reads went elsewhere than their configuration says (after printing everything).
BENCH_KEEP=1 keeps the work directory (the engine's log of every run, each run's figures)."""

import os
import shutil
import subprocess
import time

from . import cluster, common, db, engine, reads_client, reads_report

QUICK = dict(accounts=20, bets_per_account=60, reads=2000, connections=8, repeat=1,
             place_duration_s="4")
DEFAULTS = dict(accounts=200, bets_per_account=100, reads=20000, connections=16, repeat=3,
                place_duration_s="10")
OTHER_JOBS = ("ctest|ninja|cmake --build|fulltime_pg_tests|fulltime_tests|tests/e2e|unittest|"
              "bench-placement|bench-settlement")


def parse_args(argv=None):
    p = common.Parser("scripts/bench-reads", __doc__)
    n = common.positive_int
    p.add_argument("--accounts", type=n, help="default 200 (20 with --quick)")
    p.add_argument("--bets-per-account", type=n, help="default 100 (60 with --quick)")
    p.add_argument("--reads", type=n, help="reads per run: default 20000 (2000 with --quick)")
    p.add_argument("--connections", type=n, help="default 16 (8 with --quick)")
    p.add_argument("--repeat", type=n, help="default 3 (1 with --quick)")
    p.add_argument("--place-duration-s", help="default 10 (4 with --quick)")
    p.add_argument("--place-connections", type=n, default=32, help="part 2's connections")
    p.add_argument("--place-inflight", type=n, default=8, help="part 2's requests in flight each")
    p.add_argument("--quick", action="store_true", help="a smoke run's sizes, unless given")
    a = p.parse_args(argv)
    for k, v in (QUICK if a.quick else DEFAULTS).items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if not float(a.place_duration_s) > 2:
        common.die("--place-duration-s must be more than 2")
    if a.connections > a.accounts:
        common.die("--connections must be at most --accounts (one bettor each)")
    return a


def config_vars(cfg, standby_url):
    """The configuration's FULLTIME_* variables. Part 1: the standby streams in every
    configuration, only (c) reads from it. Part 2: the standby is synchronous."""
    url = {"FULLTIME_READ_DATABASE_URL": standby_url}
    return {
        "a": {"FULLTIME_READ_BETS_SOURCE": "write_tables"},
        "b": {"FULLTIME_READ_BETS_SOURCE": "read_model"},
        "c": {"FULLTIME_READ_BETS_SOURCE": "read_model", **url},
        "local": {"FULLTIME_PLACEMENT_SYNCHRONOUS_COMMIT": "local"},
        "local_url": {"FULLTIME_PLACEMENT_SYNCHRONOUS_COMMIT": "local", **url},
        "on_url": {"FULLTIME_PLACEMENT_SYNCHRONOUS_COMMIT": "on", **url},
        "apply_url": {"FULLTIME_PLACEMENT_SYNCHRONOUS_COMMIT": "remote_apply", **url},
    }[cfg]


class Bench:
    """The cluster with its standby, the copied binary, the engine running now and every
    run's figures."""

    def __init__(self, a):
        self.a, self.work = a, common.WorkDir("fulltime-bench-reads.")
        self.pg = self.server = None
        self.problems, self.results = [], {}
        # A copy of the binary: a rebuild meanwhile neither breaks the run nor mixes two builds
        # in one set of figures.
        self.binary = self.work("fulltime")
        shutil.copy2(common.BINARY, self.binary)

    def setup_cluster(self):
        self.pg = cluster.Cluster(durable=True)
        self.url, self.env = engine.bench_database(self.pg, self.work, "info")
        # The standby is made before the data (its base backup stays small) and streams
        # everything after.
        s = self.pg.start_standby(slot=True)
        self.standby = {"url": s["FULLTIME_TEST_STANDBY_URL"].replace("dbname=postgres",
                                                                     "dbname=bench"),
                        "name": s["FULLTIME_TEST_STANDBY_NAME"],
                        "data": os.path.join(s["FULLTIME_TEST_STANDBY_DIR"], "data"),
                        "primary_data": os.path.join(self.pg.dir, "data")}
        self.c = reads_client.Context(self.a, self.work, self.binary, self.env, self.url,
                                      self.standby)

    def start_engine(self, name, settings=None):
        """`fulltime serve` with the configuration's settings, its log in engine-NAME.log;
        returns once /readyz answers 200."""
        env = dict(self.env, **(settings or {}))
        self.server = engine.Server(env, self.work(f"engine-{name}.log"), binary=self.binary,
                                    name=f"the engine ({name})")
        self.server.wait_ready()
        self.c.port = self.server.port

    def stop_engine(self, name):
        """SIGTERM, and a problem when it does not end with status 0."""
        rc = self.server.stop()
        self.server = None
        if rc != 0:
            self.problems.append(f"the engine ({name}) ended with status {rc}")

    def wait_standby_caught_up(self):
        """Until the standby replayed everything the primary has written so far."""
        lsn = db.row(self.url, "wal_lsn")[0]
        for _ in range(600):
            if db.row(self.standby["url"], "standby_replayed", lsn=lsn)[0]:
                return
            time.sleep(0.1)
        common.die(f"the standby did not replay up to {lsn} in 60 s")

    def make_synchronous(self):
        name = self.standby["name"]
        common.log(f"making the standby synchronous: synchronous_standby_names = '{name}'")
        db.psql(self.pg.admin_url, "synchronous_standby", variables={"name": name},
                what="could not make the standby synchronous")
        for _ in range(100):
            if db.rows(self.url, "reads_sync_state", name=name) == [("sync",)]:
                break
            time.sleep(0.1)

    def close(self):
        if self.server:
            self.server.stop()
        if self.pg:
            self.pg.stop()  # the standby with it
        self.work.remove()


def setup(b):
    a = b.a
    common.log(f"setup: markets, {a.accounts} funded accounts, {a.bets_per_account} bets each "
               "over WebSocket, half settled")
    b.start_engine("setup")
    b.setup_figures = reads_client.setup(b.c)
    b.stop_engine("setup")
    db.psql(b.url, "vacuum", what="vacuuming failed")
    db.checkpoint(b.url)
    b.wait_standby_caught_up()


def measure(b):
    a = b.a
    for r in range(1, a.repeat + 1):
        for cfg in "abc":
            common.log(f"reads ({cfg}), repeat {r} of {a.repeat}: {a.reads} reads over "
                       f"{a.connections} sessions")
            name = f"reads-{cfg}-{r}"
            b.start_engine(name, config_vars(cfg, b.standby["url"]))
            b.results[name] = reads_client.reads(b.c, name, cfg, b.server.pid)
            b.stop_engine(name)
    b.make_synchronous()
    for r in range(1, a.repeat + 1):
        for cfg in ("local", "local_url", "on_url", "apply_url"):
            common.log(f"placement ({cfg}), repeat {r} of {a.repeat}: {a.place_duration_s}s")
            name = f"place-{cfg}-{r}"
            b.start_engine(name, config_vars(cfg, b.standby["url"]))
            b.results[name] = reads_client.place(b.c, name, cfg, b.server.pid)
            b.stop_engine(name)
    db.psql(b.pg.admin_url, "synchronous_standby_reset",
            what="could not reset synchronous_standby_names")


def params(a, elapsed_s):
    return {"accounts": a.accounts, "bets_per_account": a.bets_per_account, "reads": a.reads,
            "connections": a.connections, "repeat": a.repeat,
            "page_limit": reads_client.PAGE_LIMIT, "page_share": reads_client.PAGE_SHARE,
            "place_duration_s": float(a.place_duration_s),
            "place_connections": a.place_connections, "place_inflight": a.place_inflight,
            "quick": a.quick, "cores": common.cores(), "elapsed_s": elapsed_s}


def main(argv=None):
    common.line_buffered()
    a = parse_args(argv)
    if not os.access(common.BINARY, os.X_OK):
        common.die(f"{common.BINARY} is missing: run scripts/build first")
    help_text = subprocess.run([common.BINARY, "help"], capture_output=True, text=True)
    if not any(line.startswith(" ") and line.split()[:1] == ["project"]
               for line in (help_text.stdout + help_text.stderr).splitlines()):
        common.die(f"{common.BINARY} has no project command: rebuild it")
    others = subprocess.run(["pgrep", "-af", OTHER_JOBS], capture_output=True, text=True).stdout
    if others.strip():
        common.log(f"warning: other jobs are running, the figures will be noisy: {others.strip()}")
    started = time.time()
    b = Bench(a)
    try:
        b.setup_cluster()
        setup(b)
        measure(b)
        return reads_report.report(params(a, int(time.time() - started)), b.setup_figures,
                                   b.results, b.problems, b.work.path, b.standby["name"])
    finally:
        b.close()


if __name__ == "__main__":
    raise SystemExit(main())
