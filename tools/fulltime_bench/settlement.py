"""Benchmarks settlement of one big market while bets are placed on other markets: the engine's
bounded batches against the anti-pattern they replace, one transaction that settles every bet
(the same SQL function, fulltime_settle_step, called with a batch larger than the market).

Defaults: 10,000 funded accounts, 100,000 open bets on market 1, the engine's default batch
size and lanes (config settlement.batch_bets_max, settlement.lanes; one lane while the governor
steers), 300 placements/s on markets 2 and 3, 10 s windows. The placements arrive as a Poisson
process on both sides, as pgbench's -R schedules the control's (--arrivals uniform: the
engine's load generator sends on an even schedule instead).

1. Seeds (set-based SQL) one event, market 1 with two selections and B open bets left exactly
   as placements leave them (bet, idempotency key, reservation transfer, outbox row, balances,
   exposure shards), markets 2 and 3 open for placements, N accounts funded by keyed deposits.
2. Baseline: a clone of the seeded database settles market 1 in one transaction; timed.
   Control: another clone settles market 1 with the engine's steps (same batch size, lanes
   and duty) from one psql session per lane while pgbench places on markets 2 and 3 at the
   same rate: the database's own placement p99 before and during settlement, with no engine
   in between. --control-rate C paces the control to C settled bets/s (after each step it
   rests until C bets/s is its average so far): the database alone at the rate a governed
   engine settled at (scripts/bench-settlement-governor passes the rate its first governed run
   reached). The control does the read model's work as the engine does it: when the engine's
   projector yields to a settlement (read.projector_yield_ms > 0, as shipped; the
   environment's FULLTIME_READ_PROJECTOR_YIELD_MS counts) the control's yields alike (it skips
   its pages for that long from the result, then catches up in full before it may skip again,
   until the event is applied); with no yield its projector (fulltime_project pages) runs
   beside the control's steps, as the engine's runs beside its own. --control-read-model and
   --control-without-read-model choose either outright. Either way, when the engine runs a
   projector (read.projector_interval_ms > 0) the control's runs in its "before" window as the
   engine's does in its own, a page every interval, so the p99s before are alike in work.
3. Engine: `fulltime serve` on the original database; open-loop placements on markets 2 and 3
   (`fulltime bench-placement`, one load generator per market from the "before" window to the
   end of the last "during" one, its first second left out) for a "before" window (once the
   read model's projector has caught up, the seed's outbox rows are purged and the database
   is vacuumed, analyzed and checkpointed as the control's clone is), then the result goes to
   POST /v1/feed while placements go on; their replies are cut by scheduled time into the
   interval from the ack until settlement has finished ("while settling", as the control's
   "during") and into windows as long as the "before" one, from the ack to the first that
   ends after settlement finished; the checkpoint, settled bets (the engine's counter) and
   backlog age are sampled every 0.5 s.
   With --budget-percent P the settlement governor steers by a budget of P % of the placement
   p99 the engine measures itself with nothing settling
   (settlement.placement_p99_budget_percent, its baseline set to the last T seconds of it,
   settlement.placement_baseline_ms): the "before" window's placements are the baseline's, on
   the engine that settles, with no restart.
   With --budget-factor F the settlement governor steers (settlement.placement_p99_budget_ms):
   after the "before" window the engine restarts with a budget of F x the p99 it just measured
   (the worse of the two load generators', rounded up to a millisecond; --budget-ms sets it
   outright), warms up again and measures the "before" window again, on the engine that
   settles, before the result is posted.
4. Prints both throughputs and their ratio, placement latency before and while settling for
   the engine and for the control (and the control's speed against the engine's: the p99
   comparison holds at the same speed), the series (with the governor's measured placement
   p99, batch size and pause), the largest backlog age, and checks the settlement rows and the
   money invariants (PASS/FAIL), and where the machine's cores went while each settled (the
   engine, its load generators and PostgreSQL; pgbench and the rest for the control):
   settlement is CPU-bound here, so the engine's own CPU is cores the database did not have.
   Then the performance targets, met or not: with the budget off, settlement >= 1.0 x the
   single transaction and a p99 ratio no worse than the control's; with a budget, a p99 ratio
   <= 1.5 and settlement >= 0.3 x the single transaction; either way WAL per settled bet
   (settlement only) at least 40 % under the 1,901 bytes first measured. The JSON line has
   them as targets_met.
   --svg PATH draws the run: the engine's placement p99 over its last second and the bets
   settled per second, against time, the settlement interval marked. The last line is the
   run's figures as one JSON object, prefixed "json: " (scripts/bench-settlement-governor runs
   the budget off and on and compares them). BENCH_KEEP=1 keeps the work directory: the
   engine's log, the load generators' samples, pgbench's per-transaction log (ctl-log/).

WAL bytes per settled bet (pg_current_wal_lsn() before and after settling, a CHECKPOINT before
each run so that each starts with the same full-page images to write): the figure to hold is
the settlement-only run (1b), a clone of the seed settled with the engine's steps from psql
with nothing else running. The baseline, the control and the engine are measured too;
placements run beside the control and the engine, so from theirs the placements' WAL is
subtracted: the WAL per placed bet of the "before" window times the bets placed meanwhile.
--wal-only stops after 1b; --wal-split adds scripts/wal-split's split of 1b's WAL by record
type and by relation.

It starts its own PostgreSQL with durable settings (fsync on) in a temporary directory and
stops it at the end. Everything runs on this machine, on loopback."""

import os
import re

from . import cluster, common, db, engine, settlement_db, settlement_engine, settlement_report

PLACEMENT_CONNS = settlement_db.PLACEMENT_CONNS
BUDGET_OPTIONS = ("--budget-ms", "--budget-factor", "--budget-percent")


def parse_args(argv=None):
    p = common.Parser("scripts/bench-settlement", __doc__)
    n = common.positive_int
    p.add_argument("--accounts", type=n, default=10000, help="funded accounts")
    p.add_argument("--bets", type=n, default=100000, help="open bets on market 1")
    p.add_argument("--batch-size", type=n, help="default: settlement.batch_bets_max")
    p.add_argument("--lanes", type=n, help="default: settlement.lanes (1 with a budget)")
    p.add_argument("--placement-rate", type=n, default=300, help="placements/s in total")
    p.add_argument("--arrivals", choices=("poisson", "uniform"), default="poisson",
                   help="the engine's load generator's schedule")
    p.add_argument("--before-s", type=n, default=10, help="the windows' length, s")
    p.add_argument("--duty-percent", help="settlement.duty_percent (engine and control)")
    p.add_argument("--budget-percent", type=n, help="of the engine's own p99 before (>= 100)")
    p.add_argument("--budget-factor", help="x the p99 measured before, after a restart")
    p.add_argument("--budget-ms", type=n, help="settlement.placement_p99_budget_ms outright")
    p.add_argument("--control-rate", default="0", help="pace the control to C bets/s")
    p.add_argument("--control-read-model", dest="control_read_model", action="store_const",
                   const="1", help="the control projects beside its steps (default: as the "
                                   "engine's read.projector_yield_ms says)")
    p.add_argument("--control-without-read-model", dest="control_read_model",
                   action="store_const", const="0", help="the control yields to its steps")
    p.add_argument("--svg", help="draw the run in this file")
    p.add_argument("--wal-only", action="store_true", help="stop after the WAL run (1b)")
    p.add_argument("--wal-split", action="store_true", help="split 1b's WAL (scripts/wal-split)")
    a = p.parse_args(argv)
    check_args(a)
    return a


def check_args(a):
    if a.budget_factor is not None:
        if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", a.budget_factor):
            common.die(f"--budget-factor takes a number, got '{a.budget_factor}'")
        if a.budget_ms is not None:
            common.die("--budget-factor and --budget-ms exclude each other")
    if a.budget_percent is not None:
        if a.budget_ms is not None or a.budget_factor is not None:
            common.die("--budget-percent excludes --budget-factor and --budget-ms")
        if a.budget_percent < 100:
            common.die(f"--budget-percent must be at least 100, got {a.budget_percent}")
    if a.svg:
        if not os.path.isdir(os.path.dirname(os.path.abspath(a.svg))):
            common.die(f"--svg: no directory {os.path.dirname(a.svg)}")
        a.svg = os.path.abspath(a.svg)
    if a.accounts < 2 * PLACEMENT_CONNS:
        common.die(f"--accounts must be at least {2 * PLACEMENT_CONNS}: the placement load uses "
                   f"accounts 1 to {2 * PLACEMENT_CONNS}")


def setting(env_name, shipped_path):
    """The engine's setting as it will run: the caller's FULLTIME_* variable, else the shipped
    value."""
    return int(os.environ.get(env_name) or common.shipped(shipped_path))


class Run:
    """One benchmark run: its options, cluster, databases and the figures each part leaves in
    `f` for the report."""

    def __init__(self, a):
        self.a = a
        self.work = common.WorkDir()
        self.pg = None
        self.f = {}
        self.governed = bool(a.budget_percent or a.budget_factor or a.budget_ms)
        self.batch = a.batch_size or common.shipped("settlement.batch_bets_max")
        self.lanes = 1 if self.governed else (a.lanes or common.shipped("settlement.lanes"))
        self.yield_ms = setting("FULLTIME_READ_PROJECTOR_YIELD_MS", "read.projector_yield_ms")
        self.projector_ms = setting("FULLTIME_READ_PROJECTOR_INTERVAL_MS",
                                    "read.projector_interval_ms")
        self.projector_rows = os.environ.get("FULLTIME_READ_PROJECTOR_PAGE_ROWS_MAX") or "5000"
        self.control_read_model = a.control_read_model or ("0" if self.yield_ms > 0 else "1")
        self.duty = a.duty_percent or os.environ.get("FULLTIME_SETTLEMENT_DUTY_PERCENT", "100")

    def start(self):
        self.pg = cluster.Cluster(durable=True)
        self.url, self.env = engine.bench_database(self.pg, self.work, "warn")

    def clone(self, name, vacuum="vacuum_checkpoint"):
        """A copy of the seeded database, vacuumed (and checkpointed); returns its URL."""
        db.psql(self.pg.url, "clone_database", variables={"name": name, "template": "bench"},
                what=f"could not clone the seeded database as {name}")
        url = self.pg.url_of(name)
        db.psql(url, vacuum, what=f"vacuuming {name} failed")
        return url

    def drop(self, name):
        db.psql(self.pg.url, "drop_database", variables={"name": name},
                what=f"could not drop {name}")

    def close(self):
        if self.pg:
            self.pg.stop()
        self.work.remove()


def main(argv=None):
    common.line_buffered()
    a = parse_args(argv)
    common.build()
    run = Run(a)
    eng = None
    try:
        run.start()
        settlement_db.seed(run)
        settlement_db.wal_run(run)
        if a.wal_only:
            settlement_report.print_wal_only(dict(run.f, batch=run.batch, bets=a.bets))
            return 0
        settlement_db.baseline(run)
        settlement_db.control(run)
        eng = settlement_engine.EngineRun(run)
        eng.measure()
        eng.checks()
        # While the work directory (the samples, pgbench's log) is still there.
        return settlement_report.report(run)
    finally:
        if eng:
            eng.close()
        run.close()


if __name__ == "__main__":
    raise SystemExit(main())
