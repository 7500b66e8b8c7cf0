"""The throwaway PostgreSQL 15 a benchmark runs against, and the CPU it and other processes
use.

The cluster is scripts/lib.sh's (start_throwaway_pg, through scripts/test-db): one definition of
its settings for the tests and the benchmarks. `durable` keeps PostgreSQL's durable defaults
(fsync on), as every benchmark but the soak runs it. CPU is counted in clock ticks from /proc,
as the benchmarks always have: the cluster's postmaster with what its exited children used (a
pgbench run's backends are gone when it ends) and its live children; a process's own; the
whole machine's busy time."""

import os
import subprocess

import psycopg

from . import common

TEST_DB = os.path.join(common.ROOT, "scripts", "test-db")


def _exports(text):
    """{NAME: value} of the `export NAME='value'` lines scripts/test-db prints."""
    out = {}
    for line in text.splitlines():
        if line.startswith("export ") and "=" in line:
            name, value = line[len("export "):].split("=", 1)
            out[name] = value.strip("'")
    return out


class Cluster:
    """A running throwaway cluster: `dir` (its socket and data/), `url` (the engine's role,
    `fulltime`, on database postgres) and `admin_url` (the superuser)."""

    def __init__(self, durable=True):
        made = subprocess.run([TEST_DB] + (["--durable"] if durable else []),
                              stdout=subprocess.PIPE, text=True)
        if made.returncode:
            raise SystemExit(made.returncode)  # scripts/test-db said why on stderr
        env = _exports(made.stdout)
        self.dir = env["FULLTIME_TEST_PG_DIR"]
        self.url = env["FULLTIME_TEST_DATABASE_URL"]
        self.admin_url = env["FULLTIME_TEST_ADMIN_URL"]
        self.standby = None

    def url_of(self, dbname, admin=False):
        """The URL of another database of the cluster, as the engine's role or the superuser."""
        return (self.admin_url if admin else self.url).replace("dbname=postgres",
                                                               f"dbname={dbname}")

    def grant_benchmark_privileges(self):
        """Benchmarks make and drop their own databases and checkpoint before each run as the
        role they measure: the throwaway cluster's `fulltime` may create databases and run
        CHECKPOINT (pg_checkpoint). The tests keep the role docs/operations.md asks for."""
        try:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute("ALTER ROLE fulltime CREATEDB")
                conn.execute("GRANT pg_checkpoint TO fulltime")
        except psycopg.Error as e:
            common.die(f"could not grant the benchmark's privileges to fulltime: {e}")

    def start_standby(self, slot=True):
        """A streaming hot standby inside the cluster's directory (scripts/lib.sh,
        start_throwaway_standby); sets `standby` to its exports: FULLTIME_TEST_STANDBY_URL,
        _ADMIN_URL, _DIR and _NAME."""
        made = subprocess.run([TEST_DB, "--standby-of", self.dir] + (["--slot"] if slot else []),
                              stdout=subprocess.PIPE, text=True)
        if made.returncode:
            raise SystemExit(made.returncode)
        self.standby = _exports(made.stdout)
        return self.standby

    def postmaster_pid(self):
        with open(os.path.join(self.dir, "data", "postmaster.pid")) as f:
            return int(f.readline())

    def children(self):
        """The postmaster's live children (its backends and auxiliary processes)."""
        return children_of(self.postmaster_pid())

    def ticks(self):
        """CPU ticks of the cluster: the postmaster's own and what it reaped of its exited
        children, plus its live children's."""
        return data_dir_ticks(os.path.join(self.dir, "data"))

    def stop(self):
        """Stops the cluster and its standbys (immediate mode) and removes its directory."""
        subprocess.run([TEST_DB, "--stop", self.dir])


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command name: index 0 is field 3 (the state), so
    field F (man proc) is at index F - 3."""
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    return text[text.rindex(")") + 2:].split()


def process_ticks(pid, fields=(14, 15)):
    """The sum of these /proc/PID/stat fields (14, 15: user and system; 16, 17 add its reaped
    children's); 0 once the process is gone."""
    try:
        s = stat_fields(pid)
    except (OSError, ValueError):
        return 0
    return sum(int(s[f - 3]) for f in fields)


def pids_ticks(pids):
    """The processes' user and system ticks, summed."""
    return sum(process_ticks(p) for p in pids)


def children_of(parent):
    """The live processes whose parent is `parent` (what `pgrep -P` lists)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(stat_fields(entry)[1]) == parent:
                    out.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue  # ended meanwhile
    return out


def data_dir_ticks(data_dir):
    """CPU ticks of the cluster whose data directory this is (a primary's or a standby's)."""
    with open(os.path.join(data_dir, "postmaster.pid")) as f:
        postmaster = int(f.readline())
    total = process_ticks(postmaster, (14, 15, 16, 17))
    return total + pids_ticks(children_of(postmaster))


def machine_ticks():
    """The whole machine's busy ticks: user, nice, system, irq and softirq of /proc/stat."""
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    return sum(int(cpu[i]) for i in (1, 2, 3, 6, 7))


def own_children_ticks():
    """This process's reaped children's user and system ticks (a pgbench run, a load
    generator, once waited for)."""
    return process_ticks("self", (16, 17))
