"""Runs scripts/bench-settlement several times, one after the other, with the governor off, and
judges the budget-off targets on the medians of the runs rather than on one: a run's p99 stands
on the slowest 1 % of its window's placements (about fifteen a market in a 10 s "before" window
at the default rate), so one stall on either side, the engine's or the database-alone
control's, decides a single run's verdict.

Defaults: 5 runs; each run's whole output is kept in --out-dir (default: a new directory under
/tmp, printed). Options it does not know go to every bench-settlement run (--bets, --before-s,
--arrivals, ...); --budget-*, --svg and --control-rate are refused (the budget-on comparison is
scripts/bench-settlement-governor's).

Prints one row a run (settlement against the single transaction, the control's speed against
the engine's, each side's p99 before and while settling, their ratios and the difference of the
p99s while settling), the medians, and the targets judged on them: settlement >= 1.0 x the
single transaction (the median of the runs' ratios), and the engine's p99 ratio no worse than
the control's (the medians of each side's ratios); beside them, how many runs met each on their
own and the median of the engine's p99 while settling less the control's. The last line is the
runs' figures and the verdicts as one JSON object, prefixed "json: ". Exits non-zero when a
run's correctness checks failed or a run printed no figures."""

import json
import os
import re
import subprocess
import sys
import tempfile

from . import common, verdicts

BENCH = os.path.join(common.ROOT, "scripts", "bench-settlement")
REFUSED = ("--budget-ms", "--budget-factor", "--budget-percent", "--svg", "--control-rate")
FORMATS = {"engine/base": ".2f", "ctl/engine": ".2f", "eng before": ".2f",
           "eng settling": ".2f", "ctl before": ".2f", "ctl during": ".2f", "eng ratio": ".2f",
           "ctl ratio": ".2f", "eng-ctl ms": "+.2f"}


def parse_args(argv=None):
    p = common.Parser("scripts/bench-settlement-repeat", __doc__)
    p.add_argument("--runs", type=common.positive_int, default=5, help="bench-settlement runs")
    p.add_argument("--out-dir", help="where each run's output is kept (default: a new directory "
                                     "under /tmp)")
    a, passed = p.parse_known_args(argv)
    for arg in passed:
        if arg.split("=", 1)[0] in REFUSED:
            common.die(f"{arg}: this script compares the governor off "
                       "(scripts/bench-settlement-governor runs it on)")
    a.passed = passed
    return a


def json_line(path):
    """The last "json: " line's object of a run's output, or None."""
    found = None
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("json: "):
                    found = json.loads(line[6:])
    except OSError:
        pass
    return found


def run_all(a):
    """Runs bench-settlement --runs times; prints each run's verdict lines on stderr."""
    for k in range(1, a.runs + 1):
        common.log(f"run {k} of {a.runs}: scripts/bench-settlement {' '.join(a.passed)}")
        out, log = os.path.join(a.out_dir, f"run{k}.txt"), os.path.join(a.out_dir, f"run{k}.log")
        with open(out, "w") as o, open(log, "w") as e:
            rc = subprocess.run([BENCH, *a.passed], stdout=o, stderr=e).returncode
        if rc:
            common.log(f"run {k} exited with {rc} (its output: {out}, {log})")
        with open(out) as f:
            for line in f:
                if re.match(r"  (ratio engine|correctness|performance)", line):
                    print(line, end="", file=sys.stderr)
    common.log(f"runs kept in {a.out_dir}")


def cell(v, fmt):
    return "?" if v is None else format(v, fmt)


def report(rows, runs, missing):
    """Prints the table and the verdicts; returns the exit status."""
    bets = rows[0]["bets"] if rows else "?"
    print(f"settlement, governor off: {len(rows)} runs of {runs} with figures, {bets} bets each "
          "(p99 in ms, the worse market's; the control is the database alone doing the same "
          "steps)")
    print("  " + f"{'run':>4} " + " ".join(f"{name:>12}" for name in FORMATS))
    for r in rows:
        print("  " + f"{r['run']:>4} " + " ".join(
            f"{cell(get(r), FORMATS[name]):>12}" for name, get in verdicts.REPEAT_FIGURES.items()))
    medians, v, each = verdicts.repeat_judgement(rows)
    print("  " + f"{'med':>4} " + " ".join(f"{cell(medians[n], FORMATS[n]):>12}" for n in FORMATS))
    if v["throughput"] is not None:
        print(f"  settlement >= 1.0 x the single transaction, median {medians['engine/base']:.2f}: "
              f"{verdicts.word(v['throughput'])} (each run: {each['throughput']} of {len(rows)})")
    if v["p99"] is not None:
        print(f"  p99 ratio no worse than the control's, medians {medians['eng ratio']:.2f} "
              f"against {medians['ctl ratio']:.2f}: {verdicts.word(v['p99'])} (each run: "
              f"{each['p99']} of {len(rows)})")
    if medians["eng-ctl ms"] is not None:
        print(f"  the engine's p99 while settling less the control's: median "
              f"{medians['eng-ctl ms']:+.2f} ms (at or below it in {each['gap']} of {len(rows)}); "
              f"the control settled at a median {cell(medians['ctl/engine'], '.2f')} x the "
              "engine's speed")
    failed = [r["run"] for r in rows if not r.get("checks_pass")]
    if failed or missing:
        print(f"  correctness checks FAILED in runs {failed}; no figures from runs {missing}")
    print("json: " + json.dumps({
        "runs": rows, "medians": medians,
        "targets_met": {k: (x.met if x else None) for k, x in v.items()},
        "each_run_met": {"throughput": each["throughput"], "p99": each["p99"]},
        "missing": missing}))
    return 1 if failed or missing else 0


def main(argv=None):
    common.line_buffered()
    a = parse_args(argv)
    a.out_dir = a.out_dir or tempfile.mkdtemp(prefix="fulltime-settlement-runs.", dir="/tmp")
    os.makedirs(a.out_dir, exist_ok=True)
    run_all(a)
    rows, missing = [], []
    for k in range(1, a.runs + 1):
        found = json_line(os.path.join(a.out_dir, f"run{k}.txt"))
        if found is None:
            missing.append(k)
        else:
            found["run"] = k
            rows.append(found)
    return report(rows, a.runs, missing)


if __name__ == "__main__":
    raise SystemExit(main())
