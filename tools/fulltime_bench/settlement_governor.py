"""Runs scripts/bench-settlement three times: the settlement governor off, then on with a budget
of --budget-percent (default 150) of the placement p99 the engine measures itself before the
burst (settlement.placement_p99_budget_percent), then on again with that budget while the
database-alone control is paced to the rate the first governed run settled at
(--control-rate): the database's own answer at the governed speed. Prints their figures side
by side: placement p99 while settling / before (the control's 'during' is the same interval),
settlement bets/s / the single-transaction baseline, the largest backlog age, beside the
control of each run. Each run is drawn as an SVG in --svg-dir (default: the current
directory): settlement-governor-off.svg, settlement-governor-on.svg and
settlement-governor-on-2.svg. Options it does not know go to every bench-settlement run.

Targets: budget off, settlement >= 1.0 x the baseline and a p99 ratio no worse than the
control's; budget on, p99 during <= 1.5 x before while settlement keeps >= 0.3 x the baseline.
Each run seeds, baselines and controls on its own database: about three times the time of one
bench-settlement run."""

import json
import os
import subprocess
import sys

from . import common, verdicts
from .settlement_repeat import BENCH, json_line

REFUSED = ("--budget-ms", "--budget-factor", "--svg", "--control-rate")


def parse_args(argv=None):
    p = common.Parser("scripts/bench-settlement-governor", __doc__)
    p.add_argument("--budget-percent", type=int, default=150,
                   help="the budget, %% of the engine's own p99 before")
    p.add_argument("--svg-dir", default=os.getcwd(), help="where the three runs are drawn")
    a, passed = p.parse_known_args(argv)
    for arg in passed:
        if arg.split("=", 1)[0] in REFUSED:
            common.die(f"{arg} is set by this script (use --budget-percent, --svg-dir)")
    a.passed = passed
    return a


def tee(args, path):
    """Runs bench-settlement with `args`, its output on stdout and in `path`; a failed run
    ends this one with its status."""
    with open(path, "w") as out, subprocess.Popen([BENCH, *args], stdout=subprocess.PIPE,
                                                  text=True) as p:
        for line in p.stdout:
            sys.stdout.write(line)
            out.write(line)
    if p.returncode:
        raise SystemExit(p.returncode)


def f(v, fmt):
    return "?" if v is None else format(v, fmt)


ROWS = [
    ("governor budget ms", lambda r: f(r["budget_ms"] or None, ".2f") if r["budget_ms"] else "off"),
    ("placement p99 before ms", lambda r: f(r["p99_before_ms"], ".2f")),
    ("placement p99 while settling ms", lambda r: f(r["p99_settling_ms"], ".2f")),
    ("p99 while settling / before", lambda r: f(r["p99_ratio"], ".2f")),
    ("  worst window's p99 / before", lambda r: f(r["p99_worst_window_ratio"], ".2f")),
    ("  p99 while settling / the budget", lambda r: f(r.get("p99_settling_over_budget"), ".2f")),
    ("  control (database alone): p99 during / before", lambda r: f(r["control_p99_ratio"], ".2f")),
    ("settlement bets/s", lambda r: f(r["engine_bets_per_s"], ".0f")),
    ("settlement / single-transaction baseline", lambda r: f(r["ratio_to_baseline"], ".2f")),
    ("  control: bets/s", lambda r: f(r["control_bets_per_s"], ".0f")),
    ("  control paced to bets/s", lambda r: f(r.get("control_paced_to_bets_per_s"), ".0f")),
    ("largest backlog age s", lambda r: f(r["backlog_age_max_ms"] / 1000
                                          if r["backlog_age_max_ms"] is not None else None, ".1f")),
    ("correctness checks", lambda r: "PASS" if r["checks_pass"] else "FAIL"),
]


def report(off, on, on2, percent):
    print()
    print(f"settlement governor, {off['bets']} bets, batch {off['batch']}: off against a budget of "
          f"{percent} % of the engine's p99 before")
    print(f"  {'':48} {'off':>10} {'on':>10} {'on again':>10}")
    for name, get in ROWS:
        print(f"  {name:48} {get(off):>10} {get(on):>10} {get(on2):>10}")
    throughput, p99 = verdicts.governor_off(off)
    if throughput is not None:
        print(f"  target, off: settlement >= 1.0 x baseline: {verdicts.word(throughput)}; p99 "
              f"ratio <= the control's: {verdicts.word(p99) if p99 else 'NOT met'}")
    for name, r in (("on", on), ("on again", on2)):
        judged = verdicts.governor_on(r)
        if judged:
            print(f"  target, {name}: p99 during <= 1.5 x before: {verdicts.word(judged[0])}; "
                  f"settlement >= 0.3 x baseline: {verdicts.word(judged[1])}")
    c = on2["control_p99_ratio"]
    if c is not None:
        within = verdicts.settlement_p99_governed(c)
        print(f"  the database alone at the governed rate "
              f"({f(on2.get('control_paced_to_bets_per_s'), '.0f')} bets/s): p99 during / before "
              f"{c:.2f}, {'within' if within.met else 'above'} 1.5")
    print("json: " + json.dumps({"off": off, "on": on, "on_again": on2}))
    return 0 if off["checks_pass"] and on["checks_pass"] and on2["checks_pass"] else 1


def main(argv=None):
    common.line_buffered()
    a = parse_args(argv)
    os.makedirs(a.svg_dir, exist_ok=True)
    work = common.WorkDir("fulltime-governor.")
    try:
        svg = os.path.join(a.svg_dir, "settlement-governor-{}.svg")
        budget = ["--budget-percent", str(a.budget_percent)]
        common.log("run 1 of 3: governor off")
        tee(a.passed + ["--svg", svg.format("off")], work("off.txt"))
        common.log(f"run 2 of 3: governor on, budget {a.budget_percent} % of the engine's p99 "
                   "before")
        tee(a.passed + budget + ["--svg", svg.format("on")], work("on.txt"))
        on = json_line(work("on.txt"))
        rate = int(on["engine_bets_per_s"] or 0) if on else 0
        if rate <= 0:
            common.die("run 2 reported no settlement rate")
        common.log(f"run 3 of 3: governor on, budget {a.budget_percent} %; the control paced to "
                   f"run 2's {rate} bets/s")
        tee(a.passed + budget + ["--control-rate", str(rate), "--svg", svg.format("on-2")],
            work("on2.txt"))
        runs = [json_line(work(f"{n}.txt")) for n in ("off", "on", "on2")]
    finally:
        work.remove()
    for name, r in zip(("off", "on", "on2"), runs):
        if r is None:
            common.die(f"{name}: no json line")
    return report(*runs, a.budget_percent)


if __name__ == "__main__":
    raise SystemExit(main())
