"""Backup and restore (docs/operations.md, "Backups" and "Restore"): a base backup taken while
bettors place and a market settles, restored to a new cluster, passes `fulltime audit` and holds
every bet and balance; a restore to a named point in between holds exactly the bets committed
before that point.

The shared test server does not archive WAL, so this module runs a primary cluster of its own
(a Unix socket in a temporary directory, `wal_level` replica, `archive_mode` on, an
`archive_command` that copies each finished segment into an archive directory and refuses to
overwrite one), a `fulltime serve` on it, and ten bettors placing one bet at a time each over
WebSocket from a thread of their own. The night, in order:

1. bets on market 100; once 300 are placed, `pg_basebackup -X stream -c fast` starts, and while
   it copies, the bettors move to market 200 and market 100's result arrives, so its settlement
   batches (25 bets each, paced) run under the copy too;
2. once 200 more bets are placed after the copy ended and market 100 is settled, a correction
   of its result (every bet reversed and settled again, in batches), and as soon as its first
   batch committed, a named restore point (`pg_create_restore_point`) between two reads of the
   committed bets and settlement rows: so the point most likely falls inside the correction;
3. once the correction is applied and 200 more bets are placed, the bettors stop, the engine
   stops, the final state is read, and `pg_switch_wal()` closes the last segment; the test waits
   until `pg_stat_archiver` shows it archived.

`-X stream` rather than `-X none`: the backup then carries the WAL from its start to its end,
so it is consistent by itself (pg_verifybackup checks it, WAL included), and a lost archive
would cost the minutes after the backup, not the backup. The archive is what takes a restore
past the backup's end.

A restore is a copy of the backup in a new directory, `restore_command` reading the archive,
`recovery.signal`, and `archive_mode` off: a restored cluster that archived into the archive it
restores from would put its new timeline's history file there, and the next restore (which
follows the latest timeline) would follow it. Then:

- to the end of the archive (no target: recovery ends when `restore_command` finds no next
  segment, and the cluster promotes): every table equals the primary's at the end, row for row;
  every acknowledged bet is there with its account, selection, stake and odds; the audit passes;
  and `fulltime serve` on it replays an acknowledged key as the same bet and gives a new one an id
  never used before;
- to the restore point (`recovery_target_name`, `recovery_target_action = 'promote'`): the bets
  and settlement rows there include every one committed before the first read and none committed
  after the second (which waits until every transaction running at the restore point ended, so
  a commit that preceded the point in the WAL is visible to it); each bet is as the primary has
  it; the audit passes on the half-corrected market.

Every cluster is stopped (immediate mode) and removed in the class cleanup, also when a step
fails, and stopped at exit when the run is interrupted. The run takes about 30 s on the two-core
machine, about 80 s with two more running beside it."""

import asyncio
import atexit
import decimal
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

import psycopg
import psycopg.sql

import websockets.client
import websockets.exceptions

from fixtures import HOME_WINS, MARKET, OTHER_MARKET
from harness import (PG_BIN, Engine, as_pg_owner, cli_token, engine_env, post_ok,
                     wait_until)
from money import assert_money_invariants

PG_CTL_TIMEOUT_S = 60
ACCOUNTS = list(range(1, 11))
DEPOSIT = "10000.00"
STAKES = ["1.00", "2.35", "0.50", "4.10"]
BEFORE_BACKUP = 300      # bets placed before the backup starts
AFTER_BACKUP = 200       # bets placed after it ended, before the restore point
AFTER_RESTORE_POINT = 200
RESTORE_POINT = "fulltime-backup-test"
# A correction of market 100's result (HOME_WINS): settled again under version 2.
AWAY_WINS = {"type": "result", "market_id": 100, "seq": 2, "event_key": "final-r2",
             "outcomes": [{"selection_id": 1002, "result": "win"},
                          {"selection_id": 1001, "result": "lose"}]}
ENGINE_ENV = {"FULLTIME_SETTLEMENT_BATCH_BETS_MAX": "25",
              "FULLTIME_SETTLEMENT_DUTY_PERCENT": "50"}
# The primary's settings, in its postgresql.conf (so the base backup carries them, as it
# would an operator's; a restore overrides what must differ).
PRIMARY_SETTINGS = {
    "listen_addresses": "",
    "port": "5432",
    "fsync": "off",                 # a test cluster: nothing here survives a crash of the machine
    "wal_level": "replica",
    "archive_mode": "on",
    "archive_command": "test ! -f '{archive}/%f' && cp %p '{archive}/%f'",
    "max_wal_senders": "4",         # pg_basebackup -X stream takes two
    "idle_in_transaction_session_timeout": "60s",   # the engine's start-up check wants both
    "log_lock_waits": "on",
}


# Helpers that would belong in harness.py (or scripts/lib.sh): a cluster of the test's own.

def make_pg_dir(path):
    """A directory the server's user owns."""
    os.makedirs(path, mode=0o755)
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")
    return path


def append_settings(data, settings, comment):
    """Appends `settings` ({name: value}) to data/postgresql.conf: later lines win."""
    with open(os.path.join(data, "postgresql.conf"), "a") as conf:
        conf.write(f"\n# {comment} (tests/e2e/test_backup.py)\n")
        for name, value in settings.items():
            conf.write("%s = '%s'\n" % (name, value.replace("'", "''")))


# Every cluster started and the directory holding them, for the exit handler at the end of
# this file: the class cleanup stops and removes them, but does not run when the test process
# is interrupted.
_started = []
_scratch = []


class Cluster:
    """A PostgreSQL 15 cluster in `dir`: data/, server.log, and its Unix socket in `dir`."""

    def __init__(self, dir):
        self.dir = make_pg_dir(dir)
        self.data = os.path.join(dir, "data")

    def url(self, dbname="fulltime"):
        return f"host={self.dir} port=5432 user=fulltime dbname={dbname}"

    def initdb(self):
        done = subprocess.run(as_pg_owner([os.path.join(PG_BIN, "initdb"), "-D", self.data,
                                           "-U", "fulltime", "--auth=trust", "--encoding=UTF8",
                                           "--locale=C.UTF-8", "--no-sync"]),
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError("initdb failed:\n" + done.stdout + done.stderr)

    def start(self):
        _started.append(self)
        # No pipes: the server would inherit them (its log is server.log).
        done = subprocess.run(as_pg_owner([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data,
                                           "-l", os.path.join(self.dir, "server.log"), "-w",
                                           "-t", str(PG_CTL_TIMEOUT_S), "start"]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=PG_CTL_TIMEOUT_S + 10)
        if done.returncode != 0:
            raise AssertionError(f"the cluster in {self.dir} did not start:\n" + self.log_tail())

    def stop(self):
        """Stops the server (immediate mode: nothing in it is kept) if it runs."""
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            subprocess.run(as_pg_owner([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data,
                                        "-m", "immediate", "-w", "stop"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=PG_CTL_TIMEOUT_S + 10)

    def value(self, query, *args, dbname="postgres"):
        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            cur = conn.execute(query, args)
            return cur.fetchone()[0] if cur.description else None

    def log_tail(self, lines=30):
        try:
            with open(os.path.join(self.dir, "server.log")) as log:
                return "".join(log.readlines()[-lines:])
        except OSError:
            return "(no server.log)"


def state(url):
    """What a restore must reproduce, read in one snapshot: the bets, the balances, and a
    fingerprint of every table (its row count and the md5 of its rows as text, sorted)."""
    with psycopg.connect(url) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        bets = {row[0]: row[1:] for row in conn.execute(
            "SELECT bet_id, account_id, market_id, selection_id, stake, odds, idempotency_key "
            "FROM bets")}
        balances = {row[0]: row[1:] for row in conn.execute(
            "SELECT account_id, available, reserved, owed FROM accounts")}
        tables = [r[0] for r in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition "
            "ORDER BY 1")]
        fingerprints = {}
        for table in tables:
            fingerprints[table] = conn.execute(psycopg.sql.SQL(
                "SELECT count(*), md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), "
                "'')) FROM {} t").format(psycopg.sql.Identifier(table))).fetchone()
    return bets, balances, fingerprints


def minor(amount, places):
    """"2.35" in minor units of 10^-places (money 2, odds 4), as the schema stores it."""
    return int(decimal.Decimal(amount).scaleb(places))


class Bettors:
    """Bettors placing bets one at a time each, on a WebSocket each, from a thread of their own
    until stopped: a `busy` is retried with the same key (docs/protocol.md), a key refused
    `market_suspended` (its market took a result meanwhile) makes no bet, anything else is a
    failure. `placed` maps each placed key to its acknowledged bet, `requests` to its message;
    `selections` (a list of (selection_id, odds)) says where the next new key goes."""

    def __init__(self, engine, tokens, selections):
        self.engine = engine
        self.tokens = tokens
        self.selections = selections
        self.placed = {}
        self.requests = {}
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._all()), daemon=True)
        self._thread.start()

    def count(self):
        """Bets placed so far; raises once a bettor failed."""
        if self.errors:
            raise AssertionError("a bettor failed: " + self.errors[0])
        return len(self.placed)

    def wait_for(self, count, what, timeout_s=60):
        wait_until(lambda: self.count() >= count, f"{what}: {len(self.placed)} bets placed",
                   timeout_s, 0.02)

    def stop(self):
        """Stops the bettors once each has an answer for its last key."""
        self._stop.set()
        self._thread.join(120)
        if self._thread.is_alive():
            raise AssertionError("the bettors did not stop")
        self.count()

    async def _all(self):
        await asyncio.gather(*(self._bettor(a, t) for a, t in self.tokens.items()))

    async def _bettor(self, account, token):
        # No reconnection: nothing in this test cuts a connection, so a lost one is a failure.
        try:
            async with websockets.client.connect(
                    self.engine.ws_url("/v1/bets"),
                    extra_headers={"Authorization": "Bearer " + token}) as ws:
                i = 0
                request = None
                while True:
                    if request is None:
                        if self._stop.is_set() or self.errors:
                            return
                        selection, odds = self.selections[i % len(self.selections)]
                        key = f"bk-{account}-{i}"
                        request = {"type": "place", "id": key, "idempotency_key": key,
                                   "selection_id": selection, "odds": odds,
                                   "stake": STAKES[i % len(STAKES)]}
                        i += 1
                    await ws.send(json.dumps(request))
                    while True:
                        m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                        if m.get("id") == request["id"]:
                            break
                    if m["type"] == "placed":
                        self.requests[request["idempotency_key"]] = request
                        self.placed[request["idempotency_key"]] = m["bet"]
                        request = None
                    elif m["type"] == "rejected" and m.get("code") == "busy":
                        continue  # the same key again
                    elif m["type"] == "rejected" and m.get("code") == "market_suspended":
                        request = None
                    else:
                        self.errors.append(f"account {account}: {request} answered {m}")
                        return
        except TimeoutError:  # an OSError too: first
            self.errors.append(f"account {account}: no answer within 60 s")
        except (websockets.exceptions.ConnectionClosed, OSError) as e:
            self.errors.append(f"account {account}: connection lost: {e!r}")


class BackupRestoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fulltime-backup-")
        _scratch.append(cls.dir)
        os.chmod(cls.dir, 0o755)
        if os.geteuid() == 0:
            shutil.chown(cls.dir, "postgres", "postgres")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        cls.archive = make_pg_dir(os.path.join(cls.dir, "archive"))
        cls.backup = os.path.join(cls.dir, "backup")
        cls.clusters = []
        cls.addClassCleanup(cls.stop_clusters)

        cls.primary = cls.cluster("primary")
        cls.primary.initdb()
        append_settings(cls.primary.data, {
            **PRIMARY_SETTINGS, "unix_socket_directories": cls.primary.dir,
            "archive_command": PRIMARY_SETTINGS["archive_command"].format(archive=cls.archive)},
            "the primary")
        cls.primary.start()
        cls.primary.value("CREATE DATABASE fulltime")

        state_dir = make_pg_dir(os.path.join(cls.dir, "state"))
        cls.env = engine_env({"FULLTIME_DATABASE_URL": cls.primary.url(), **ENGINE_ENV},
                             state_dir=state_dir)
        cls.night()

    @classmethod
    def cluster(cls, name):
        cluster = Cluster(os.path.join(cls.dir, name))
        cls.clusters.append(cluster)
        return cluster

    @classmethod
    def stop_clusters(cls):
        for cluster in reversed(cls.clusters):
            cluster.stop()

    @classmethod
    def night(cls):
        """Bets and a settlement with a base backup and a restore point in the middle; leaves
        the backup in cls.backup, the archive complete, and what the restores are checked
        against in cls.final, cls.placed, cls.requests, cls.before and cls.after."""
        engine = Engine(cls.env)
        try:
            engine.wait_ready(60)
            admin, producer = (cli_token(cls.env, "admin", "backup-test"),
                               cli_token(cls.env, "producer", "feed-1"))
            post_ok(engine, "/v1/feed", MARKET, producer)
            post_ok(engine, "/v1/feed", OTHER_MARKET, producer)
            for a in ACCOUNTS:
                post_ok(engine, "/v1/accounts", {"account_id": a, "currency": "EUR"}, admin)
                post_ok(engine, f"/v1/accounts/{a}/deposits", {"amount": DEPOSIT, "key": f"d-{a}"},
                     admin)
            tokens = {a: cli_token(cls.env, "account", str(a)) for a in ACCOUNTS}
            bettors = Bettors(engine, tokens, [(1001, "2.50"), (1002, "3.10")])
            try:
                bettors.wait_for(BEFORE_BACKUP, "bets before the backup")
                backup = {}
                copy = threading.Thread(target=cls.base_backup, args=(backup,))
                at_start = bettors.count()
                copy.start()
                try:
                    bettors.selections = [(2001, "2.00")]
                    post_ok(engine, "/v1/feed", HOME_WINS, producer)
                finally:
                    copy.join(PG_CTL_TIMEOUT_S * 2)
                if copy.is_alive() or backup.get("status") != 0:
                    raise AssertionError("pg_basebackup failed: " + backup.get("log", "timeout"))
                at_end = bettors.count()
                # The backup against its manifest, and the WAL from its start to its end.
                verified = subprocess.run([os.path.join(PG_BIN, "pg_verifybackup"), cls.backup],
                                          capture_output=True, text=True, timeout=120)
                if verified.returncode != 0:
                    raise AssertionError("pg_verifybackup: " + verified.stdout + verified.stderr)
                if at_end <= at_start:
                    raise AssertionError("no bet was placed while the backup ran")

                bettors.wait_for(at_end + AFTER_BACKUP, "bets after the backup")
                with psycopg.connect(cls.primary.url(), autocommit=True) as conn:
                    def applied(seq):
                        return conn.execute(
                            "SELECT applied_seq >= %s FROM settlement_progress "
                            "WHERE market_id = 100", (seq,)).fetchone() == (True,)

                    def settlement_rows():
                        return conn.execute("SELECT count(*) FROM bet_settlements").fetchone()[0]

                    wait_until(lambda: applied(1),
                               "market 100 never settled:\n" + engine.log()[-3000:], 120)
                    # The correction's first batch, then the point: most likely in the middle
                    # of the correction (not required: each batch is one transaction).
                    settled = settlement_rows()
                    post_ok(engine, "/v1/feed", AWAY_WINS, producer)
                    wait_until(lambda: settlement_rows() > settled,
                               "the correction never started:\n" + engine.log()[-3000:], 120,
                               0.01)
                    cls.before, cls.after = cls.restore_point()

                    bettors.wait_for(len(cls.after[0]) + AFTER_RESTORE_POINT,
                                     "bets after the restore point")
                    wait_until(lambda: applied(2),
                               "market 100's correction never applied:\n"
                               + engine.log()[-3000:], 120)
            finally:
                bettors.stop()
        finally:
            code = engine.stop()
        if code != 0:
            raise AssertionError(f"the engine exited {code}:\n{engine.log()[-3000:]}")

        cls.placed, cls.requests = bettors.placed, bettors.requests
        cls.final = state(cls.primary.url())
        with psycopg.connect(cls.primary.url(), autocommit=True) as conn:
            segment = conn.execute("SELECT pg_walfile_name(pg_switch_wal())").fetchone()[0]

            def archived():
                last, failed = conn.execute(
                    "SELECT last_archived_wal, last_failed_wal FROM pg_stat_archiver").fetchone()
                if last is not None and last >= segment:
                    return True
                if failed is not None and failed >= segment:
                    raise AssertionError(f"archiving {failed} failed:\n"
                                         + cls.primary.log_tail())
                return False

            wait_until(archived, f"{segment} was not archived", 60, 0.05)

    @classmethod
    def base_backup(cls, result):
        done = subprocess.run(as_pg_owner([os.path.join(PG_BIN, "pg_basebackup"), "-D", cls.backup,
                                           "-X", "stream", "-c", "fast", "-N",
                                           "-d", cls.primary.url("postgres")]),
                              capture_output=True, text=True, timeout=PG_CTL_TIMEOUT_S * 2)
        result["status"], result["log"] = done.returncode, done.stdout + done.stderr

    @classmethod
    def restore_point(cls):
        """Creates the named restore point between two reads of the committed bets and
        settled bets ((bet ids, settled bet ids) each). The second read waits until every
        transaction that was running when the point was written has ended: one whose commit
        precedes the point in the WAL may not have been visible yet when the point was made."""
        read = ("SELECT (SELECT array_agg(bet_id) FROM bets), "
                "(SELECT array_agg(row(bet_id, version, kind)::text) FROM bet_settlements)")
        with psycopg.connect(cls.primary.url(), autocommit=True) as conn:
            before = conn.execute(read).fetchone()
            conn.execute("SELECT pg_create_restore_point(%s)", (RESTORE_POINT,))
            horizon = conn.execute(
                "SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()[0]
            wait_until(lambda: conn.execute(
                "SELECT pg_snapshot_xmin(pg_current_snapshot()) >= %s::xid8",
                (horizon,)).fetchone()[0], "transactions at the restore point never ended", 30,
                0.01)
            after = conn.execute(read).fetchone()
        return tuple(map(set, before)), tuple(map(set, after))

    def restore(self, name, recovery):
        """A new cluster from the base backup, recovering from the archive with the recovery
        settings `recovery`; returns it once recovery ended and it was promoted."""
        cluster = self.cluster(name)
        copied = subprocess.run(as_pg_owner(["cp", "-a", self.backup, cluster.data]),
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(copied.returncode, 0, copied.stderr)
        append_settings(cluster.data, {
            "unix_socket_directories": cluster.dir,
            "archive_mode": "off",
            "restore_command": f"cp '{self.archive}/%f' %p",
            **recovery}, "the restore")
        signal = os.path.join(cluster.data, "recovery.signal")
        open(signal, "w").close()
        if os.geteuid() == 0:
            shutil.chown(signal, "postgres", "postgres")
        cluster.start()
        wait_until(lambda: not cluster.value("SELECT pg_is_in_recovery()"),
                   f"{name}: recovery never ended:\n" + cluster.log_tail(), 120, 0.05)
        return cluster

    def assert_bets_as_acknowledged(self, bets, keys):
        """Each bet placed under `keys` is in `bets` ({bet_id: row}) as it was acknowledged."""
        for key in keys:
            bet = self.placed[key]
            self.assertIn(bet["bet_id"], bets, f"acknowledged bet {key} is missing")
            self.assertEqual(bets[bet["bet_id"]],
                             (bet["account_id"], bet["market_id"], bet["selection_id"],
                              minor(bet["stake"], 2), minor(bet["odds"], 4), key), key)

    def test_restore_to_the_end_of_the_archive(self):
        final_bets, final_balances, final_tables = self.final
        # The primary itself holds every acknowledged bet and nothing else.
        self.assertEqual(len(final_bets), len(self.placed))
        self.assert_bets_as_acknowledged(final_bets, self.placed)

        restored = self.restore("restored", {"recovery_target_timeline": "latest"})
        url = restored.url()
        bets, balances, tables = state(url)
        self.assertEqual(len(bets), len(final_bets))
        self.assert_bets_as_acknowledged(bets, self.placed)
        self.assertEqual(balances, final_balances)
        self.assertEqual(tables, final_tables)
        assert_money_invariants(self, url)

        # Reopened: a bettor's retry of an acknowledged key is the same bet, and a new bet
        # takes an id never issued before.
        env = dict(self.env, FULLTIME_DATABASE_URL=url)
        engine = Engine(env)
        try:
            engine.wait_ready(60)
            key = sorted(self.placed)[0]
            request = self.requests[key]
            account = self.placed[key]["account_id"]
            fresh = {"type": "place", "id": "new", "idempotency_key": "after-restore",
                     "selection_id": 2001, "stake": "1.00", "odds": "2.00"}

            async def retry_and_place():
                async with websockets.client.connect(
                        engine.ws_url("/v1/bets"),
                        extra_headers={"Authorization": "Bearer "
                                       + cli_token(env, "account", str(account))}) as ws:
                    answers = []
                    for message in (request, fresh):
                        await ws.send(json.dumps(message))
                        while True:  # past the pushes of settlements not pushed before
                            m = json.loads(await asyncio.wait_for(ws.recv(), 30))
                            if m.get("id") == message["id"]:
                                break
                        answers.append(m)
                    return answers

            replayed, placed = asyncio.run(retry_and_place())
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        self.assertEqual((replayed["type"], replayed.get("replayed")), ("placed", True), replayed)
        self.assertEqual(replayed["bet"], self.placed[key])
        self.assertEqual(placed["type"], "placed", placed)
        self.assertGreater(placed["bet"]["bet_id"], max(final_bets))
        assert_money_invariants(self, url)

    def test_restore_to_a_named_point(self):
        final_bets = self.final[0]
        restored = self.restore("point", {"recovery_target_name": RESTORE_POINT,
                                          "recovery_target_action": "promote"})
        url = restored.url()
        bets, _, _ = state(url)
        with psycopg.connect(url) as conn:
            settled = {r[0] for r in conn.execute(
                "SELECT row(bet_id, version, kind)::text FROM bet_settlements")}
        (bets_before, settled_before), (bets_after, settled_after) = self.before, self.after
        self.assertLessEqual(bets_before, set(bets), "bets committed before the point are missing")
        self.assertLessEqual(set(bets), bets_after, "bets committed after the point are there")
        self.assertLessEqual(settled_before, settled)
        self.assertLessEqual(settled, settled_after)
        self.assertLess(len(bets), len(final_bets), "the restore did not stop at the point")
        # Bets are never updated: each one there is as the primary has it at the end.
        self.assertEqual({b: final_bets.get(b) for b in bets}, bets)
        assert_money_invariants(self, url)


@atexit.register
def _stop_the_started():
    for cluster in _started:
        cluster.stop()
    for path in _scratch:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
