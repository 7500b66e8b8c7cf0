"""The reads benchmark's report (fulltime_bench.reads): the medians over the repeats, the
ratios of the read configurations, the synchronous standby's cost to a placement, the
engine's log findings, the problems and the JSON line."""

import collections
import glob
import json
import os
import re
import statistics

from .reads_client import IDLE_S, PAGE_LIMIT, PAGE_SHARE

READ_CONFIGS = {"a": "(a) write tables, primary", "b": "(b) read model, primary",
                "c": "(c) read model, standby"}
PLACE_CONFIGS = {"local": "local, no read_url (baseline)", "local_url": "local, read_url",
                 "on_url": "on, read_url", "apply_url": "remote_apply, read_url"}
CPU = "primary_cpu_ms_per_1000_reads"
NET = "primary_net_cpu_ms_per_1000_reads"



def run_figures(runs, *figures):
    """"name v1 v2 ...; name ..." for each (name, key, format) in figures: one value per run."""
    return "; ".join(name + " " + " ".join(format(r[key], spec) for r in runs)
                     for name, key, spec in figures)

def medians(runs):
    keys = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return {k: statistics.median(r[k] for r in runs) for k in keys}


def engine_log_findings(work_dir):
    """Warnings and errors in the engines' logs: counts per run, and the distinct messages
    (numbers blanked) with how often each came."""
    per_run, distinct = {}, collections.Counter()
    for path in sorted(glob.glob(f"{work_dir}/engine-*.log")):
        run = os.path.basename(path)[len("engine-"):-len(".log")]
        with open(path, errors="replace") as f:
            lines = [x.rstrip("\n") for x in f if re.match(r"^\S+ (warn|error) ", x)]
        if lines:
            per_run[run] = len(lines)
        for x in lines:
            distinct[re.sub(r"\d+", "N", x.split(" ", 1)[1])[:200]] += 1
    return per_run, distinct


def read_problems(cfg, runs):
    out = []
    for i, run in enumerate(runs, 1):
        if run["errors"]:
            out.append(f"reads ({cfg}) run {i}: errors {run['errors']}")
        if cfg == "c" and run["standby_share"] < 0.99:
            out.append(f"reads (c) run {i}: only {run['standby_share']:.3f} of the reads on the "
                       f"standby: {run['routes']}")
        if cfg != "c" and run["standby_share"] > 0:
            out.append(f"reads ({cfg}) run {i}: reads on a standby: {run['routes']}")
    return out


def place_problems(cfg, runs):
    out = []
    for i, run in enumerate(runs, 1):
        if run["errors"] or run["status"]:
            out.append(f"placement ({cfg}) run {i}: {run['errors']} errors, status "
                       f"{run['status']}, outcomes {run['outcomes']}")
        if run["sync_state"] != "sync":
            out.append(f"placement ({cfg}) run {i}: the standby was {run['sync_state']}, not sync")
    return out


def ratios(R):
    ma, mb, mc = (R["reads"][c]["median"] for c in "abc")
    x = {"primary_cpu_b_over_a": mb[CPU] / ma[CPU], "primary_cpu_c_over_a": mc[CPU] / ma[CPU],
         "primary_net_cpu_b_over_a": mb[NET] / ma[NET],
         "primary_net_cpu_c_over_a": mc[NET] / ma[NET],
         "primary_blocks_b_over_a": mb["primary_blocks_per_read"] / ma["primary_blocks_per_read"],
         "primary_blocks_c_over_a": mc["primary_blocks_per_read"] / ma["primary_blocks_per_read"],
         "reads_per_s_b_over_a": mb["reads_per_s"] / ma["reads_per_s"],
         "reads_per_s_c_over_a": mc["reads_per_s"] / ma["reads_per_s"]}
    # The same ratios within each repeat (a, b and c ran one after the other): steadier than
    # the ratio of medians when the machine's other load drifts from one repeat to the next.
    ra, rb, rc = (R["reads"][c]["runs"] for c in "abc")
    for k, name in ((CPU, "primary_cpu"), (NET, "primary_net_cpu")):
        for runs, label in ((rb, "b"), (rc, "c")):
            per = [y[k] / a[k] for a, y in zip(ra, runs)]
            x[f"{name}_{label}_over_a_per_repeat"] = per
            x[f"{name}_{label}_over_a_median_per_repeat"] = statistics.median(per)
    return x


def figures(P, setup, results, problems, work_dir):
    """Every figure of the run, as the JSON line has them."""
    R = {"params": P, "setup": setup, "reads": {}, "placement": {}}

    def runs(prefix, cfg):
        return [results[f"{prefix}-{cfg}-{r}"] for r in range(1, P["repeat"] + 1)]

    for cfg in READ_CONFIGS:
        R["reads"][cfg] = {"median": medians(runs("reads", cfg)), "runs": runs("reads", cfg)}
        problems += read_problems(cfg, runs("reads", cfg))
    for cfg in PLACE_CONFIGS:
        R["placement"][cfg] = {"median": medians(runs("place", cfg)), "runs": runs("place", cfg)}
        problems += place_problems(cfg, runs("place", cfg))
    R["ratios"] = ratios(R)
    base = R["placement"]["local"]["median"]
    for cfg in PLACE_CONFIGS:
        m = R["placement"][cfg]["median"]
        R["placement"][cfg]["vs_baseline"] = {
            "placements_per_s": m["placements_per_s"] / base["placements_per_s"],
            "latency_ms_p50": m["latency_ms_p50"] / base["latency_ms_p50"],
            "latency_ms_p99": m["latency_ms_p99"] / base["latency_ms_p99"]}
    per_run, distinct = engine_log_findings(work_dir)
    R["engine_log_warnings"] = {"per_run": per_run, "messages": dict(distinct.most_common(20))}
    R["problems"] = problems
    return R, per_run, distinct


def print_reads(R):
    P, setup_figures = R["params"], R["setup"]
    print(f"reads: {P['accounts']} bettors x {P['bets_per_account']} bets "
          f"({setup_figures['settled']} of {setup_figures['bets']} settled), {P['reads']} reads "
          f"per run over {P['connections']} sessions (limit {PAGE_LIMIT}, status all, the next "
          f"page {PAGE_SHARE:.0%} of the time), durable PostgreSQL 15 and a hot standby, "
          f"{P['cores']} cores; medians of {P['repeat']} run(s)")
    print(f"  {'':28} {'reads/s':>8} {'p50 ms':>7} {'p99 ms':>7} | CPU ms per 1000 reads: "
          f"{'primary':>7} {'net':>5} {'standby':>7} {'engine':>6} {'client':>6} | primary per read: "
          f"{'blocks':>6} {'tuples':>6} | {'standby':>7}")
    for cfg, label in READ_CONFIGS.items():
        m = R["reads"][cfg]["median"]
        print(f"  {label:28} {m['reads_per_s']:8.0f} {m['latency_ms_p50']:7.2f} "
              f"{m['latency_ms_p99']:7.2f} | {'':22}{m[CPU]:7.0f} {m[NET]:5.0f} "
              f"{m['standby_cpu_ms_per_1000_reads']:7.0f} {m['engine_cpu_ms_per_1000_reads']:6.0f} "
              f"{m['client_cpu_ms_per_1000_reads']:6.0f} | {'':17}"
              f"{m['primary_blocks_per_read']:6.1f} {m['primary_tuples_returned_per_read']:6.1f} | "
              f"{m['standby_share']:7.1%}")
    print("  (net: less what the engine costs the primary idle, measured for "
          f"{IDLE_S:g} s before each run)")
    for cfg, label in READ_CONFIGS.items():
        runs = R["reads"][cfg]["runs"]
        print(f"    {label}: " + run_figures(runs, ("primary CPU ms/1000 reads per run", CPU, ".0f"),
                                          ("reads/s", "reads_per_s", ".0f"),
                                          ("rest of the machine, cores", "rest_cores", ".2f"))
              + "; routes " + " ".join(json.dumps(r["routes"], sort_keys=True) for r in runs))
    for cfg, label in READ_CONFIGS.items():
        m = R["reads"][cfg]["median"]
        print(f"    {label}, the engine idle: primary {m['primary_idle_cores']:.3f} cores, "
              f"{m['primary_idle_commits_per_s']:.0f} transactions/s, "
              f"{m['primary_idle_wal_bytes_per_s'] / 1000:.1f} kB WAL/s, the projector's rows "
              f"updated {m['projector_idle_row_updates_per_s']:.0f}/s; standby "
              f"{m['standby_idle_cores']:.3f} cores; engine {m['engine_idle_cores']:.3f} cores")
    x = R["ratios"]
    print(f"  primary CPU per read: (b)/(a) {x['primary_cpu_b_over_a']:.2f}, (c)/(a) "
          f"{x['primary_cpu_c_over_a']:.2f}; net of the idle engine: (b)/(a) "
          f"{x['primary_net_cpu_b_over_a']:.2f}, (c)/(a) {x['primary_net_cpu_c_over_a']:.2f}")
    print("  the same within each repeat: (b)/(a) "
          + " ".join(f"{v:.2f}" for v in x["primary_cpu_b_over_a_per_repeat"])
          + f" (median {x['primary_cpu_b_over_a_median_per_repeat']:.2f}), (c)/(a) "
          + " ".join(f"{v:.2f}" for v in x["primary_cpu_c_over_a_per_repeat"])
          + f" (median {x['primary_cpu_c_over_a_median_per_repeat']:.2f})")
    print(f"  primary blocks per read: (b)/(a) {x['primary_blocks_b_over_a']:.2f}, (c)/(a) "
          f"{x['primary_blocks_c_over_a']:.2f}; reads/s (b)/(a) {x['reads_per_s_b_over_a']:.2f}, "
          f"(c)/(a) {x['reads_per_s_c_over_a']:.2f}")


def print_placement(R, standby_name):
    P = R["params"]
    print(f"placement with the standby synchronous ({standby_name}): fulltime bench-placement "
          f"{P['place_connections']} x {P['place_inflight']} in flight, closed loop, "
          f"{P['place_duration_s']:g} s (first second out); medians of {P['repeat']} run(s)")
    print(f"  {'synchronous_commit, read_url':32} {'placed/s':>8} {'p50 ms':>7} {'p99 ms':>7} | "
          f"vs baseline: {'rate':>5} {'p50':>5} {'p99':>5} | per placement: {'primary us':>10} "
          f"{'standby us':>10} {'commits':>7} {'WAL B':>6}")
    for cfg, label in PLACE_CONFIGS.items():
        m, v = R["placement"][cfg]["median"], R["placement"][cfg]["vs_baseline"]
        print(f"  {label:32} {m['placements_per_s']:8.0f} {m['latency_ms_p50']:7.2f} "
              f"{m['latency_ms_p99']:7.2f} | {'':12} {v['placements_per_s']:5.2f} "
              f"{v['latency_ms_p50']:5.2f} {v['latency_ms_p99']:5.2f} | {'':15}"
              f"{m['primary_cpu_us_per_placement']:10.0f} {m['standby_cpu_us_per_placement']:10.0f} "
              f"{m['primary_commits_per_placement']:7.3f} {m['primary_wal_bytes_per_placement']:6.0f}")
    for cfg, label in PLACE_CONFIGS.items():
        runs = R["placement"][cfg]["runs"]
        print(f"    {label}: " + run_figures(runs, ("placements/s per run", "placements_per_s", ".0f"),
                                          ("p99", "latency_ms_p99", ".1f"),
                                          ("lock timeouts", "lock_timeouts_total", ".0f"),
                                          ("rollbacks", "primary_rollbacks", ""),
                                          ("rest of the machine, cores", "rest_cores", ".2f")))


def print_end(R, per_run, distinct):
    P, problems = R["params"], R["problems"]
    print(f"warnings and errors in the engine's logs: {sum(per_run.values())}"
          + (f" ({json.dumps(per_run, sort_keys=True)})" if per_run else ""))
    for message, count in distinct.most_common(10):
        print(f"  {count:6} x {message}")
    print(f"elapsed: {P['elapsed_s']} s")
    for p in problems:
        print(f"PROBLEM: {p}")
    print("json: " + json.dumps(R, separators=(",", ":"), sort_keys=True))
    return 1 if problems else 0



def report(P, setup, results, problems, work_dir, standby_name):
    """Prints everything; returns 1 when a run had problems."""
    R, per_run, distinct = figures(P, setup, results, problems, work_dir)
    print_reads(R)
    print()
    print_placement(R, standby_name)
    print()
    return print_end(R, per_run, distinct)
