"""Runs the real `fulltime` binary for end-to-end tests, talking to it only over its public
interfaces (HTTP, WebSocket, the command line), as clients not written here do.

Uses only Debian's python3 modules (run with /usr/bin/python3)."""

import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

BINARY = os.environ.get("FULLTIME_BINARY", os.path.join(os.path.dirname(__file__), "../../build/fulltime"))
STARTUP_TIMEOUT_S = 120


def test_database_url():
    url = os.environ.get("FULLTIME_TEST_DATABASE_URL")
    if not url:
        raise SystemExit("FULLTIME_TEST_DATABASE_URL is not set: run the tests with scripts/test")
    return url


def engine_env(extra=None, state_dir=None):
    """The environment for a child `fulltime`: no FULLTIME_* from the caller but the test ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FULLTIME_") or k.startswith("FULLTIME_TEST_")}
    env["FULLTIME_LISTEN"] = "127.0.0.1:0"
    env["FULLTIME_STATE_DIR"] = state_dir or tempfile.mkdtemp(prefix="fulltime-e2e-")
    env["FULLTIME_TOKEN_SECRET"] = "e2e-secret-0123456789abcdef"
    env.update(extra or {})
    return env


def run_cli(args, env, timeout=60):
    """Runs `fulltime ARGS` to completion; returns (exit status, stdout, stderr)."""
    p = subprocess.run([BINARY] + args, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


class Engine:
    """A `fulltime serve` child process. Reads its stderr on a thread to learn its port."""

    def __init__(self, env):
        self.env = env
        self.lines = []
        self.port = None
        self._listening = threading.Event()
        self.proc = subprocess.Popen([BINARY, "serve"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._listening.wait(STARTUP_TIMEOUT_S):
            self.kill()
            raise AssertionError("engine did not start listening:\n" + self.log())

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            m = re.search(r"listening on http://[^\s]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self._listening.set()
        self._listening.set()

    def log(self):
        return "".join(self.lines)

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
