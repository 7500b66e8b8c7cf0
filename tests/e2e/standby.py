"""Streaming hot standbys of the test cluster, for tests of reads routed to a replica.

A `Standby` is made by `scripts/test-db --standby-of` (scripts/lib.sh, start_throwaway_standby:
a `pg_basebackup -R` with the primary's settings, hot_standby_feedback off,
max_standby_streaming_delay 1s) in a directory inside the throwaway cluster's
(FULLTIME_TEST_PG_DIR, which scripts/test exports and scripts/test-db prints), with a Unix socket
of its own there. Stopping the cluster stops its standbys too, so a test process that is killed
leaves no server behind once scripts/test cleans up; a test process that merely fails destroys
its standbys itself (the class cleanup the test registers, else at exit).

One standby per test class is the intended use (creating one takes a second or two):

    @classmethod
    def setUpClass(cls):
        cls.standby = Standby(slot=True)
        cls.addClassCleanup(cls.standby.destroy)

A standby copies the whole cluster, so it also replays the databases of the tests that run
beside it (ctest runs the e2e modules in parallel); its pauses and stops concern no other test,
and what it reports on the primary (`replication_rows`) is filtered to its own name.

LSNs are PostgreSQL's text form ("0/3000148") and are compared in SQL."""

import atexit
import collections
import os
import re
import subprocess

import psycopg

from harness import PG_BIN, as_pg_owner, test_database_url, wait_until

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TEST_DB = os.path.join(ROOT, "scripts", "test-db")
CREATE_TIMEOUT_S = 120
PG_CTL_TIMEOUT_S = 60

ReplicationRows = collections.namedtuple("ReplicationRows", "replication slots")
ReplicationRows.__doc__ = """The primary's rows about one standby: `replication` its
pg_stat_replication rows (one while it streams, none while it is away), `slots` its
pg_replication_slots rows (one when it has a slot), each a dict by column name."""

# Standbys not yet destroyed, destroyed at exit if their test did not.
_living = set()


def _rows(url, query, *args):
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(query, args)
        if not cur.description:
            return []
        names = [c.name for c in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]


def _value(url, query, *args):
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, args).fetchone()[0]


class Standby:
    """A streaming hot standby of the test cluster, running once made.

    `name` is its application_name on the primary and, with `slot`, its slot's name; `dir` its
    directory (data/, server.log, its socket)."""

    def __init__(self, slot=False, settings=None):
        """Makes and starts a standby and returns once it accepts read-only sessions. `slot`:
        stream through a physical replication slot (pg_replication_slots then shows its
        wal_status and safe_wal_size). `settings`: more server settings, {name: value}
        (e.g. {"hot_standby_feedback": "on"})."""
        pg_dir = os.environ.get("FULLTIME_TEST_PG_DIR")
        if not pg_dir:
            raise AssertionError("FULLTIME_TEST_PG_DIR is not set: a standby needs the throwaway "
                                 "cluster of scripts/test or scripts/test-db")
        command = [TEST_DB, "--standby-of", pg_dir] + (["--slot"] if slot else [])
        for name, value in (settings or {}).items():
            command += ["--set", f"{name}={value}"]
        made = subprocess.run(command, capture_output=True, text=True, timeout=CREATE_TIMEOUT_S)
        if made.returncode != 0:
            raise AssertionError("could not make a standby:\n" + made.stderr)
        values = dict(re.findall(r"^export (\w+)='([^']*)'$", made.stdout, re.M))
        self.dir = values["FULLTIME_TEST_STANDBY_DIR"]
        self.name = values["FULLTIME_TEST_STANDBY_NAME"]
        self.slot = self.name if slot else None
        self.primary_url = test_database_url()
        self._url = values["FULLTIME_TEST_STANDBY_URL"]
        # The standby's superuser: pausing and resuming replay is not the engine role's to do.
        self._admin_url = values["FULLTIME_TEST_STANDBY_ADMIN_URL"]
        self._data = os.path.join(self.dir, "data")
        _living.add(self)

    def url(self, dbname=None):
        """Returns the standby's libpq conninfo for `dbname`, by default the database of
        FULLTIME_TEST_DATABASE_URL (a test's scratch database: pass its name)."""
        if dbname is None:
            dbname = psycopg.conninfo.conninfo_to_dict(self.primary_url).get("dbname", "postgres")
        return psycopg.conninfo.make_conninfo(self._url, dbname=dbname)

    def is_running(self):
        """Returns whether the standby's server runs (its postmaster.pid is there)."""
        return os.path.exists(os.path.join(self._data, "postmaster.pid"))

    # On the standby.

    def replay_lsn(self):
        """Returns the last WAL position the standby replayed (pg_last_wal_replay_lsn)."""
        return _value(self._url, "SELECT pg_last_wal_replay_lsn()::text")

    def received_lsn(self):
        """Returns the last WAL position the standby received and flushed
        (pg_last_wal_receive_lsn): past replay_lsn() while replay is paused or behind."""
        return _value(self._url, "SELECT pg_last_wal_receive_lsn()::text")

    def pause_replay(self, timeout_s=30):
        """Pauses WAL replay (pg_wal_replay_pause) and returns once it is paused: the standby
        still receives WAL, its sessions see nothing newer."""
        _value(self._admin_url, "SELECT pg_wal_replay_pause()")
        wait_until(lambda: _value(self._url, "SELECT pg_get_wal_replay_pause_state()") == "paused",
                   f"standby {self.name}: replay never paused", timeout_s)

    def resume_replay(self):
        """Resumes WAL replay (pg_wal_replay_resume)."""
        _value(self._admin_url, "SELECT pg_wal_replay_resume()")

    def wait_caught_up(self, lsn=None, timeout_s=30):
        """Returns once the standby has replayed up to `lsn` (by default the primary's
        current_lsn() now); fails after `timeout_s`, saying where replay is."""
        lsn = lsn or self.current_lsn()
        try:
            wait_until(lambda: _value(self._url, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                      lsn),
                       f"standby {self.name} did not replay up to {lsn}", timeout_s)
        except AssertionError as e:
            raise AssertionError(f"{e}: replayed {self.replay_lsn()}, received "
                                 f"{self.received_lsn()}, replay "
                                 + _value(self._url, "SELECT pg_get_wal_replay_pause_state()")) \
                from None

    def wait_received(self, lsn, timeout_s=30):
        """Returns once the standby has received WAL up to `lsn` (replayed or not)."""
        wait_until(lambda: _value(self._url, "SELECT pg_last_wal_receive_lsn() >= %s::pg_lsn",
                                  lsn),
                   f"standby {self.name} did not receive WAL up to {lsn}", timeout_s)

    # Its server.

    def stop(self):
        """Stops the standby's server (fast mode: sessions are ended); its data stays."""
        self._pg_ctl("stop", "-m", "fast")

    def start(self):
        """Starts the stopped standby again; returns once it accepts read-only sessions. It
        streams from where it stopped (from its slot's position, with a slot)."""
        self._pg_ctl("start", "-l", os.path.join(self.dir, "server.log"))
        if not _value(self._url, "SELECT pg_is_in_recovery()"):
            raise AssertionError(f"standby {self.name} started out of recovery")

    def destroy(self):
        """Stops the standby, drops its slot and removes its directory; does nothing the second
        time."""
        if self not in _living:
            return
        _living.discard(self)
        subprocess.run([TEST_DB, "--stop-standby", self.dir], check=True, capture_output=True,
                       timeout=PG_CTL_TIMEOUT_S * 2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def _pg_ctl(self, *args):
        # No pipes: a started server would inherit them (its log is server.log).
        done = subprocess.run(as_pg_owner([os.path.join(PG_BIN, "pg_ctl"), "-D", self._data,
                                            "-w", "-t", str(PG_CTL_TIMEOUT_S), *args]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=PG_CTL_TIMEOUT_S + 10)
        if done.returncode != 0:
            with open(os.path.join(self.dir, "server.log")) as log:
                tail = log.readlines()[-20:]
            raise AssertionError(f"pg_ctl {args[0]} of standby {self.name} failed:\n"
                                 + "".join(tail))

    # On the primary.

    def current_lsn(self):
        """Returns the primary's WAL insert position (pg_current_wal_insert_lsn): past the
        commit of every transaction committed before the call. Not pg_current_wal_lsn, the
        write position: with synchronous_commit off (the test cluster's) a commit can be
        beyond it for up to wal_writer_delay."""
        return _value(self.primary_url, "SELECT pg_current_wal_insert_lsn()::text")

    def replication_rows(self):
        """Returns the primary's rows about this standby (ReplicationRows)."""
        return ReplicationRows(
            _rows(self.primary_url, "SELECT * FROM pg_stat_replication WHERE application_name = %s",
                  self.name),
            _rows(self.primary_url, "SELECT * FROM pg_replication_slots WHERE slot_name = %s",
                  self.name))


@atexit.register
def _destroy_the_living():
    for standby in list(_living):
        try:
            standby.destroy()
        except Exception:  # noqa: BLE001 - at exit, the cluster's own cleanup is the fallback
            pass
