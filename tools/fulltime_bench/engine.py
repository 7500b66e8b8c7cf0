"""The engine under test: `fulltime serve` started with the e2e harness's launcher
(tests/e2e/harness.py: Engine, engine_env), `fulltime migrate` and `token`, its /metrics, and
its WebSocket load generator `fulltime bench-placement`.

The environment of every `fulltime` a benchmark runs is harness.engine_env's with the caller's
own FULLTIME_* settings kept (a benchmark run with FULLTIME_READ_PROJECTOR_YIELD_MS=0 measures
that engine) and the benchmark's over them."""

import faulthandler
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

from . import common, db
import harness  # noqa: E402  (tests/e2e, which common puts on the path)

# The harness arms a traceback dump for ctest's timeout when it is imported; a benchmark runs
# for longer than a test and has no such timeout.
faulthandler.cancel_dump_traceback_later()

TOKEN_SECRET = "bench-secret-0123456789abcdef"


def environment(state_dir, settings=None):
    """The environment of a `fulltime` command: the caller's FULLTIME_* settings, then
    `settings` ({NAME: value}, None to drop a variable), a state directory and the benchmarks'
    token secret."""
    own = {k: v for k, v in os.environ.items() if k.startswith("FULLTIME_")}
    own["FULLTIME_TOKEN_SECRET"] = TOKEN_SECRET
    own.update(settings or {})
    env = harness.engine_env({k: v for k, v in own.items() if v is not None}, state_dir)
    return env


def migrate(env, log_path):
    """`fulltime migrate`, its output in `log_path`; a failure ends the benchmark."""
    with open(log_path, "w") as out:
        rc = subprocess.run([common.BINARY, "migrate"], env=env, stdout=out,
                            stderr=subprocess.STDOUT).returncode
    if rc:
        with open(log_path) as f:
            sys.stderr.write(f.read())
        common.die("migrate failed")


def bench_database(pg, work, log_level):
    """The benchmark's own database on a started cluster (cluster.Cluster): the engine's role
    may create databases and checkpoint, "bench" is created by it and migrated. Returns (its
    URL, the environment of a `fulltime` on it, at `log_level`)."""
    pg.grant_benchmark_privileges()
    db.psql(pg.url, "create_database", variables={"name": "bench"},
            what="could not create the database")
    url = pg.url_of("bench")
    env = environment(work("state"), {"FULLTIME_DATABASE_URL": url,
                                      "FULLTIME_LOG_LEVEL": log_level})
    migrate(env, work("migrate.log"))
    return url, env


def token(env, *args):
    """`fulltime token ARGS`, e.g. token(env, "producer", "bench-feed")."""
    p = subprocess.run([common.BINARY, "token", *args], env=env, capture_output=True, text=True)
    if p.returncode:
        common.die(f"fulltime token {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout.strip()


class Server:
    """A running `fulltime serve` (harness.Engine): `port`, `pid`, and its log written to
    `log_path` (appended to: a restarted engine's log follows the first one's) when it stops."""

    def __init__(self, env, log_path, binary=None, name="the engine"):
        self.log_path, self.name = log_path, name
        try:
            self.engine = harness.Engine(env, argv=[binary or common.BINARY, "serve"])
        except AssertionError as e:
            print(e, file=sys.stderr)
            common.die(f"{name} did not start")
        if self.engine.port is None:
            self.engine.stop()
            self._save()
            sys.stderr.write(self.engine.log())
            common.die(f"{name} did not start")
        self.port, self.pid = self.engine.port, self.engine.proc.pid
        self.stopped = False

    def alive(self):
        return self.engine.proc.poll() is None

    def lines(self):
        return list(self.engine.lines)

    def metrics(self, timeout_s=2):
        """GET /metrics' text, or "" when it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics",
                                        timeout=timeout_s) as r:
                return r.read().decode()
        except OSError:
            return ""

    def post_json(self, path, body, token):
        return self.engine.post_json(path, body, token)

    def wait_ready(self):
        try:
            self.engine.wait_ready(30)
        except AssertionError:
            sys.stderr.write(self.engine.log())
            common.die(f"{self.name} never became ready")

    def stop(self, sig=signal.SIGTERM):
        """Stops it (SIGTERM) and saves its log; returns its exit status."""
        if self.stopped:
            return self.engine.proc.returncode
        self.stopped = True
        try:
            code = self.engine.stop(sig)
        except AssertionError:
            code = self.engine.proc.returncode
        self._save()
        return code

    def _save(self):
        with open(self.log_path, "a") as f:
            f.write(self.engine.log())


def load_generator(port, args, out_path, err_path, env):
    """Starts `fulltime bench-placement --port PORT ARGS`, its JSON line in `out_path`, its
    stderr in `err_path`."""
    with open(out_path, "w") as out, open(err_path, "w") as err:
        return subprocess.Popen([common.BINARY, "bench-placement", "--port", str(port), *args],
                                env=env, stdout=out, stderr=err)


def post(port, path, text, token, timeout_s=30):
    """POSTs a JSON text with a bearer token; returns (status, body text), status "000" when
    nothing answered (as curl prints them)."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=text.encode(),
                                 method="POST", headers={"Authorization": "Bearer " + token,
                                                         "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return str(r.status), r.read().decode().rstrip("\n")
    except urllib.error.HTTPError as e:
        return str(e.code), e.read().decode().rstrip("\n")
    except OSError:
        return "000", ""
