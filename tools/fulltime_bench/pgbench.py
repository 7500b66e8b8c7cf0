"""pgbench: running it, and reading its report and its per-transaction logs (-l).

A log line is "client_id transaction_no time script_no time_epoch time_us [schedule_lag]":
`time` is the transaction's latency in microseconds (with --rate, counted from its scheduled
start, so its lag is included) or "skipped"; time_epoch and time_us say when it ended; the
schedule lag (with --rate) how late it started against its schedule, in microseconds."""

import collections
import glob
import os
import subprocess

Transaction = collections.namedtuple("Transaction", "client latency_us end_s end_us lag_us")


def parse_log_line(line):
    """A Transaction of one log line, or None for a skipped or short one (lag_us is None when
    the line has no schedule lag)."""
    f = line.split()
    if len(f) < 6 or f[2] == "skipped":
        return None
    return Transaction(int(f[0]), int(f[2]), int(f[4]), int(f[5]),
                       int(f[6]) if len(f) >= 7 else None)


def transactions(log_dir):
    """Every transaction logged in `log_dir` (pgbench_log.* files, one per thread)."""
    out = []
    for path in glob.glob(os.path.join(log_dir, "pgbench_log.*")):
        with open(path) as f:
            out.extend(t for t in map(parse_log_line, f) if t is not None)
    return out


def report(text):
    """The figures of pgbench's closing report: tps, latency_avg_ms, clients, transactions,
    failed (those it printed)."""
    r = {}
    for line in text.splitlines():
        if line.startswith("tps ") and "tps" not in r:
            r["tps"] = float(line.split("=")[1].split()[0])
        elif line.startswith("latency average ") and "latency_avg_ms" not in r:
            r["latency_avg_ms"] = float(line.split("=")[1].split()[0])
        elif line.startswith("number of clients:"):
            r["clients"] = int(line.split(":")[1])
        elif line.startswith("number of transactions actually processed:"):
            r["transactions"] = int(line.split(":")[1].split("/")[0])
        elif line.startswith("number of failed transactions:"):
            r["failed"] = int(line.split(":")[1].split()[0])
    return r


def command(url, script, clients, duration_s, rate=None, log=False, prepared=False,
            variables=None, threads=2):
    """pgbench's command line: no vacuum, `clients` over `threads` threads for `duration_s`,
    at `rate` transactions/s (open loop) if given, -l with `log`, -M prepared with `prepared`,
    -D NAME=VALUE for each of `variables`."""
    args = ["pgbench", "-n"] + (["-M", "prepared"] if prepared else [])
    args += ["-c", str(clients), "-j", str(threads), "-T", str(duration_s)]
    for k, v in (variables or {}).items():
        args += ["-D", f"{k}={v}"]
    args += ["-f", script]
    if rate is not None:
        args += ["-R", str(rate)]
    if log:
        args += ["-l"]
    return args + [url]


def start(args, log_dir, out_path):
    """Starts pgbench in `log_dir` (where -l writes its logs), its report in `out_path`."""
    os.makedirs(log_dir, exist_ok=True)
    with open(out_path, "w") as out:
        return subprocess.Popen(args, cwd=log_dir, stdout=out, stderr=subprocess.STDOUT)
