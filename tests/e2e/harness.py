"""Runs the real `fulltime` binary for end-to-end tests, talking to it only over its public
interfaces (HTTP, WebSocket, the command line), as clients not written here do.

Uses only Debian's python3 modules (run with /usr/bin/python3)."""

import asyncio
import copy
import faulthandler
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid

import psycopg
import websockets.client

BINARY = os.environ.get("FULLTIME_BINARY", os.path.join(os.path.dirname(__file__), "../../build/fulltime"))
STARTUP_TIMEOUT_S = 120

# ctest kills a test file that outlives its timeout (scripts/test: FULLTIME_TEST_TIMEOUT, 300 s)
# and shows only what it printed: every thread's stack, 20 s before, says where it was.
faulthandler.dump_traceback_later(max(30, int(os.environ.get("FULLTIME_TEST_TIMEOUT", "300")) - 20))


def test_database_url():
    url = os.environ.get("FULLTIME_TEST_DATABASE_URL")
    if not url:
        raise SystemExit("FULLTIME_TEST_DATABASE_URL is not set: run the tests with scripts/test")
    return url


def admin_database_url(dbname=None):
    """The test server's superuser (FULLTIME_TEST_ADMIN_URL; the test URL when unset), for what
    the engine's role may not do: create databases, replication slots, settings per database.
    On `dbname` when given."""
    url = os.environ.get("FULLTIME_TEST_ADMIN_URL") or test_database_url()
    return psycopg.conninfo.make_conninfo(url, dbname=dbname) if dbname else url


def admin_sql(query, *args, dbname=None):
    """Runs one statement as the test server's superuser (on `dbname` when given); returns its
    rows ([] when it has none)."""
    with psycopg.connect(admin_database_url(dbname), autocommit=True) as conn:
        cur = conn.execute(query, args)
        return cur.fetchall() if cur.description else []


def wait_until(probe, what, timeout_s=30, interval_s=0.1):
    """Returns probe()'s first truthy result, asking every `interval_s`; raises AssertionError
    with `what` once `timeout_s` has passed without one."""
    until = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= until:
            raise AssertionError(f"{what} (waited {timeout_s} s)")
        time.sleep(interval_s)


def engine_env(extra=None, state_dir=None):
    """The environment for a child `fulltime`: no FULLTIME_* from the caller but the test ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FULLTIME_") or k.startswith("FULLTIME_TEST_")}
    # Nor systemd's, should the tests themselves run in a unit: the engine reads them
    # (app/commands/systemd.cpp, core/log.cpp) and test_service.py sets them on purpose.
    for name in ("INVOCATION_ID", "NOTIFY_SOCKET", "JOURNAL_STREAM", "CREDENTIALS_DIRECTORY"):
        env.pop(name, None)
    env["FULLTIME_LISTEN"] = "127.0.0.1:0"
    env["FULLTIME_STATE_DIR"] = state_dir or tempfile.mkdtemp(prefix="fulltime-e2e-")
    env["FULLTIME_TOKEN_SECRET"] = "e2e-secret-0123456789abcdef"
    env.update(extra or {})
    return env


# The migrated template the tests copy (template_database.py makes it; CTest's fixture
# pg_template runs that first). The C++ tests name it too: tests/support/pg_support.hpp.
TEMPLATE_DATABASE = "fulltime_test_template"


def template_ready():
    """True when the migrated template exists (CTest made it before the pg tests)."""
    return bool(admin_sql("SELECT 1 FROM pg_database WHERE datname = %s AND datistemplate",
                          TEMPLATE_DATABASE))


def scratch_database(migrated=False):
    """Creates a database on the test server, made by the superuser and owned by the engine's
    role (as docs/operations.md sets one up); returns (name, conninfo). Empty, or with
    `migrated` a copy of the migrated template when there is one (the engine's start then finds
    nothing to apply; without a template it is empty and the engine migrates it)."""
    name = "ft_e2e_" + uuid.uuid4().hex[:12]
    owner = psycopg.conninfo.conninfo_to_dict(test_database_url()).get("user")
    source = TEMPLATE_DATABASE if migrated and template_ready() else "template0"
    # FILE_COPY: as tests/support/pg_support.cpp's scratch databases (a quarter of the server's
    # CPU per copy of the default strategy, which writes the copy to the WAL).
    admin_sql(f'CREATE DATABASE {name} TEMPLATE {source}' + (f' OWNER "{owner}"' if owner else "")
              + " STRATEGY FILE_COPY")
    return name, psycopg.conninfo.make_conninfo(test_database_url(), dbname=name)


def drop_database(name):
    admin_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def database_env(extra=None, migrated=False):
    """Creates a scratch database (a copy of the migrated template with `migrated`, unless
    `extra` sets another history period than the template's); returns (name, conninfo, the
    engine's environment for it with the FULLTIME_* settings in `extra`)."""
    migrated = migrated and "FULLTIME_HISTORY_PERIOD" not in (extra or {})
    name, url = scratch_database(migrated)
    return name, url, engine_env({"FULLTIME_DATABASE_URL": url, **(extra or {})})


def run_cli(args, env, timeout=60):
    """Runs `fulltime ARGS` to completion; returns (exit status, stdout, stderr)."""
    p = subprocess.run([BINARY] + args, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


PG_BIN = "/usr/lib/postgresql/15/bin"


def as_pg_owner(command):
    """initdb, pg_ctl and postgres refuse to run as root: as root, server binaries run as the
    postgres user (as scripts/lib.sh does)."""
    return ["runuser", "-u", "postgres", "--"] + command if os.geteuid() == 0 else command


def cli_token(env, *args):
    """Returns `fulltime token ARGS` run with `env` (e.g. "account", "42"); fails loudly."""
    code, out, err = run_cli(["token", *args], env)
    if code != 0:
        raise AssertionError(f"fulltime token {' '.join(args)}: {err}")
    return out.strip()


def post_ok(engine, path, body, bearer):
    """POSTs `body` and returns the parsed answer; fails unless it is 200 or 201."""
    status, answer = engine.post_json(path, body, bearer)
    if status not in (200, 201):
        raise AssertionError(f"POST {path} {body}: {status} {answer}")
    return answer


class Engine:
    """A `fulltime serve` child process (or `argv`, e.g. a packaged binary with its config, run
    in `cwd`; `preexec_fn` runs in the child before it, e.g. to set its resource limits). Reads
    its stderr on a thread to learn its port, and the operators' port when admin_listen is set
    (operators())."""

    def __init__(self, env, argv=None, cwd=None, preexec_fn=None):
        self.env = env
        self.lines = []
        self.port = None
        self.admin_port = None
        self._listening = threading.Event()
        self.proc = subprocess.Popen(argv or [BINARY, "serve"], env=env, cwd=cwd,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=preexec_fn)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._listening.wait(STARTUP_TIMEOUT_S):
            self.kill()
            raise AssertionError("engine did not start listening:\n" + self.log())

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            m = re.search(r"(listening|operator routes) on http://[^\s\"]+:(\d+)", line)
            if m and m.group(1) == "operator routes":
                self.admin_port = int(m.group(2))
            elif m:
                self.port = int(m.group(2))
                self._listening.set()
        self._listening.set()

    def log(self):
        return "".join(self.lines)

    def operators(self):
        """This engine as seen on its operators' listener (admin_listen): the same calls, on
        that port. Waits for the engine to log it (right after the bettors' one)."""
        wait_until(lambda: self.admin_port is not None,
                   "no operator routes line (is admin_listen set?):\n" + self.log())
        view = copy.copy(self)
        view.port = self.admin_port
        return view

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def ws_url(self, path):
        return f"ws://127.0.0.1:{self.port}{path}"

    def get(self, path, headers=None):
        """GET path; returns (status, body text)."""
        req = urllib.request.Request(self.url(path), headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def post_json(self, path, body, token):
        """POST a JSON body with a bearer token; returns (status, parsed body or text)."""
        req = urllib.request.Request(self.url(path), data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": "Bearer " + token,
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def get_json(self, path, headers=None):
        status, body = self.get(path, headers)
        return status, json.loads(body)

    def wait_ready(self, timeout_s=30):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status, _ = self.get("/readyz")
            if status == 200:
                return
            time.sleep(0.1)
        raise AssertionError("engine never became ready:\n" + self.log())

    def stop(self, sig=signal.SIGTERM, timeout_s=60):
        """Sends `sig` and waits; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("engine did not stop within %ss:\n%s" % (timeout_s, self.log()))
        self._reader.join(5)
        self.proc.stderr.close()
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        self.proc.stderr.close()


class EngineTestCase(unittest.TestCase):
    """A test case on a fresh database (dropped after the test) with the engine's environment
    for it, `self.admin` and `self.producer` tokens (feed-1) when TOKENS, and the steps every
    scenario repeats: send a market on the feed, open and fund accounts."""

    ENGINE_ENV = {}  # the FULLTIME_* settings of the test class, over engine_env's
    TOKENS = True
    # False: the test's database starts empty, for tests of what a first migration does.
    MIGRATED = True

    def setUp(self):
        self.db_name, self.db_url, self.env = database_env(self.ENGINE_ENV, self.MIGRATED)
        self.addCleanup(drop_database, self.db_name)
        if self.TOKENS:
            self.admin = self.token("admin", "e2e-operator")
            self.producer = self.token("producer", "feed-1")

    def token(self, *args):
        """Returns `fulltime token ARGS` (e.g. "account", "42")."""
        code, out, err = run_cli(["token", *args], self.env)
        self.assertEqual(code, 0, err)
        return out.strip()

    def sql(self, query, *args):
        """Runs one statement on the test's database; returns its rows ([] when it has none).
        One session per test, opened at the first call and again if it broke: a connection per
        statement costs more than the statement (tests poll with this)."""
        conn = getattr(self, "_sql_conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._sql_conn = psycopg.connect(self.db_url, autocommit=True)
            self.addCleanup(conn.close)
        cur = conn.execute(query, args)
        return cur.fetchall() if cur.description else []

    def wait_for(self, query, *args, timeout_s=30):
        """Returns the first row of `query` (with `args`) once there is one; fails the test
        after `timeout_s`."""
        return wait_until(lambda: self.sql(query, *args), "no row for: " + query, timeout_s)[0]

    def send_market(self, engine, market):
        """Sends `market` on POST /v1/feed as the producer and requires it stored."""
        status, body = engine.post_json("/v1/feed", market, self.producer)
        self.assertEqual(status, 200, body)

    def place_bet(self, engine, bettor, key="k1"):
        """Places one bet of 10.00 at 2.50 on selection 1001 (fixtures.MARKET) over /v1/bets
        as `bettor` (an account token) and requires it placed; returns the bet."""
        async def place():
            async with websockets.client.connect(engine.ws_url("/v1/bets?token=" + bettor)) as ws:
                await ws.send(json.dumps({"type": "place", "id": "p1", "idempotency_key": key,
                                          "selection_id": 1001, "stake": "10.00",
                                          "odds": "2.50"}))
                return json.loads(await asyncio.wait_for(ws.recv(), 10))
        placed = asyncio.run(place())
        self.assertEqual(placed["type"], "placed", placed)
        return placed["bet"]

    def open_accounts(self, engine, accounts, amount, key="dep-{}"):
        """Creates each account (EUR) and deposits `amount` ("100.00") into it, with the
        idempotency key `key` formatted with the account id."""
        for a in accounts:
            status, body = engine.post_json("/v1/accounts", {"account_id": a, "currency": "EUR"},
                                            self.admin)
            self.assertIn(status, (200, 201), body)
            status, body = engine.post_json(f"/v1/accounts/{a}/deposits",
                                            {"amount": amount, "key": key.format(a)}, self.admin)
            self.assertIn(status, (200, 201), body)


class PgBouncer:
    """A PgBouncer (Debian's) in front of the test server for one database: transaction
    pooling, `pool_size` server connections, trust authentication, on a Unix socket of its
    own. `url` reaches the database through it, `admin_url` its admin console."""

    def __init__(self, db_name, pool_size=1):
        server = psycopg.conninfo.conninfo_to_dict(test_database_url())
        self.dir = tempfile.mkdtemp(prefix="fulltime-pgbouncer-")
        self.port = 6400 + os.getpid() % 500
        user = server.get("user", "fulltime")
        with open(os.path.join(self.dir, "users.txt"), "w") as f:
            f.write(f'"{user}" ""\n')
        with open(os.path.join(self.dir, "pgbouncer.ini"), "w") as f:
            f.write(f"""[databases]
{db_name} = host={server['host']} port={server.get('port', '5432')} dbname={db_name} user={user}
[pgbouncer]
listen_addr =
listen_port = {self.port}
unix_socket_dir = {self.dir}
auth_type = trust
auth_file = {self.dir}/users.txt
admin_users = {user}
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 100
logfile = {self.dir}/pgbouncer.log
pidfile = {self.dir}/pgbouncer.pid
""")
        command = [shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"]
        if os.geteuid() == 0:
            # PgBouncer refuses to run as root.
            shutil.chown(self.dir, "postgres")
            for name in os.listdir(self.dir):
                shutil.chown(os.path.join(self.dir, name), "postgres")
            command += ["-u", "postgres"]
        self.proc = subprocess.Popen(command + [os.path.join(self.dir, "pgbouncer.ini")],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.db_name = db_name
        self.url = f"host={self.dir} port={self.port} dbname={db_name} user={user}"
        self.admin_url = f"host={self.dir} port={self.port} dbname=pgbouncer user={user}"
        until = time.monotonic() + 30
        while not os.path.exists(os.path.join(self.dir, f".s.PGSQL.{self.port}")):
            if self.proc.poll() is not None or time.monotonic() > until:
                raise AssertionError("pgbouncer did not start: " + self.proc.stdout.read())
            time.sleep(0.05)

    def stats(self):
        """Returns SHOW STATS' row for the database as a dict."""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            cur = conn.execute("SHOW STATS")
            names = [c.name for c in cur.description]
            for row in cur.fetchall():
                if row[0] == self.db_name:
                    return dict(zip(names, row))
        raise AssertionError("SHOW STATS has no row for " + self.db_name)

    def query_one(self):
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SELECT 1").fetchone()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)
