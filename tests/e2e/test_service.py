"""The engine as a service (docs/operations.md): the operators' routes on their own listener
(admin_listen) and not on the bettors'; JSON log records, with every operator action under the
operator's name from the admin token; systemd's readiness and stopping notices on
$NOTIFY_SOCKET; the token secret from systemd's credentials directory; SIGHUP logged and
ignored; a relative state_dir refused under systemd; and the schema: `fulltime migrate
--status`, and a database migrated by a newer release refused by serve and migrate."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import psycopg
import websockets.client
import websockets.exceptions

from fixtures import MARKET
from harness import BINARY, Engine, EngineTestCase, run_cli, wait_until
from money import assert_money_invariants


class ServiceTest(EngineTestCase):
    TOKENS = False
    MIGRATED = False  # the schema tests start from a database nothing has migrated

    def secret_env(self, extra):
        """The engine's environment with the token secret in a systemd credentials directory
        for the engine and in token_secret_file for `fulltime token`, as the package has it."""
        creds = tempfile.mkdtemp(prefix="fulltime-e2e-creds-")
        with open(os.path.join(creds, "token_secret"), "w") as f:
            f.write("0123456789abcdef0123456789abcdef\n")
        env = dict(self.env)
        env.pop("FULLTIME_TOKEN_SECRET")
        env.update(extra)
        cli = dict(env)
        cli["FULLTIME_TOKEN_SECRET_FILE"] = os.path.join(creds, "token_secret")
        env["CREDENTIALS_DIRECTORY"] = creds
        return env, cli

    def cli_token(self, env, *args):
        code, out, err = run_cli(["token", *args], env)
        self.assertEqual(code, 0, err)
        return out.strip()

    def test_operators_listener_json_logs_and_systemd_notices(self):
        notices = tempfile.mkdtemp(prefix="fulltime-e2e-notify-")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(os.path.join(notices, "notify"))
        notify.settimeout(60)
        self.addCleanup(notify.close)
        env, cli = self.secret_env({"FULLTIME_ADMIN_LISTEN": "127.0.0.1:0",
                                    "FULLTIME_LOG_FORMAT": "json",
                                    "INVOCATION_ID": "0123456789abcdef",
                                    "NOTIFY_SOCKET": os.path.join(notices, "notify")})
        admin_token = self.cli_token(cli, "admin", "alice")
        producer = self.cli_token(cli, "producer", "feed-1")
        bettor = self.cli_token(cli, "account", "42")
        engine = Engine(env)
        try:
            engine.wait_ready()
            self.assertEqual(notify.recv(4096).decode(), "READY=1\nSTATUS=serving")
            operators = engine.operators()
            self.assertNotEqual(operators.port, engine.port)

            # The bettors' port: the bettor WebSocket and the health checks, nothing else.
            self.assertEqual(engine.get("/healthz")[0], 200)
            self.assertEqual(engine.get("/readyz")[0], 200)
            auth = {"Authorization": "Bearer " + admin_token}
            for path in ("/metrics", "/dashboard", "/v1/diagnostics", "/v1/incidents"):
                self.assertEqual(engine.get(path, auth)[0], 404, path)
            self.assertEqual(engine.post_json("/v1/feed", MARKET, producer)[0], 404)
            self.assertEqual(engine.post_json("/v1/accounts", {"account_id": 42,
                                                               "currency": "EUR"},
                                              admin_token)[0], 404)

            # The operators' port: all of those, and not the bettor WebSocket.
            self.assertEqual(operators.get("/healthz")[0], 200)
            self.assertEqual(operators.get("/metrics")[0], 200)
            self.assertEqual(operators.get("/v1/diagnostics", auth)[0], 200)
            self.assertEqual(operators.post_json("/v1/feed", MARKET, producer)[0], 200)
            status, body = operators.post_json("/v1/accounts", {"account_id": 42,
                                                                "currency": "EUR"}, admin_token)
            self.assertEqual(status, 201, body)
            status, body = operators.post_json("/v1/accounts/42/deposits",
                                               {"amount": "50.00", "key": "dep-1"}, admin_token)
            self.assertEqual(status, 201, body)
            status, body = operators.post_json("/v1/accounts/42/withdrawals",
                                               {"amount": "500.00", "key": "wd-1"}, admin_token)
            self.assertEqual(status, 409, body)

            async def websockets_where_they_belong():
                for where, path, token in ((operators, "/v1/bets", bettor),
                                           (engine, "/v1/feed", producer)):
                    with self.assertRaises(websockets.exceptions.InvalidStatusCode) as refused:
                        async with websockets.client.connect(
                                where.ws_url(path),
                                extra_headers={"Authorization": "Bearer " + token}):
                            pass
                    self.assertEqual(refused.exception.status_code, 404, path)
                async with websockets.client.connect(
                        engine.ws_url("/v1/bets"),
                        extra_headers={"Authorization": "Bearer " + bettor}) as ws:
                    await ws.send(json.dumps({"type": "place", "id": "p1",
                                              "idempotency_key": "k1", "selection_id": 1001,
                                              "stake": "5.00", "odds": "2.50"}))
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
                    self.assertEqual(reply["type"], "placed", reply)

            asyncio.run(websockets_where_they_belong())

            # SIGHUP: logged, ignored; the engine keeps serving.
            engine.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "received SIGHUP" in engine.log(), "SIGHUP not logged")
            self.assertEqual(engine.get("/readyz")[0], 200)
            self.assertIsNone(engine.proc.poll())

            self.assertEqual(engine.stop(), 0, engine.log())
            self.assertEqual(notify.recv(4096).decode(), "STOPPING=1\nSTATUS=draining")
        finally:
            if engine.proc.poll() is None:
                engine.stop()

        # Every record is one JSON object; the operator's actions carry the operator.
        records = [json.loads(line) for line in engine.log().splitlines() if line.strip()]
        self.assertTrue(all({"ts", "level", "msg"} <= r.keys() for r in records))
        actions = [r for r in records if r["msg"].startswith("operator: ")]
        self.assertIn(("operator: create account", "alice", 42, "created"),
                      [(r["msg"], r["operator"], r["account"], r["outcome"]) for r in actions])
        self.assertIn(("operator: deposit", "alice", "dep-1", "50.00", "applied"),
                      [(r["msg"], r["operator"], r.get("key"), r.get("amount"), r["outcome"])
                       for r in actions])
        self.assertIn(("operator: withdrawal", "alice", "insufficient_funds"),
                      [(r["msg"], r["operator"], r["outcome"]) for r in actions])
        assert_money_invariants(self, self.db_url)

    def test_an_admin_token_without_an_operator_is_refused(self):
        code, _, err = run_cli(["token", "admin"], self.env)
        self.assertEqual(code, 2)
        self.assertIn("fulltime token admin OPERATOR", err)

    def test_a_relative_state_dir_is_refused_under_systemd(self):
        env = dict(self.env, INVOCATION_ID="0123456789abcdef", FULLTIME_STATE_DIR="var")
        p = subprocess.run([BINARY, "serve"], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("state_dir 'var' is relative, and this is a systemd unit", p.stderr)

    def test_migrate_status_and_a_schema_newer_than_the_binary(self):
        code, out, err = run_cli(["migrate", "--status", "--json"], self.env)
        self.assertEqual(code, 1, err)  # a fresh database: everything pending
        status = json.loads(out)
        self.assertEqual(status["state"], "pending")
        self.assertEqual(status["applied"], [])
        self.assertIn("0001_baseline.sql", status["pending"])

        code, _, err = run_cli(["migrate"], self.env)
        self.assertEqual(code, 0, err)
        code, out, err = run_cli(["migrate", "--status"], self.env)
        self.assertEqual(code, 0, err)
        self.assertIn("applied   0001_baseline.sql", out)
        self.assertIn("schema current", out)

        # A newer release migrated the database: this one refuses to serve it or to migrate
        # it, and says so; nothing it would write is written.
        self.sql("INSERT INTO fulltime_schema_migrations (name, checksum) "
                 "VALUES ('9999_from_a_newer_release.sql', 'x')")
        functions = self.sql("SELECT name, checksum FROM fulltime_schema_functions ORDER BY 1")
        code, out, err = run_cli(["migrate", "--status"], self.env)
        self.assertEqual(code, 1, err)
        self.assertIn("unknown   9999_from_a_newer_release.sql (recorded by a newer release)", out)
        code, _, err = run_cli(["migrate"], self.env)
        self.assertEqual(code, 1)
        self.assertIn("the database's schema is newer than this binary", err)
        p = subprocess.run([BINARY, "serve"], env=self.env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("9999_from_a_newer_release.sql", p.stderr)
        self.assertEqual(
            self.sql("SELECT name, checksum FROM fulltime_schema_functions ORDER BY 1"), functions)

    def test_a_migration_waits_for_locks_at_most_its_lock_timeout(self):
        code, _, err = run_cli(["migrate"], self.env)
        self.assertEqual(code, 0, err)
        # A session holding a lock the runner needs (here on its own bookkeeping table, which
        # every run reads): the run gives up after its lock_timeout instead of queueing.
        with psycopg.connect(self.db_url) as holder:
            holder.execute("LOCK TABLE fulltime_schema_migrations IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            code, _, err = run_cli(["migrate"], dict(
                self.env, FULLTIME_DATABASE_MIGRATION_LOCK_TIMEOUT_MS="300"), timeout=60)
            elapsed = time.monotonic() - started
            holder.rollback()
        self.assertEqual(code, 4, err)  # a failure, not a "no": it may pass at a quieter moment
        self.assertIn("lock", err)
        self.assertLess(elapsed, 30, "the migration queued instead of giving up")
        code, _, err = run_cli(["migrate"], self.env)
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    unittest.main()
