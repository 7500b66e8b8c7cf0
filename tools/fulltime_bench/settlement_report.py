"""The settlement benchmark's report (fulltime_bench.settlement): throughputs, placement latency
before and while settling for the engine and for the control, CPU, the series, WAL, the checks
and the targets, the SVG and the JSON line. Every function reads the run's figures (run.f) and
prints; the pure ones compute."""

import json

from . import metrics, svg, verdicts
from .stats import percentile_of_count as pct

MARKETS = (2, 3)


def cut(samples, t_from, t_to):
    """Each market's figures for the replies to placements scheduled in [t_from, t_to):
    {market: {"replies", "outcomes", "latency_ms": {p50, p99, p999, max}} or None}."""
    out = {}
    for m in MARKETS:
        rows = [(x, o) for t, x, _, o in samples[m] if t_from <= t < t_to]
        if not rows:
            out[m] = None
            continue
        lat = sorted(x for x, _ in rows)
        outcomes = {}
        for _, o in rows:
            outcomes[o] = outcomes.get(o, 0) + 1
        out[m] = {"replies": len(lat), "outcomes": outcomes,
                  "latency_ms": {"p50": pct(lat, 0.5), "p99": pct(lat, 0.99),
                                 "p999": pct(lat, 0.999), "max": lat[-1]}}
    return out


def worse_market(rows, q):
    """The higher of the two markets' q-quantiles of rows (value, ..., market)."""
    by_market = [[r[0] for r in rows if r[-1] == want] for want in MARKETS]
    return max(pct(v, q) for v in by_market if v)


def control_rows(transactions):
    """The control's placements from pgbench's log: (scheduled unix s, latency ms, market,
    schedule lag ms). Latency counts from the scheduled start (open loop); a client places on
    market 2 + client % 2."""
    rows = []
    for t in transactions:
        lat = t.latency_us / 1000
        end = t.end_s + t.end_us / 1e6
        lag = t.lag_us / 1000 if t.lag_us is not None else 0.0
        rows.append((end - lat / 1000, lat, 2 + t.client % 2, lag))
    return rows


def from_send(rows):
    """(latency less the send lag, market) of (latency, lag, market) rows."""
    return [(x - g, m) for x, g, m in rows]


def fmt_ms(v):
    return "?" if v is None else ("> top bucket" if v == float("inf") else f"{v:g} ms")


def num(v, scale=1.0):
    try:
        return float(v) * scale
    except ValueError:
        return None


class Report:
    """The figures derived while printing, for the targets and the JSON line."""

    def __init__(self, run):
        self.run, self.a, self.f = run, run.a, run.f
        self.ok_all = True
        self.budget_ms = round(float(self.f["budget_ms"]), 2)
        self.bets = self.a.bets

    def check(self, name, ok):
        self.ok_all = self.ok_all and ok
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")

    def throughput(self):
        f, run = self.f, self.run
        self.base_s = float(f["baseline_ms"]) / 1000
        self.base_rate = self.bets / self.base_s
        self.throughput_v = None
        print(f"settlement benchmark: {self.a.accounts} accounts, {self.bets} open bets on market "
              f"1, durable PostgreSQL, batch {run.batch}, lanes {run.lanes}, duty {run.duty} %, "
              + (f"governor budget {self.budget_ms} ms"
                 + (f" ({f['budget_how']})" if f["budget_how"] else "")
                 if self.budget_ms else "governor off"))
        print(f"  baseline, one transaction settles the market:   {self.base_s:8.2f} s  "
              f"{self.base_rate:9.0f} bets/s")
        if f["engine_s"]:
            eng = float(f["engine_s"])
            eng_rate = self.bets / eng
            v = self.throughput_v = verdicts.settlement_throughput(eng_rate / self.base_rate,
                                                                   bool(self.budget_ms))
            print(f"  engine, batches of {run.batch} (POST ack -> applied): {eng:8.2f} s  "
                  f"{eng_rate:9.0f} bets/s")
            print(f"  ratio engine / baseline:                        {v.value:8.2f}  (target >= "
                  f"{v.target:.2f}: {verdicts.word(v, 'met', 'NOT met')})")
        else:
            print("  engine: settlement did NOT finish before the deadline")
        self.ratio = self.throughput_v.value if self.throughput_v else None
        print(f"  result intake: {f['intake']}")

    def show(self, label, runs):
        """One line per market of a window; returns the worse market's (p50, p99)."""
        p50s, p99s = [], []
        for m in MARKETS:
            r = runs[m]
            if not r:
                err = self.f["load_errs"].get(m, "")
                print(f"    {label} market {m}: no replies "
                      f"({err[-300:] or 'nothing on its stderr'})")
                continue
            x = r["latency_ms"]
            p50s.append(x["p50"])
            p99s.append(x["p99"])
            print(f"    {label} market {m}: {r['replies']:5} replies  p50 {x['p50']:7.2f}  p99 "
                  f"{x['p99']:7.2f}  p99.9 {x['p999']:7.2f}  max {x['max']:7.2f} ms  "
                  f"{json.dumps(r['outcomes'])}")
        return (max(p50s) if p50s else None), (max(p99s) if p99s else None)

    def windows(self):
        """The engine's placements before, in each window from the ack, and while settling."""
        f, a = self.f, self.a
        samples, t_before, t_post, t_ack = f["samples"], f["t_before"], f["t_post"], f["t_ack"]
        w_s = float(a.before_s)
        print(f"  placements, open loop at {a.placement_rate}/s in total "
              f"({int(a.placement_rate) / 2:g}/s on each of markets 2 and 3, one load generator "
              f"each across every window, {a.arrivals} arrivals; the control's pgbench: "
              "poisson), latency from the scheduled time:")
        self.b50, self.b99 = self.show(
            f"{'before (t ' + format(t_before - t_ack, '.1f') + ' s-ack)':27}",
            cut(samples, t_before, t_post))
        worst50 = worst99 = None
        chunks = 0
        eng_t = float(f["engine_s"]) if f["engine_s"] else float("inf")
        for k in range(1, int(f["windows"]) + 1):
            lo, hi = (k - 1) * w_s, k * w_s
            p50, p99 = self.show(f"during {int(k):2} (t {lo:5.1f}-{hi:5.1f} s)",
                                 cut(samples, t_ack + lo, t_ack + hi))
            # Windows that started before settlement finished count as 'during'.
            if lo < eng_t and p99 is not None:
                chunks += 1
                worst50 = p50 if worst50 is None else max(worst50, p50)
                worst99 = p99 if worst99 is None else max(worst99, p99)
        # While settling: placements scheduled from the ack until settlement had finished, as
        # the control's 'during' is (scheduled while its psql steps ran).
        self.s50 = self.s99 = None
        if f["engine_s"]:
            self.s50, self.s99 = self.show(
                f"{'settling (t   0.0-' + format(eng_t, '.1f') + ' s)':27}",
                cut(samples, t_ack, t_ack + eng_t))
        self.worst99 = worst99
        self.ratios(worst50, worst99, chunks)

    def ratios(self, worst50, worst99, chunks):
        b50, b99, s50, s99, budget = self.b50, self.b99, self.s50, self.s99, self.budget_ms
        self.r99 = self.rw99 = None
        if b99 and s99 is not None:
            self.r99 = s99 / b99
            print(f"    before: p50 {b50:.2f} ms, p99 {b99:.2f} ms; while settling: p50 "
                  f"{s50:.2f} ms, p99 {s99:.2f} ms (worse market)")
            if budget:
                v = verdicts.settlement_p99_governed(self.r99)
                print(f"    p99 while settling / p99 before: {self.r99:.2f}  (target <= "
                      f"{v.target:.2f}: {verdicts.word(v)})")
            else:
                print(f"    p99 while settling / p99 before: {self.r99:.2f}  (target: no worse "
                      "than the control's, below)")
        if budget and s99 is not None:
            # Whether the governor kept its own budget: with --budget-factor it was sized on
            # another window (the engine before its restart), whose p99 may differ from this
            # run's 'before'; with --budget-percent on the engine's own p99 over the 'before'
            # window (server side).
            print(f"    p99 while settling / the governor's budget ({budget} ms): "
                  f"{s99 / budget:.2f}")
        if b99 and worst99 is not None:
            self.rw99 = worst99 / b99
            print(f"    worst of the {chunks} {self.a.before_s}s windows that started while "
                  f"settling: p50 {worst50:.2f} ms, p99 {worst99:.2f} ms, {self.rw99:.2f} x the "
                  "p99 before")

    def control(self):
        """The control: pgbench's placements before (scheduled after its first second and
        before the result) and during (scheduled while the psql steps ran). Its p50 and p99
        are the worse market's, as the engine's are: the higher of two p99s of half the
        placements each sits above the p99 of all of them."""
        f, run = self.f, self.run
        c0, c1 = f["ctl_t0"], f["ctl_t1"]
        rows = control_rows(f["ctl_rows"])
        self.ctl_r99 = self.ctl_b99 = self.ctl_d99 = None
        self.ctl_rate = (self.bets / (c1 - c0)) if rows else None
        self.cb = self.cd = []
        if not rows:
            print("  control: no pgbench log")
            return
        first = min(r[0] for r in rows)
        cb = self.cb = [(x, g, m) for t, x, m, g in rows if first + 1 <= t < c0]
        cd = self.cd = [(x, g, m) for t, x, m, g in rows if c0 <= t < c1]
        pace = float(self.a.control_rate)
        print(f"  control, no engine: psql runs the same steps (batch {run.batch}, lanes "
              f"{run.lanes}, duty {run.duty} %"
              f"{f', paced to {pace:.0f} bets/s' if pace > 0 else ''}"
              f"{', the read model projected beside them' if run.control_read_model == '1' else ''}"
              f") while pgbench places at {self.a.placement_rate}/s on markets 2 and 3 (same "
              f"accounts, {len(cb) + len(cd)} placements):")
        print(f"    settled {self.bets} bets in {c1 - c0:.2f} s ({self.ctl_rate:.0f} bets/s, "
              f"{self.ctl_rate / self.base_rate:.2f} of the baseline)")
        if cb and cd:
            self.ctl_b99, self.ctl_d99 = worse_market(cb, 0.99), worse_market(cd, 0.99)
            self.ctl_r99 = self.ctl_d99 / self.ctl_b99
            print(f"    before: p50 {worse_market(cb, 0.5):.2f} ms, p99 {self.ctl_b99:.2f} ms "
                  f"({len(cb)}); during: p50 {worse_market(cd, 0.5):.2f} ms, p99 "
                  f"{self.ctl_d99:.2f} ms ({len(cd)}) (worse market; both together: p99 "
                  f"{pct([r[0] for r in cb], 0.99):.2f} before, "
                  f"{pct([r[0] for r in cd], 0.99):.2f} during)")
            print(f"    p99 during / p99 before, database alone: {self.ctl_r99:.2f}")
            if f["engine_s"]:
                # The p99 comparison holds at the same settling speed; a control much faster
                # or slower than the engine loaded the database differently (--control-rate
                # paces it).
                speed = self.ctl_rate / (self.bets / float(f["engine_s"]))
                print(f"    the control settled at {speed:.2f} x the engine's speed"
                      + ("" if 0.85 <= speed <= 1.15 else
                         ": not the same speed, so the p99 comparison is loose (--control-rate "
                         "C paces it)"))

    def lateness(self):
        """Both loads count a placement's latency from its scheduled time, so each includes how
        late its own client sent it (the send lag: the load generator's write, pgbench's
        schedule lag). On two cores the database keeps busy, the clients' lateness is theirs,
        not the system's under test: beside the p99s above, the lags and the p99s from the
        send (latency less lag, worse market)."""
        f = self.f
        samples, t_before, t_post, t_ack = f["samples"], f["t_before"], f["t_post"], f["t_ack"]
        eng_b = [(x, g, m) for m in MARKETS for t, x, g, _ in samples[m] if t_before <= t < t_post]
        eng_s = ([(x, g, m) for m in MARKETS for t, x, g, _ in samples[m]
                  if t_ack <= t < t_ack + float(f["engine_s"])] if f["engine_s"] else [])
        if not (eng_b and eng_s and self.cb and self.cd):
            return
        print("  the clients' own lateness (send lag p50/p99 ms) and the p99 from the send (ms, "
              "worse market):")
        for name, before, after, when in (
                ("engine, load generator", eng_b, eng_s, "while settling"),
                ("control, pgbench", self.cb, self.cd, "during")):
            lb, la = [g for _, g, _ in before], [g for _, g, _ in after]
            print(f"    {name:23} before: lag {pct(lb, 0.5):.2f}/{pct(lb, 0.99):.2f}, p99 from "
                  f"the send {worse_market(from_send(before), 0.99):.2f}; {when}: lag "
                  f"{pct(la, 0.5):.2f}/{pct(la, 0.99):.2f}, p99 from the send "
                  f"{worse_market(from_send(after), 0.99):.2f}")

    def cpu(self):
        """Where the machine's cores went while each settled: settlement is CPU-bound here, so
        the engine's own CPU and its load generators' are cores the database did not have
        (pgbench, the control's load, costs less than the engine's WebSocket load
        generators)."""
        f = self.f
        self.cpu_json = None
        if not (f["engine_s"] and f.get("eng_cpu1")):
            return
        hz, ncpu = float(f["hz"]), f["cores"]
        (cm0, cp0), (cm1, cp1) = f["ctl_cpu"]
        em0, ep0, ee0, el0 = f["eng_cpu0"]
        em1, ep1, ee1, el1 = f["eng_cpu1"]
        cdt, edt = f["ctl_t1"] - f["ctl_t0"], float(f["engine_s"])
        ctl = {"machine": (cm1 - cm0) / hz / cdt, "pgbench": (cp1 - cp0) / hz / cdt}
        ctl["postgresql_and_rest"] = ctl["machine"] - ctl["pgbench"]
        eng = {"machine": (em1 - em0) / hz / edt, "postgresql": (ep1 - ep0) / hz / edt,
               "engine": (ee1 - ee0) / hz / edt, "load_generators": (el1 - el0) / hz / edt}
        eng["rest"] = eng["machine"] - eng["postgresql"] - eng["engine"] - eng["load_generators"]
        self.cpu_json = {"cores": ncpu, "control": {k: round(v, 2) for k, v in ctl.items()},
                         "engine": {k: round(v, 2) for k, v in eng.items()}}
        print(f"  CPU while settling, in cores of {ncpu} busy (/proc ticks):")
        print(f"    control: machine {ctl['machine']:.2f}: pgbench {ctl['pgbench']:.2f}, "
              f"PostgreSQL and the rest {ctl['postgresql_and_rest']:.2f}")
        print(f"    engine:  machine {eng['machine']:.2f}: PostgreSQL {eng['postgresql']:.2f}, "
              f"the engine {eng['engine']:.2f}, its load generators "
              f"{eng['load_generators']:.2f}, the rest (sampling, other jobs) {eng['rest']:.2f}")

    def histograms(self):
        """The engine's own latency histogram and stages, and its projector's work."""
        s = self.f["scrapes"]

        def quantile(a, b, q):
            return metrics.bucket_quantile(
                metrics.buckets(s[a], "fulltime_placement_latency_seconds"),
                metrics.buckets(s[b], "fulltime_placement_latency_seconds"), q)

        p50b, nb = quantile("hist.before0", "hist.before1", 0.5)
        p99b, _ = quantile("hist.before0", "hist.before1", 0.99)
        p50d, nd = quantile("hist.during0", "hist.during1", 0.5)
        p99d, _ = quantile("hist.during0", "hist.during1", 0.99)
        print(f"    engine's own histogram (bucket bounds): before p50 {fmt_ms(p50b)} p99 "
              f"{fmt_ms(p99b)} ({nb}); while settling only p50 {fmt_ms(p50d)} p99 "
              f"{fmt_ms(p99d)} ({nd})")
        for when, a, b in (("before", "hist.before0", "hist.before1"),
                           ("while settling", "hist.during0", "hist.during1")):
            print(f"    engine's stages p50/p99 ms (bucket bounds), {when}: "
                  f"{metrics.stages_line(metrics.stages(s[a], s[b]))}")
        # The projector's own work beside the settlement: the control's leaves its pages from
        # the result when it yields (read.projector_yield_ms), so pages here while settling
        # are the engine's alone.
        self.proj_before = projected(s["hist.before0"], s["hist.before1"])
        self.proj_settling = projected(s["hist.during0"], s["hist.during1"])
        if self.proj_before and self.proj_settling:
            print(f"    engine's projector (pages, outbox rows): before {self.proj_before[0]}, "
                  f"{self.proj_before[1]}; while settling {self.proj_settling[0]}, "
                  f"{self.proj_settling[1]}")

    def errors(self):
        f = self.f
        runs = f["load_runs"]
        errors = sum(r["errors"] for r in runs.values() if r)
        received = sum(r.get("pushes", 0) for r in runs.values() if r)
        for m, r in runs.items():
            if not r:
                errors += 1
                print(f"  market {m}'s load generator printed no figures")
        # The load's accounts also hold bets on market 1: the engine pushes them bet_settled,
        # which bench-placement counts apart from its replies.
        print(f"  placement errors: {errors}; bet_settled pushes: the engine sent "
              f"{int(f['pushes'])}, the load's connections received {received}; bets placed "
              f"on markets 2 and 3: {f['placed_others']}")
        print(f"  {f['counters']}")

    def series(self):
        """The series, at most about 40 rows: every k-th sample, and always the last two. Rates
        and mean step times are over the interval since the previous printed row."""
        rows = self.f["series"]
        k = max(1, -(-len(rows) // 40))
        shown = [r for n, r in enumerate(rows) if n % k == 0 or n >= len(rows) - 2]
        print(f"  settlement series (a sample every {0.5 * k:g} s; t from the ack; p99: the "
              "engine's placement p99 over its last second, as the governor reads it):")
        print(f"    {'t s':>7} {'applied':>7} {'checkpoint':>10} {'settled':>8} {'bets/s':>7} "
              f"{'step ms':>7} {'backlog age ms':>14} {'batches':>7} {'p99 ms':>7} "
              f"{'batch':>5} {'pause ms':>8}  ckpt autovacuum (relations; the governor at its "
              "floor: 'floor')")
        prev = None
        for r in shown:
            print(series_row(r, prev))
            prev = r
        ages = [num(r[4], 1e3) for r in rows if num(r[4]) is not None]
        self.age_max = max(ages) if ages else None
        print(f"  largest backlog age sampled: "
              f"{'?' if self.age_max is None else f'{self.age_max / 1000:.1f} s'} (how long the "
              "result waited to be applied in full, as the engine's scan saw it)")
        print("    (the backlog age gauge is set by the engine's periodic scan, once per poll "
              "interval)")

    def wal(self):
        f = self.f
        self.w_only, self.w_base = f["wal_only_b"], f["base_wal_b"]
        self.w_ctl, w_ctl_p, w_ctl_n = f["ctl_wal"]
        self.w_eng, w_eng_p, w_eng_n = f.get("eng_wal", ("?", "?", "?"))
        print("  WAL bytes per settled bet (pg_current_wal_lsn() around settlement, CHECKPOINT "
              "before):")
        print("    settlement only, the engine's steps from psql, nothing else running: "
              f"{self.w_only:>7}  (the figure to hold)")
        print(f"    baseline, one transaction:{'':44}{self.w_base:>7}")
        print(f"    control, database alone:{'':46}{self.w_ctl:>7}  (less {w_ctl_n} placed bets x "
              f"{w_ctl_p} bytes, the before window's WAL per placed bet)")
        print(f"    engine:{'':63}{self.w_eng:>7}  (less {w_eng_n} placed bets x {w_eng_p} "
              "bytes, likewise)")
        run, y = self.run, self.run.yield_ms
        print("  the read model's share of a settlement (the projector's pages applying the "
              "settlement-only run's, nothing else running):")
        print(f"    {f['proj_b']} WAL bytes and {f['proj_us']} us per settled bet (projected in "
              f"{f['proj_s']} s); "
              + (f"the engine's projector leaves it to after the settlement, or to after {y} ms "
                 "of it (read.projector_yield_ms), " if y > 0 else
                 "the engine's projector does this beside its steps, ")
              + ("the control's beside its own steps" if run.control_read_model == "1"
                 else ("the control's alike" if y > 0 else "the control leaves it out")))

    def checks(self):
        f, bets = self.f, str(self.bets)
        print("  checks:")
        b = f["baseline_settled"].split()
        self.check(f"baseline: {b[0]} settlement rows on market 1, payouts as expected "
                   f"(mismatches {b[2]})", b[0] == bets and b[1] == bets and b[2] == "0")
        bad = f["baseline_inv"]
        self.check("baseline: money invariants" + (" (" + "; ".join(bad[:5]) + ")" if bad else ""),
                   not bad)
        c = f["ctl_settled"].split()
        self.check(f"control: {c[0]} settlement rows on market 1, payouts as expected "
                   f"(mismatches {c[2]})", c[0] == bets and c[1] == bets and c[2] == "0")
        e = f["engine_settled"].split()
        self.check(f"engine: exactly {bets} settlement rows on market 1's bets (found {e[0]}, "
                   f"distinct settled bets {e[1]}, payout mismatches {e[2]}, rows on other "
                   f"markets {e[3]})",
                   e[0] == bets and e[1] == bets and e[2] == "0" and e[3] == "0")
        bad = f["engine_inv"]
        self.check("engine: money invariants (ledger sums to zero per currency, balances = "
                   "ledger sums, one reservation per bet, one effect in force per bet, each "
                   "bet's legs net to its state, one bet per key)"
                   + (" — " + "; ".join(bad[:5]) if bad else ""), not bad)
        print(f"  engine log: {f['log_issue_count']} warning/error lines"
              + (":" if f["log_issues"] else ""))
        for line in f["log_issues"]:
            print("    " + line)

    def targets(self):
        """The performance targets: with the budget off, settlement >= 1.0 x the single
        transaction and a p99 ratio no worse than the control's (the database alone doing the
        same work at the same speed); with a budget, a p99 ratio of at most 1.5 and settlement
        at 0.3 of the single transaction or more; either way, WAL per settled bet (settlement
        only) at least 40 % below the 1,901 bytes first measured."""
        out, self.verdicts = [], {}
        v = self.throughput_v
        if v is not None:
            self.verdicts["throughput"] = v.met
            out.append(f"settlement >= {v.target:.1f} x the baseline {verdicts.word(v)}")
        if self.r99 is not None and self.budget_ms:
            v = verdicts.settlement_p99_governed(self.r99)
            self.verdicts["p99"] = v.met
            out.append(f"placement p99 ratio <= {v.target} {verdicts.word(v)}")
        elif self.r99 is not None and self.ctl_r99 is not None:
            v = verdicts.settlement_p99_against_control(self.r99, self.ctl_r99)
            self.verdicts["p99"] = v.met
            out.append(f"placement p99 ratio no worse than the control's ({v.value:.2f} against "
                       f"{v.target:.2f}) {verdicts.word(v)}")
            # The ratio divides by each side's own quiet p99, so a quieter "before" window reads
            # as a worse ratio: the p99 while settling itself, against the database alone's,
            # says whether the engine adds to what settling costs a placement here (printed,
            # not a target).
            p99_vs = "no worse than" if self.s99 <= self.ctl_d99 else "above"
            out.append(f"(p99 while settling {self.s99:.2f} ms, {p99_vs} the control's "
                       f"{self.ctl_d99:.2f})")
        if self.w_only.isdigit():
            v = verdicts.settlement_wal(int(self.w_only))
            self.verdicts["wal"] = v.met
            out.append(f"WAL per settled bet {verdicts.wal_change_percent(v.value):+.1f} % "
                       f"against {verdicts.WAL_FIRST_BYTES} (target -40 %) {verdicts.word(v)}")
        print("  correctness checks: " + ("PASS" if self.ok_all else "FAIL")
              + "; performance targets: " + (", ".join(out) or "not measured")
              + f"; WAL bytes per settled bet: settlement only {self.w_only}, control "
                f"{self.w_ctl}, engine {self.w_eng}")

    def draw(self):
        """--svg: placement p99 (the governor's one-second window) and settled bets/s against
        time from the ack, the settlement interval shaded, the budget as a dashed line."""
        path, rows = self.a.svg, self.f["series"]
        points = []
        for n, r in enumerate(rows):
            t, rate = float(r[0]), None
            if n > 0:
                dt = t - float(rows[n - 1][0])
                if dt > 0:
                    rate = (int(r[3]) - int(rows[n - 1][3])) / dt
            p = num(r[8], 1e3)
            points.append((t, None if p is None or p < 0 else p, rate))
        if not (path and points):
            return
        title = (f"settlement of {self.bets} bets, governor budget {self.budget_ms} ms"
                 if self.budget_ms else f"settlement of {self.bets} bets, governor off")
        end = float(self.f["engine_s"]) if self.f["engine_s"] else None
        with open(path, "w") as f:
            f.write(svg.settlement(points, title, end, self.budget_ms, self.b99))
        print(f"  drawn: {path}")

    def figures(self):
        f, run = self.f, self.run
        return {
            "bets": self.bets, "batch": int(run.batch), "budget_ms": self.budget_ms,
            "baseline_bets_per_s": self.base_rate,
            "engine_bets_per_s": (self.bets / float(f["engine_s"])) if f["engine_s"] else None,
            "ratio_to_baseline": self.ratio,
            "p99_before_ms": self.b99, "p99_settling_ms": self.s99, "p99_ratio": self.r99,
            "p99_during_worst_window_ms": self.worst99, "p99_worst_window_ratio": self.rw99,
            "p99_settling_over_budget": (self.s99 / self.budget_ms
                                         if self.budget_ms and self.s99 is not None else None),
            "control_p99_ratio": self.ctl_r99,
            "control_p99_before_ms": self.ctl_b99, "control_p99_during_ms": self.ctl_d99,
            "control_bets_per_s": self.ctl_rate,
            "control_paced_to_bets_per_s": float(self.a.control_rate) or None,
            "lanes": int(run.lanes), "arrivals": self.a.arrivals,
            "control_read_model": run.control_read_model == "1",
            "engine_projector_yield_ms": run.yield_ms,
            "cpu_cores_settling": self.cpu_json,
            "backlog_age_max_ms": self.age_max,
            "wal_bytes_per_settled_bet": {"settlement_only": self.w_only, "control": self.w_ctl,
                                          "engine": self.w_eng},
            "projection_per_settled_bet": {"wal_bytes": f["proj_b"], "us": f["proj_us"]},
            "engine_projector_pages_rows": {"before": self.proj_before,
                                            "settling": self.proj_settling},
            "checks_pass": self.ok_all,
            "targets_met": self.verdicts,
        }


def projected(before, after):
    """The engine's projector's [pages, rows] between two scrapes, or None."""
    got = [(metrics.value(after, s), metrics.value(before, s))
           for s in ("fulltime_projector_pages_total", "fulltime_projector_rows_total")]
    if any(b == "?" or a == "?" for b, a in got):
        return None
    return [int(float(b) - float(a)) for b, a in got]


def series_row(r, prev):
    """One printed row of the series; rates since `prev` (the previous printed row). The
    gauges are in seconds; the table is in milliseconds."""
    t, applied, cp, settled, age, running, ssum, scount, gp99, gbatch, gpause, gfloor = r[:12]
    vacuuming, ckpt = (r[12], r[13]) if len(r) >= 14 else ("?", "?")
    rate_s, step_s = "", ""
    if prev:
        try:
            dt = float(t) - float(prev[0])
            rate_s = f"{(int(settled) - int(prev[3])) / dt:.0f}" if dt > 0 else ""
            dc = float(scount) - float(prev[7])
            step_s = f"{(float(ssum) - float(prev[6])) * 1000 / dc:.0f}" if dc > 0 else "-"
        except ValueError:
            pass
    p99_ms, pause_ms, age_ms = num(gp99, 1e3), num(gpause, 1e3), num(age, 1e3)
    return (f"    {float(t):7.1f} {applied:>7} {cp:>10} {settled:>8} {rate_s:>7} {step_s:>7} "
            f"{'?' if age_ms is None else f'{age_ms:.0f}':>14} {running:>7} "
            f"{'-' if p99_ms is None or p99_ms < 0 else f'{p99_ms:.1f}':>7} {gbatch:>5} "
            f"{'-' if pause_ms is None else f'{pause_ms:.0f}':>8}  "
            f"{'yes' if ckpt == '1' else '-':>4} {vacuuming}" + (" floor" if gfloor == "1" else ""))


def report(run):
    """Prints the whole report; the status the benchmark exits with (0: the checks are in the
    JSON line, for the scripts that run it)."""
    r = Report(run)
    r.throughput()
    r.windows()
    r.control()
    r.lateness()
    r.cpu()
    r.histograms()
    r.errors()
    r.series()
    r.wal()
    r.checks()
    r.targets()
    r.draw()
    print("json: " + json.dumps(r.figures()))
    return 0


def print_wal_only(f):
    print(f"WAL bytes per settled bet, settlement only (batch {f['batch']}, {f['bets']} bets, "
          f"nothing else running): {f['wal_only_b']} (settled in {f['wal_s']} s)")
    print(f"the read model's share, projecting that settlement: {f['proj_b']} WAL bytes and "
          f"{f['proj_us']} us per settled bet (projected in {f['proj_s']} s)")
