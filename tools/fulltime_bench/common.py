"""What every benchmark shares: the repository's paths, messages as scripts/lib.sh prints them
(log, die), the build, the shipped configuration, work directories and the argument parser."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# The e2e tests' modules the benchmarks reuse (harness: the engine's launcher; money: the money
# invariants in plain SQL) are imported by name from there.
E2E_DIR = os.path.join(ROOT, "tests", "e2e")
if E2E_DIR not in sys.path:
    sys.path.insert(0, E2E_DIR)
BUILD_DIR = os.environ.get("FULLTIME_BUILD_DIR") or os.path.join(ROOT, "build")
BINARY = os.path.join(BUILD_DIR, "fulltime")
PG_BIN = os.environ.get("PG_BIN") or "/usr/lib/postgresql/15/bin"
CONFIG = os.path.join(ROOT, "config", "fulltime.json")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(message):
    """A progress line on stderr, "[HH:MM:SS] message" (scripts/lib.sh's log)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def die(message):
    """Ends the benchmark with status 1 after "error: message" on stderr (scripts/lib.sh's die);
    a SystemExit, so that every `finally` cleans up."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def cores():
    """The cores this process may run on (what `nproc` prints)."""
    return len(os.sched_getaffinity(0))


def build():
    """Builds the engine (scripts/build, its output on stderr); a failed build ends the run with
    the build's status."""
    rc = subprocess.run([os.path.join(ROOT, "scripts", "build")], stdout=sys.stderr).returncode
    if rc:
        raise SystemExit(rc)


def shipped(path):
    """The value config/fulltime.json ships for a dotted path, e.g. "settlement.lanes"."""
    with open(CONFIG) as f:
        value = json.load(f)
    for key in path.split("."):
        value = value[key]
    return value


def positive_int(text):
    """argparse type: a positive integer written as digits, as the scripts always required."""
    if not re.fullmatch(r"[1-9][0-9]*", text):
        raise argparse.ArgumentTypeError(f"takes a positive integer, got '{text}'")
    return int(text)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written; each option's default after its help, when it has one."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "default" not in text:
            text += (" " if text else "") + "(default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """argparse with the scripts' manners: the module's docstring as --help, no abbreviated
    options, and status 1 (not 2) with "error: ..." for a wrong command line."""

    def __init__(self, prog, doc, **kwargs):
        super().__init__(prog=prog, description=doc, allow_abbrev=False,
                         formatter_class=HelpFormatter, **kwargs)

    def error(self, message):
        self.print_usage(sys.stderr)
        die(message)


class WorkDir:
    """A temporary directory for a run's files, removed at the end unless BENCH_KEEP=1 (then its
    path is logged)."""

    def __init__(self, prefix="fulltime-bench."):
        self.path = tempfile.mkdtemp(prefix=prefix, dir="/tmp")

    def __call__(self, *names):
        return os.path.join(self.path, *names)

    def remove(self):
        if os.environ.get("BENCH_KEEP", "0") == "1":
            log(f"kept {self.path}")
        else:
            shutil.rmtree(self.path, ignore_errors=True)


def line_buffered():
    """Every printed line reaches a pipe (tee, a caller's file) as it is printed."""
    sys.stdout.reconfigure(line_buffering=True)
