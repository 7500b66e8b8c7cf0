"""The settlement benchmark's engine part (3) and its checks (4): `fulltime serve` on the
seeded database, placements on markets 2 and 3 from two load generators, the result posted,
the settlement sampled until it is applied, then the books checked. Leaves its figures in
run.f for settlement_report."""

import json
import re
import signal
import time

import psycopg

from . import cluster, common, db, engine, metrics, settlement_db
from .settlement_db import PLACEMENT_CONNS, SEL_WIN, elapsed, wal_mark, wal_per_bet

# The series sampled every 0.5 s while settling, after the time, applied and checkpoint.
SERIES = ("fulltime_settlement_bets_total", "fulltime_settlement_backlog_age_seconds",
          "fulltime_settlement_batches_running", "fulltime_settlement_step_latency_seconds_sum",
          "fulltime_settlement_step_latency_seconds_count",
          "fulltime_settlement_governor_placement_p99_seconds",
          "fulltime_settlement_governor_batch_bets", "fulltime_settlement_governor_pause_seconds",
          "fulltime_settlement_governor_floored")
LOG_ISSUE = re.compile(r"\b(warn|warning|error|fatal)\b", re.IGNORECASE)


def number(text):
    """A metric's value as awk reads it: a number, or 0 for "?"."""
    try:
        return float(text)
    except ValueError:
        return 0.0


def awk_number(x):
    """A number as awk prints it: an integral one as an integer, else %.6g."""
    return str(int(x)) if x == int(x) else f"{x:.6g}"


def last_json_line(path):
    try:
        with open(path) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


def read_samples(path):
    """A load generator's measured replies: (unix s, latency ms, send lag ms, outcome)."""
    try:
        with open(path) as f:
            return [(float(t), float(x), float(g), o.strip())
                    for t, x, g, o in (line.split(None, 3) for line in f)]
    except (OSError, ValueError):
        return []


class Load:
    """The two load generators, one per market (2 and 3), half the rate each, each with its own
    accounts; every measured reply is a line of NAME.mM.samples, the figures NAME.mM.json.
    SIGINT ends them early (stop)."""

    def __init__(self, run, env):
        self.run, self.env = run, env
        self.procs = []  # (name, process)

    def start(self, port, name, duration_s, warmup_s=0):
        a, w = self.run.a, self.run.work
        half = f"{a.placement_rate / 2:g}"
        self.procs = []
        for first, m in ((1, 2), (1 + PLACEMENT_CONNS, 3)):
            self.procs.append((f"{name}.m{m}", engine.load_generator(port, [
                "--connections", str(PLACEMENT_CONNS), "--accounts", str(PLACEMENT_CONNS),
                "--first-account", str(first), "--selection", f"{m}1", "--stake", "1.00",
                "--odds", "2.00", "--repeat-ratio", "0", "--rate", half,
                "--arrivals", a.arrivals, "--duration-s", awk_number(duration_s + warmup_s),
                "--warmup-s", str(warmup_s), "--samples-out", w(f"{name}.m{m}.samples"),
                "--key-prefix", f"{name}-m{m}"],
                w(f"{name}.m{m}.json"), w(f"{name}.m{m}.err"), self.env)))

    def pids(self):
        return [p.pid for _, p in self.procs]

    def wait(self):
        """Waits for them; notes each one's exit status in its .err file."""
        for name, p in self.procs:
            rc = p.wait()
            with open(self.run.work(f"{name}.err"), "a") as f:
                f.write(f"exit status {rc}\n")
        self.procs = []

    def stop(self):
        """They finish their outstanding requests and print their figures."""
        for _, p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        self.wait()

    def kill(self):
        for _, p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.procs = []


class EngineRun:
    """The engine's part of one run (fulltime_bench.settlement.Run)."""

    def __init__(self, run):
        self.run, self.a, self.f = run, run.a, run.f
        self.server = self.conn = None
        self.earlier_lines = []  # an engine restarted with a budget: the first one's log
        self.metrics_text = ""
        env = dict(run.env, FULLTIME_LOG_LEVEL="info")
        a = self.a
        for name, value in (("BATCH_BETS_MAX", a.batch_size), ("LANES", a.lanes),
                            ("DUTY_PERCENT", a.duty_percent)):
            if value is not None:
                env[f"FULLTIME_SETTLEMENT_{name}"] = str(value)
        if a.budget_percent:
            env["FULLTIME_SETTLEMENT_PLACEMENT_P99_BUDGET_PERCENT"] = str(a.budget_percent)
            env["FULLTIME_SETTLEMENT_PLACEMENT_BASELINE_MS"] = str(a.before_s * 1000)
        self.env = env
        self.load = Load(run, env)
        self.budget_ms = a.budget_ms
        self.budget_how = ""

    def start_engine(self):
        self.server = engine.Server(self.env, self.run.work("engine.log"))

    def scrape(self):
        self.metrics_text = self.server.metrics()
        return self.metrics_text

    def save_histogram(self, name):
        """The whole scrape at a moment, for the placement latency and stage histograms."""
        self.f.setdefault("scrapes", {})[name] = self.scrape()
        with open(self.run.work(f"{name}.metrics"), "w") as f:
            f.write(self.metrics_text)

    def wait_background(self):
        """The read model's projector applies the seed's outbox rows (one per open bet) once
        the engine starts, which takes some seconds of both cores, and then the push loop's
        purge deletes them, in rounds every settlement.outbox_purge_interval_ms (100,000
        deletes shortly after the CHECKPOINT: about 9 KB of WAL per placed bet of a 10 s window
        it lands in). Placements measured meanwhile would show them, not settlement: each
        "before" window starts once both are done."""
        t0 = time.time()
        if self.env.get("FULLTIME_READ_PROJECTOR_INTERVAL_MS") == "0":
            common.log("the engine runs no projector (FULLTIME_READ_PROJECTOR_INTERVAL_MS=0): "
                       "not waiting for it")
        else:
            for _ in range(1200):
                if "\nfulltime_projector_caught_up 1" in "\n" + self.scrape():
                    common.log(f"the read model's projector caught up ({elapsed(t0)} s after "
                               "the warm-up)")
                    break
                time.sleep(0.1)
            else:
                common.die("the read model's projector did not catch up within 120 s")
        last = self.f["seed_outbox_last"]
        for _ in range(240):
            left = db.row(self.run.url, "outbox_left", last=last)[0]
            if left == 0:
                common.log(f"the seed's outbox rows are purged ({elapsed(t0)} s after the "
                           "warm-up)")
                return
            time.sleep(0.5)
        common.die(f"the push loop did not purge the seed's outbox rows within 120 s ({left} "
                   "left)")

    def settle_background(self):
        """The control's windows start on a clone vacuumed and analyzed, right after a
        CHECKPOINT. The engine's start after the warm-up, the projector's catch-up and the
        purge of the seed's outbox rows: dead rows that autovacuum would clean up in a window,
        and WAL since the CHECKPOINT before the engine started, enough that the settlement's
        own started a checkpoint by WAL volume (max_wal_size) as it ended. So the engine's
        database gets what the control's clone got, before its windows too."""
        db.psql(self.run.url, "vacuum_checkpoint",
                what="vacuuming the engine's database failed")

    def warm_up(self, name):
        """Unmeasured: connections, caches and the engine's pools warm up."""
        common.log("warm-up: placements for 3s")
        self.load.start(self.server.port, name, 3)
        self.load.wait()
        self.wait_background()
        self.settle_background()

    def size_budget(self):
        """--budget-factor: a "before" window on this engine to size the budget on (the worse
        of the two load generators' p99, times the factor, rounded up to a millisecond); the
        window that counts is measured again on the engine that settles."""
        a = self.a
        common.log(f"placements to size the budget: {a.placement_rate}/s on markets 2 and 3 "
                   f"for {a.before_s}s")
        self.load.start(self.server.port, "budget-probe", a.before_s, 1)
        self.load.wait()
        p99 = max(last_json_line(self.run.work(f"budget-probe.m{m}.json"))["latency_ms"]["p99"]
                  for m in (2, 3))
        b = p99 * float(a.budget_factor)
        self.budget_ms = max(1, int(b) + (1 if int(b) < b else 0))
        common.log(f"budget: {a.budget_factor} x the p99 before ({p99} ms) = {self.budget_ms} ms")
        self.budget_how = f"{a.budget_factor} x the p99 before"

    def restart_with_budget(self):
        common.log("restarting the engine with settlement.placement_p99_budget_ms = "
                   f"{self.budget_ms}")
        self.server.stop()
        self.earlier_lines += self.server.lines()
        self.env["FULLTIME_SETTLEMENT_PLACEMENT_P99_BUDGET_MS"] = str(self.budget_ms)
        self.start_engine()
        self.warm_up("warmup2")

    def engine_cpu(self):
        """Ticks of the machine, the cluster, the engine and the two load generators."""
        return (cluster.machine_ticks(), self.run.pg.ticks(),
                cluster.process_ticks(self.server.pid), cluster.pids_ticks(self.load.pids()))

    def before_window(self):
        """The measured load, one load generator per market from the "before" window to the end
        of the last "during" one, each window cut from its replies by scheduled time afterwards,
        so that no window starts with connections of its own (a load generator's first second
        is not its steady state). Its first second is left out."""
        a = self.a
        common.log(f"placements before the result: {a.placement_rate}/s on markets 2 and 3 for "
                   f"{a.before_s}s")
        self.load.start(self.server.port, "load", 86400, 1)
        time.sleep(1)
        self.save_histogram("hist.before0")
        self.f["eng_wal0"] = wal_mark(self.run.url)
        self.f["t_before"] = time.time()
        time.sleep(a.before_s)
        self.f["eng_wal1"] = wal_mark(self.run.url)
        self.save_histogram("hist.before1")

    def post_result(self):
        """The result goes to POST /v1/feed while placements go on; returns the ack's body."""
        common.log(f"posting the result; placing in {self.a.before_s}s windows until settlement "
                   "has finished")
        intake = "POST /v1/feed"
        body = json.dumps({"type": "result", "market_id": 1, "seq": 1, "event_key": "bench-r1",
                           "outcomes": [{"selection_id": SEL_WIN, "result": "win"}]},
                          separators=(",", ":"))
        self.f["pushes0"] = metrics.value(self.scrape(), "fulltime_settlement_pushes_total")
        self.f["eng_wal2"] = wal_mark(self.run.url)
        self.f["t_post"] = time.time()
        code, ack = engine.post(self.server.port, "/v1/feed", body, self.producer)
        self.f["t_ack"] = time.time()
        self.f["eng_cpu0"] = self.engine_cpu()
        if code == "400" and "unknown" in ack.lower() and "type" in ack.lower():
            # The feed does not take `result` yet: store the event with the same SQL function;
            # the engine's periodic scan (settlement.poll_interval_ms) picks it up.
            common.log(f"POST /v1/feed refused the result ({code} {ack}); storing it with SQL "
                       "instead")
            intake = f"SQL fulltime_record_result (fallback: POST answered {code} {ack})"
            got = db.execute(self.conn, "settlement_record_result", result=settlement_db.RESULT)
            if not got or got[0][0] != "stored":
                common.die(f"the fallback did not store the result: {got}")
            self.f["t_ack"] = time.time()
            ack = "(SQL) stored"
        elif code != "200" or '"duplicate":false' not in ack:
            common.die(f"POST /v1/feed: {code} {ack}")
        self.f["intake"] = intake
        return ack

    def governor_budget(self):
        """--budget-percent: the budget the engine sized itself, from its own placements of the
        'before' window."""
        budget_s, baseline_s = (number(v) for v in metrics.values(
            self.metrics_text, "fulltime_settlement_governor_budget_seconds",
            "fulltime_settlement_governor_baseline_p99_seconds"))
        self.budget_ms = f"{budget_s * 1000:.2f}"
        self.budget_how = (f"{self.a.budget_percent} % of the engine's own p99 before, "
                           f"{baseline_s * 1000:.2f} ms")
        common.log(f"governor budget: {self.budget_ms} ms ({self.budget_how})")
        if not budget_s > 0:
            common.die("the engine has no budget in percent: no baseline after the 'before' "
                       f"window ({baseline_s:g} s)")

    def sample(self, t_ms, applied, checkpoint):
        """One row of the series: t (s from the ack), applied, checkpoint, SERIES, the
        relations autovacuum was vacuuming and whether the checkpointer was writing."""
        vacuuming, writing = db.execute(self.conn, "settlement_background")[0]
        values = metrics.values(self.scrape(), *SERIES)
        self.series.append([f"{t_ms // 1000}.{t_ms % 1000:03d}", applied, checkpoint, *values,
                            vacuuming, str(writing)])

    def progress(self):
        found = db.execute(self.conn, "settlement_progress")
        applied, checkpoint = found[0] if found else (None, None)
        return ("none" if applied is None else str(applied),
                "none" if checkpoint is None else str(checkpoint))

    def until_applied(self, t0_ms):
        """Every 0.1 s: is the event applied? Every 0.5 s: one sample of the series. The
        sampling is the only measuring the engine's side has that the control's has not, and it
        runs on the same cores as the database: one query on one session and one scrape a
        sample. The settled count is the engine's counter (fulltime_settlement_bets_total,
        counted as each batch ends): a count of bet_settlements' rows would read them all,
        17 ms of a backend every sample while settling. The checks after the run count the
        rows. Returns the ms from the ack to the sample that saw it applied, or None at the
        deadline."""
        deadline_ms = float(f"{float(self.f['baseline_ms']) * 20 + 120000:.0f}")
        next_ms, done_ms = 0, None
        while True:
            applied, checkpoint = self.progress()
            t_ms = int(time.time() * 1000) - t0_ms
            if applied == "1":
                done_ms = t_ms
                self.f["eng_cpu1"] = self.engine_cpu()
            if done_ms is not None or t_ms >= next_ms:
                self.sample(t_ms, applied, checkpoint)
                next_ms += 500
            if done_ms is not None or t_ms > deadline_ms:
                break
            time.sleep(0.1)
        self.last_progress = (applied, checkpoint)
        return done_ms, int(deadline_ms)

    def settle(self):
        """The result posted and sampled until applied; placements go on in windows as long as
        the 'before' one, from the ack to the first that ends after settlement finished (or the
        deadline). CPU over the settlement, from the ack to the sample that saw it applied."""
        self.series = self.f["series"] = []
        ack = self.post_result()
        t0_ms = int(self.f["t_ack"] * 1000)
        if self.a.budget_percent:
            self.governor_budget()
        self.save_histogram("hist.during0")
        common.log(f"acknowledged in {elapsed(self.f['t_post'], self.f['t_ack'])} s: {ack}")
        done_ms, deadline_ms = self.until_applied(t0_ms)
        if done_ms is not None:
            self.f["eng_wal"] = wal_per_bet(self.run, self.f["eng_wal2"], wal_mark(self.run.url),
                                            (self.f["eng_wal0"], self.f["eng_wal1"]))
        self.save_histogram("hist.during1")
        # The backlog gauge is set by the periodic scan (settlement.poll_interval_ms): one more
        # sample after the next scan.
        time.sleep(1.2)
        self.sample(int(time.time() * 1000) - t0_ms, *self.last_progress)
        self.f["engine_s"] = "" if done_ms is None else f"{done_ms / 1000:.3f}"
        if done_ms is not None:
            common.log(f"settlement finished {self.f['engine_s']}s after the ack; placing to the "
                       "end of its window")
        else:
            common.log(f"settlement did not finish in {deadline_ms // 1000}s; placing to the end "
                       "of the window")
        window_ms = self.a.before_s * 1000
        last_ms = done_ms if done_ms is not None else int(time.time() * 1000) - t0_ms
        self.f["windows"] = last_ms // window_ms + 1
        while int(time.time() * 1000) - t0_ms < self.f["windows"] * window_ms:
            time.sleep(0.1)
        self.load.stop()

    def counters(self):
        text = self.scrape()
        self.f["pushes"] = (number(metrics.value(text, "fulltime_settlement_pushes_total"))
                            - number(self.f["pushes0"]))

        def steps(status):
            return metrics.value(text, "fulltime_settlement_steps_total", f'status="{status}"')

        self.f["counters"] = (
            f"settlement steps: batch {steps('batch')}, failed {steps('failed')}, fenced "
            f"{steps('fenced')}; settlement lock timeouts "
            f"{metrics.value(text, 'fulltime_settlement_lock_timeouts_total')}; placement lock "
            f"timeouts {metrics.value(text, 'fulltime_placement_lock_timeouts_total')}")

    def measure(self):
        run = self.run
        db.checkpoint(run.url)
        common.log("starting the engine")
        self.start_engine()
        self.producer = engine.token(self.env, "producer", "bench-feed")
        self.scrape()
        self.warm_up("warmup")
        if self.a.budget_factor:
            self.size_budget()
        if self.budget_ms:
            self.restart_with_budget()
        # One session for the samples, so that polling every 0.1 s starts no process.
        self.conn = psycopg.connect(run.url, autocommit=True)
        self.before_window()
        self.settle()
        self.counters()

    def checks(self):
        """4: the books and the settlement rows, the bets placed meanwhile, the engine's log;
        and what the load generators measured."""
        self.conn.close()
        url, f, w = self.run.url, self.f, self.run.work
        f["engine_inv"] = settlement_db.invariants(url)
        f["engine_settled"] = settlement_db.settled(url)
        f["placed_others"] = db.row(url, "bets_on_other_markets")[0]
        issues = [line.rstrip("\n") for line in self.earlier_lines + self.server.lines()
                  if LOG_ISSUE.search(line)]
        f["log_issues"], f["log_issue_count"] = issues[:20], len(issues)
        f["load_runs"] = {m: last_json_line(w(f"load.m{m}.json")) for m in (2, 3)}
        f["samples"] = {m: read_samples(w(f"load.m{m}.samples")) for m in (2, 3)}
        f["load_errs"] = {}
        for m in (2, 3):
            try:
                with open(w(f"load.m{m}.err")) as e:
                    f["load_errs"][m] = e.read().strip()
            except OSError:
                f["load_errs"][m] = ""
        f.update(budget_ms=self.budget_ms or 0, budget_how=self.budget_how, hz=common.CLK_TCK,
                 cores=common.cores())

    def close(self):
        self.load.kill()
        if self.conn:
            self.conn.close()
        if self.server:
            self.server.stop()
