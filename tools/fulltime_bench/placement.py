"""Benchmarks the placement path end to end beside its baselines, in one run against one freshly
started durable PostgreSQL (fsync on), and prints the placement hot path's targets:

  1. the pgbench ceiling: one transaction per bet calling fulltime_place (the function the
     engine calls), closed loop with --connections clients and with connections x inflight
     clients (as many requests in flight as the engine's closed loop); the best tps counts;
  2. the engine's closed loop (connections x inflight in flight) and its ratio to that ceiling
     (target >= 3.0);
  3. open loop at --open-percent of the ceiling: the engine and pgbench (fulltime_place),
     p50/p99/p99.9 from each bet's scheduled time (target: engine p99 <= pgbench p99);
  4. open loop at --fixed-rate: the engine, pgbench (fulltime_place), and pgbench running a
     hand-written placement as one SQL statement (sql/place_one_statement.sql; target: engine
     p99 / hand-written p99 <= 1.5), and that statement's own closed-loop ceiling, to show
     whether the fixed rate is below it;
  5. CPU during every run: the engine's per placement (target <= 40 us), PostgreSQL's, the
     machine's and the load generator's (or pgbench's) own.

--engine-pool: the engine's placement pool (database.pools.placement.size_max); by default the
engine's own default, so that the figures are those of the engine as shipped.
pgbench's open loops run with --connections clients: with connections x inflight sessions on
two cores, PostgreSQL queues them on the exposure shard and balance row locks, and their
open-loop p99 is seconds instead of tens of milliseconds, which would flatter the engine.
--hot-market: 20 markets (the first with 3 selections, the rest with 2), 30 % of bets on
market 1 and the rest spread evenly; 3 % of requests repeat an earlier request (unless
--repeat-ratio); 2 % of stakes above the market's stake_max (stake_limit) and 1 % above every
account's balance (insufficient_funds: drawn per bet, not per account, because each engine
connection acts on one account, so one poor account would be 1/connections of the engine's
bets and never the same share as pgbench's). Without it: one market, one selection, one
stake, 10 % repeats. The engine's load (fulltime bench-placement) and both pgbench scripts
draw the same mix, and the counts by outcome and the share of bets on market 1 are printed
per run. --quick: 5 s per run (a smoke run). The engine's runs and every open loop leave
their first second out of latency and rate (pgbench's closed-loop tps is its own); open loops
schedule Poisson arrivals (as pgbench --rate does). A CHECKPOINT precedes every run, so each
starts with the same full-page-write cost. "machine" CPU is everything on the machine, other
jobs included.

The last line is every figure as one JSON object, prefixed "json: ", for a caller that
collects repeated runs. Exit status 1 when a run had errors (after printing everything); a
tool that fails stops the run at once. BENCH_KEEP=1 keeps the work directory (pgbench
reports and logs, the engine's log). Everything runs on this machine, on loopback."""

import json
import re
import sys
import time

from . import cluster, common, db, engine, metrics, pgbench, stats, verdicts

WARMUP_S = 1
MANY_MAX = 280  # pgbench opens connections x inflight sessions; max_connections is 300


def parse_args(argv=None):
    p = common.Parser("scripts/bench-placement", __doc__)
    p.add_argument("--connections", type=int, default=32, help="WebSocket connections, pgbench clients")
    p.add_argument("--inflight", type=int, default=8, help="requests in flight per connection (closed loop)")
    p.add_argument("--accounts", type=int, default=1000, help="funded accounts")
    p.add_argument("--duration-s", help="seconds per run (default 15, 5 with --quick)")
    p.add_argument("--open-percent", default="70", help="the open loop's rate, %% of the ceiling")
    p.add_argument("--fixed-rate", default="1500", help="the fixed open loop's rate, bets/s")
    p.add_argument("--engine-pool", type=int,
                   help="database.pools.placement.size_max (default: config/fulltime.json's)")
    p.add_argument("--repeat-ratio", help="share of repeated requests (default 0.1; 0.03 with "
                                          "--hot-market)")
    p.add_argument("--hot-market", action="store_true", help="20 markets, 30 %% of bets on market 1, refusals")
    p.add_argument("--quick", action="store_true", help="5 s per run: a smoke run")
    a = p.parse_args(argv)
    a.duration_s = a.duration_s or ("5" if a.quick else "15")
    if a.engine_pool is None:
        a.engine_pool = common.shipped("database.pools.placement.size_max")
    a.repeat_ratio = a.repeat_ratio or ("0.03" if a.hot_market else "0.1")
    if not float(a.duration_s) > WARMUP_S + 1:
        common.die(f"--duration-s must be more than {WARMUP_S + 1} s")
    a.many = a.connections * a.inflight  # requests in flight in the engine's closed loop
    if a.many > MANY_MAX:
        common.die(f"connections x inflight must be at most {MANY_MAX} (pgbench opens that many "
                   "sessions)")
    return a


def mix(a):
    """The bets' mix, in minor units (two decimals); selection ids are market * 10 + 1, 2, ...
    {"seed": the seed's psql variables, "draw": the pgbench draw's script and -D variables,
    "selections", "stakes": the load generator's weights, "text": the report's words}."""
    ratio, ppm = a.repeat_ratio, int(float(a.repeat_ratio) * 1000000)
    if a.hot_market:
        markets, hot, per = 20, 3, 2
        seed = dict(markets=markets, hot_selections=hot, selections=per, funds=100000000,
                    stake_max=500000000)  # 1,000,000.00 per account; 5,000,000.00
        # 30 % on market 1 (10 % per selection), 70 % over the 38 others.
        weights = ["11:10", "12:10", "13:10"] + [
            f"{m * 10 + k}:{70 / ((markets - 1) * per):.6f}"
            for m in range(2, markets + 1) for k in range(1, per + 1)]
        draw = dict(script="placement_draw_hot.pgbench", markets=markets, hot_selections=hot,
                    selections=per, stake=200, over_stake=600000000, big_stake=200000000)
        return dict(seed=seed, draw=draw, ppm=ppm, selections=",".join(weights),
                    stakes="2.00:9700,6000000.00:200,2000000.00:100",
                    text=f"hot market: 20 markets, 30 % of bets on market 1, {ratio} repeated "
                         "requests, 2 % stakes over stake_max, 1 % over the balance")
    seed = dict(markets=1, hot_selections=1, selections=1, funds=100000000000,
                stake_max=100000000)
    return dict(seed=seed, draw=dict(script="placement_draw_one.pgbench", stake=100), ppm=ppm,
                selections="11:1", stakes="1.00:1",
                text=f"one market, one selection, stake 1.00, {ratio} repeated requests")


def write_scripts(work, m):
    """The pgbench scripts, run with -M prepared (parsed and planned once per session, as a
    client that cares would; in simple mode the one-statement placement spends more time being
    planned than run): the draw (the engine's load generator's mix; a repeat is the client's
    previous request again, the generator's an earlier one of its connection), then
    fulltime_place or the one statement. Returns their paths."""
    head = db.text(m["draw"]["script"]) + db.text("placement_repeat.pgbench")
    paths = {}
    for name, sql in (("place", "placement_fulltime_place"), ("one-statement",
                                                              "place_one_statement")):
        paths[name] = work(f"{name}.pgbench")
        with open(paths[name], "w") as f:
            f.write(head + db.text(sql))
    return paths


def tps_text(report):
    """pgbench's tps as it printed it."""
    return next(line.split()[2] for line in report.splitlines() if line.startswith("tps = "))


class Bench:
    """One run's state: the cluster, the database, the engine and what every run left in the
    work directory."""

    def __init__(self, a):
        self.a, self.mix = a, mix(a)
        self.work = common.WorkDir()
        self.pg = self.server = None
        self.run_number = 0
        self.problems = []
        self.results = {}

    def sample(self, at=None):
        """(time, engine ticks, PostgreSQL's, the machine's, this process's reaped children's:
        pgbench or the load generator)."""
        return (at or time.time(),
                cluster.process_ticks(self.server.pid) if self.server else 0,
                self.pg.ticks(), cluster.machine_ticks(), cluster.own_children_ticks())

    def setup(self):
        self.pg = cluster.Cluster(durable=True)
        self.url, self.env = engine.bench_database(self.pg, self.work, "warn")
        common.log(f"seeding {self.a.accounts} funded accounts and "
                   f"{self.mix['seed']['markets']} market(s)")
        db.psql(self.url, "placement_seed", variables=dict(self.mix["seed"],
                                                           accounts=self.a.accounts),
                what="seeding failed")
        self.scripts = write_scripts(self.work, self.mix)

    def wait_backends_gone(self, before):
        """Waits (at most 5 s) until the postmaster has no more children than before a
        pgbench run, so that its backends' CPU has been reaped into the postmaster's count."""
        for _ in range(50):
            if len(self.pg.children()) <= before:
                return
            time.sleep(0.1)
        common.log(f"warning: PostgreSQL still has {len(self.pg.children())} children "
                   f"(before the run: {before})")

    def run_pgbench(self, name, clients, script, rate=None):
        """Closed loop, or open loop at RATE/s with a log of every transaction."""
        self.run_number += 1
        d = self.mix["draw"]
        variables = dict(accounts=self.a.accounts, run=self.run_number, prev_acct=0,
                         prev_key=0, prev_sel=0, prev_stake=0, repeat_ppm=self.mix["ppm"],
                         **{k: v for k, v in d.items() if k != "script"})
        args = pgbench.command(self.url, self.scripts[script], clients, self.a.duration_s,
                               rate=rate, log=rate is not None, prepared=True,
                               variables=variables)
        db.checkpoint(self.url)
        children = len(self.pg.children())
        first = self.sample()
        rc = pgbench.start(args, self.work(f"{name}.log"), self.work(f"{name}.out")).wait()
        end = time.time()
        self.wait_backends_gone(children)
        with open(self.work(f"{name}.out")) as f:
            out = f.read()
        if rc or "\ntps = " not in "\n" + out:
            print(out, end="", file=sys.stderr)
            common.die(f"pgbench ({name}) failed with status {rc}")
        self.results[name] = dict(cpu=(first, self.sample(end)), out=out,
                                  outcomes=db.row(self.url, "placement_outcomes",
                                                  prefix=f"r{self.run_number}-")[0],
                                  bets=self.bets_of(f"r{self.run_number}-"))

    def bets_of(self, prefix):
        return db.row(self.url, "placement_bets", prefix=prefix)[0]

    def start_engine(self):
        common.log(f"starting the engine (placement pool {self.a.engine_pool})")
        self.env.update({"FULLTIME_LOG_LEVEL": "info",
                         "FULLTIME_DATABASE_POOLS_PLACEMENT_SIZE_MAX": str(self.a.engine_pool)})
        self.server = engine.Server(self.env, self.work("engine.log"))

    def run_engine(self, name, *extra):
        """The load generator against the running engine."""
        a, m = self.a, self.mix
        db.checkpoint(self.url)
        before = self.server.metrics(timeout_s=10)
        first = self.sample()
        rc = engine.load_generator(self.server.port, [
            "--connections", str(a.connections), "--accounts", str(a.accounts),
            "--selections", m["selections"], "--stakes", m["stakes"], "--odds", "2.00",
            "--repeat-ratio", a.repeat_ratio, "--duration-s", a.duration_s,
            "--warmup-s", str(WARMUP_S), "--key-prefix", name, *extra],
            self.work(f"{name}.json"), self.work(f"{name}.err"), self.env).wait()
        last = self.sample()
        after = self.server.metrics(timeout_s=10)
        for suffix, text in (("metrics0", before), ("metrics1", after)):
            with open(self.work(f"{name}.{suffix}"), "w") as f:
                f.write(text)
        if not self.server.alive():
            sys.stderr.write("".join(self.server.lines()[-50:]))
            common.die(f"the engine died during {name}")
        with open(self.work(f"{name}.json")) as f:
            report = f.read()
        if '"replies"' not in report:
            with open(self.work(f"{name}.err")) as f:
                sys.stderr.write(f.read())
            common.die(f"the load generator failed ({name})")
        self.results[name] = dict(cpu=(first, last), report=json.loads(report),
                                  stages=metrics.stages(before, after),
                                  bets=self.bets_of(f"{name}-"))
        if rc:
            self.problems.append(f"{name}: the load generator counted errors (status {rc})")

    def runs(self):
        a = self.a
        common.log(f"pgbench closed loop: {a.connections} clients, then {a.many} clients, "
                   f"{a.duration_s}s each")
        self.run_pgbench("pgb_closed_c", a.connections, "place")
        self.run_pgbench("pgb_closed_many", a.many, "place")
        c, many = (tps_text(self.results[n]["out"]) for n in ("pgb_closed_c", "pgb_closed_many"))
        ceiling = many if float(many) > float(c) else c
        self.open_rate = f"{float(ceiling) * float(a.open_percent) / 100:.0f}"
        common.log(f"pgbench open loop ({a.connections} clients) at {self.open_rate}/s "
                   f"({a.open_percent} % of {ceiling}), then at {a.fixed_rate}/s "
                   "(fulltime_place, then one statement)")
        self.run_pgbench("pgb_open_pct", a.connections, "place", self.open_rate)
        self.run_pgbench("pgb_open_fixed", a.connections, "place", a.fixed_rate)
        self.run_pgbench("one_open_fixed", a.connections, "one-statement", a.fixed_rate)
        # The one statement's own ceiling, for scale: is --fixed-rate below it?
        common.log(f"pgbench closed loop, one statement: {a.connections} clients")
        self.run_pgbench("one_closed", a.connections, "one-statement")
        self.start_engine()
        common.log(f"engine closed loop: {a.connections} connections x {a.inflight} in flight")
        self.run_engine("eng_closed", "--inflight", str(a.inflight))
        common.log(f"engine open loop at {self.open_rate}/s, then at {a.fixed_rate}/s")
        self.run_engine("eng_open_pct", "--rate", self.open_rate, "--arrivals", "poisson")
        self.run_engine("eng_open_fixed", "--rate", a.fixed_rate, "--arrivals", "poisson")

    def close(self):
        if self.server:
            self.server.stop()
        if self.pg:
            self.pg.stop()
        self.work.remove()


# --- the figures -----------------------------------------------------------------------------

def cpu(samples, replies, hz):
    """Cores and microseconds per operation of the engine, PostgreSQL, the machine and the
    client (pgbench or the load generator) between two samples."""
    a, b = samples
    s = b[0] - a[0]
    d = [(y - x) / hz for x, y in zip(a[1:], b[1:])]  # engine, postgres, machine, client (s)

    def per(x):
        return x * 1e6 / replies if replies else 0.0

    return {"wall_s": round(s, 3), "engine_cores": d[0] / s, "postgres_cores": d[1] / s,
            "machine_cores": d[2] / s, "engine_us_per_op": per(d[0]),
            "postgres_us_per_op": per(d[1]), "client_cores": d[3] / s,
            "client_us_per_op": per(d[3])}


def open_loop(transactions, duration_s, warmup_s):
    """An open loop's figures from pgbench's log: latency from each transaction's scheduled
    time (its completion less its latency, which counts from the schedule), the schedule lag,
    the rate; the first `warmup_s` seconds of schedule left out."""
    rows = []
    for t in transactions:
        if t.lag_us is not None:
            done = t.end_s * 1_000_000 + t.end_us
            rows.append((done - t.latency_us, t.latency_us / 1000.0, t.lag_us / 1000.0))
    t0 = min(t for t, _, _ in rows)
    lat = sorted(x for t, x, _ in rows if t >= t0 + warmup_s * 1e6)
    lag = sorted(g for t, _, g in rows if t >= t0 + warmup_s * 1e6)
    pick = stats.percentile_of_range
    return dict(rate=len(lat) / (duration_s - warmup_s),
                latency_ms={"p50": pick(lat, .5), "p99": pick(lat, .99), "p999": pick(lat, .999),
                            "max": lat[-1] if lat else 0.0},
                lag_ms={"p50": pick(lag, .5), "p99": pick(lag, .99),
                        "max": lag[-1] if lag else 0.0},
                lag_over_latency=sum(1 for _, x, g in rows if g > x + 0.001))


def pgbench_figures(b, name, rate=None):
    got = b.results[name]
    r = pgbench.report(got["out"])
    r = {"tps": r["tps"], "latency_avg_ms": r["latency_avg_ms"], "outcomes": got["outcomes"],
         "bets": got["bets"], **{k: r[k] for k in ("clients", "transactions", "failed") if k in r}}
    r["outcomes"]["replayed (no new key)"] = r["transactions"] - sum(r["outcomes"].values())
    if rate is not None:
        r.update(target_rate=rate, **open_loop(pgbench.transactions(b.work(f"{name}.log")),
                                               float(b.a.duration_s), WARMUP_S))
    r["cpu"] = cpu(got["cpu"], r["transactions"], common.CLK_TCK)
    return r


def engine_figures(b, name):
    got = b.results[name]
    r = dict(got["report"])
    r["bets"] = got["bets"]
    r["cpu"] = cpu(got["cpu"], r["replies_total"], common.CLK_TCK)
    return r


def figures(b):
    a = b.a
    P = dict(connections=a.connections, inflight=a.inflight, accounts=a.accounts,
             duration_s=float(a.duration_s), warmup_s=float(WARMUP_S),
             open_percent=float(a.open_percent), fixed_rate=float(a.fixed_rate),
             engine_pool=a.engine_pool, repeat_ratio=float(a.repeat_ratio),
             hot_market=a.hot_market, quick=a.quick, cores=common.cores())
    R = {"params": P}
    R["pgbench_closed_c"] = pgbench_figures(b, "pgb_closed_c")
    R["pgbench_closed_many"] = pgbench_figures(b, "pgb_closed_many")
    R["ceiling_tps"] = max(R["pgbench_closed_c"]["tps"], R["pgbench_closed_many"]["tps"])
    R["pgbench_open_pct"] = pgbench_figures(b, "pgb_open_pct", float(b.open_rate))
    R["pgbench_open_fixed"] = pgbench_figures(b, "pgb_open_fixed", P["fixed_rate"])
    R["one_statement_open_fixed"] = pgbench_figures(b, "one_open_fixed", P["fixed_rate"])
    R["one_statement_closed"] = pgbench_figures(b, "one_closed")
    for k, n in (("engine_closed", "eng_closed"), ("engine_open_pct", "eng_open_pct"),
                 ("engine_open_fixed", "eng_open_fixed")):
        R[k] = engine_figures(b, n)
        R[k]["stages"] = b.results[n]["stages"]
    return R


def judge(R, problems, warnings):
    """The ratios the targets are judged on, and the problems: failed transactions, and
    pgbench logs whose latency does not include the lag (it must, from the schedule)."""
    for k, v in R.items():
        if k.startswith("pgbench") or k.startswith("one_"):
            if v.get("failed"):
                problems.append(f"{k}: {v['failed']} failed transactions")
            if v.get("lag_over_latency"):
                problems.append(f"{k}: pgbench's logged latency does not include its lag "
                                f"({v['lag_over_latency']} rows)")
    ec, eo, ef = R["engine_closed"], R["engine_open_pct"], R["engine_open_fixed"]
    po, hf = R["pgbench_open_pct"], R["one_statement_open_fixed"]
    R["ratio_engine_closed_to_ceiling"] = ec["replies_per_s"] / R["ceiling_tps"]
    R["ratio_engine_p99_to_pgbench_p99_open_pct"] = (
        eo["latency_ms"]["p99"] / po["latency_ms"]["p99"] if po["latency_ms"]["p99"] else None)
    fixed = verdicts.placement_one_statement_p99(ef["latency_ms"]["p99"],
                                                 hf["latency_ms"]["p99"])
    R["ratio_engine_p99_to_one_statement_p99_fixed"] = fixed.value if fixed else None
    R["engine_log_warnings"] = warnings
    R["problems"] = problems


# --- the report ------------------------------------------------------------------------------

def lat(x):
    return f"p50 {x['p50']:7.2f}  p99 {x['p99']:7.2f}  p99.9 {x['p999']:7.2f} ms"


def cpu_line(c, who, client):
    return (f"CPU in cores of {common.cores()}: engine {c['engine_cores']:.2f}, PostgreSQL "
            f"{c['postgres_cores']:.2f}, machine {c['machine_cores']:.2f}, {client} "
            f"{c['client_cores']:.2f}; per {who}: PostgreSQL {c['postgres_us_per_op']:.0f} us, "
            f"{client} {c['client_us_per_op']:.0f} us")


def eng_cpu(r):
    c = r["cpu"]
    v = verdicts.placement_cpu(c["engine_us_per_op"])
    return (f"      engine CPU {c['engine_us_per_op']:6.1f} us/placement (target <= "
            f"{verdicts.ENGINE_US_PER_PLACEMENT_MAX} us: {verdicts.word(v, 'MET', 'NOT MET')}); "
            + cpu_line(c, "placement", "load generator")
            + f"; generator's own count {r['cpu_us_per_request']:.0f} us/request")


def stage_line(st):
    return ("      stages p50/p99 ms (bucket bounds): " + metrics.stages_line(st) if st
            else "      stages: n/a")


def print_engine(label, r):
    print(f"     {label}{r['replies_per_s']:8.0f}/s  {lat(r['latency_ms'])}  "
          f"(send lag p99 {r['send_lag_ms']['p99']:.2f} ms)")
    print(eng_cpu(r))
    print(stage_line(r["stages"]))


def print_ceiling(R, mix_text):
    P = R["params"]
    print(f"placement benchmark: {P['connections']} connections x {P['inflight']} in flight, "
          f"engine placement pool {P['engine_pool']}, {P['accounts']} accounts, "
          f"{P['duration_s']:g} s per run (first {P['warmup_s']:g} s left out of latency and "
          f"rates), durable PostgreSQL 15, {common.cores()} cores")
    print(f"  mix: {mix_text}")
    print("  1. pgbench ceiling, closed loop, one transaction per bet: SELECT outcome FROM "
          "fulltime_place(...)")
    for k in ("pgbench_closed_c", "pgbench_closed_many"):
        r = R[k]
        print(f"       {r['clients']:4} clients: {r['tps']:8.0f} tx/s  latency avg "
              f"{r['latency_avg_ms']:7.2f} ms  " + cpu_line(r["cpu"], "tx", "pgbench"))
    print(f"     ceiling (the best): {R['ceiling_tps']:8.0f} tx/s")
    ec = R["engine_closed"]
    print(f"  2. engine, closed loop ({P['connections']} x {P['inflight']} in flight): "
          f"{ec['replies_per_s']:8.0f} placements/s  {lat(ec['latency_ms'])}")
    print(eng_cpu(ec))
    print(stage_line(ec["stages"]))
    v = verdicts.placement_over_ceiling(ec["replies_per_s"], R["ceiling_tps"])
    print(f"     ratio engine / pgbench ceiling: {v.value:.2f}  (target >= {v.target}: "
          f"{verdicts.word(v, 'MET', 'NOT MET')})")


def print_open_loops(R, open_rate):
    P = R["params"]
    eo, ef = R["engine_open_pct"], R["engine_open_fixed"]
    po, pf, hf = R["pgbench_open_pct"], R["pgbench_open_fixed"], R["one_statement_open_fixed"]
    print(f"  3. open loop at {open_rate:.0f}/s ({P['open_percent']:g} % of the ceiling), "
          "latency from each bet's scheduled time (Poisson arrivals)")
    print_engine("engine:                 ", eo)
    print(f"     pgbench fulltime_place: {po['rate']:8.0f}/s  {lat(po['latency_ms'])}  "
          f"({po['clients']} clients; schedule lag p99 {po['lag_ms']['p99']:.2f} ms)")
    print("      " + cpu_line(po["cpu"], "tx", "pgbench"))
    v = verdicts.placement_open_loop_p99(eo["latency_ms"]["p99"], po["latency_ms"]["p99"])
    print(f"     target engine p99 <= pgbench p99: {v.value:.2f} vs {v.target:.2f} ms: "
          f"{verdicts.word(v, 'MET', 'NOT MET')}")
    print(f"  4. open loop at {P['fixed_rate']:.0f}/s (--fixed-rate)")
    print_engine("engine:                 ", ef)
    for label, r in (("pgbench fulltime_place: ", pf), ("pgbench one statement:  ", hf)):
        print(f"     {label}{r['rate']:8.0f}/s  {lat(r['latency_ms'])}  ({r['clients']} clients)")
        print("      " + cpu_line(r["cpu"], "tx", "pgbench"))
    hc = R["one_statement_closed"]
    print(f"       (its closed-loop ceiling with {hc['clients']} clients: {hc['tps']:.0f} tx/s; "
          + cpu_line(hc["cpu"], "tx", "pgbench") + ")")
    v = verdicts.placement_one_statement_p99(ef["latency_ms"]["p99"], hf["latency_ms"]["p99"])
    print(f"     ratio engine p99 / one-statement p99: {v.value:.2f}  (target <= {v.target}: "
          f"{verdicts.word(v, 'MET', 'NOT MET')})" if v else
          "     ratio engine p99 / one-statement p99: n/a")


RUNS = ("pgbench_closed_c", "pgbench_closed_many", "pgbench_open_pct", "pgbench_open_fixed",
        "one_statement_open_fixed", "one_statement_closed", "engine_closed", "engine_open_pct",
        "engine_open_fixed")


def print_outcomes(R):
    ec, eo, ef = R["engine_closed"], R["engine_open_pct"], R["engine_open_fixed"]
    print("  outcomes (pgbench: new keys by stored result, and repeats that stored nothing):")
    for k in RUNS:
        share = (f"  ({R[k]['bets']['market_1_share'] * 100:.1f} % of its bets on market 1)"
                 if R["params"]["hot_market"] and R[k]["bets"]["bets"] else "")
        print(f"     {k:25} {json.dumps(R[k]['outcomes'], sort_keys=True)}{share}")
    print(f"  errors: engine closed {ec['errors']}, open {eo['errors']} and {ef['errors']}; "
          f"warnings in the engine's log: {R['engine_log_warnings']}")
    for p in R["problems"]:
        print(f"  PROBLEM: {p}")


def warnings_in(lines):
    """The engine's log lines at level warn or error ("TIME LEVEL ...")."""
    return sum(1 for line in lines if re.match(r"[^ ]+ (warn|error) ", line))


def main(argv=None):
    common.line_buffered()
    a = parse_args(argv)
    common.build()
    b = Bench(a)
    try:
        b.setup()
        b.runs()
        R = figures(b)
        judge(R, b.problems, warnings_in(b.server.lines()))
    finally:
        b.close()
    print_ceiling(R, b.mix["text"])
    print_open_loops(R, float(b.open_rate))
    print_outcomes(R)
    print("json: " + json.dumps(R, separators=(",", ":"), sort_keys=True))
    return 1 if R["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
