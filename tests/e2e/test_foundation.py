"""End-to-end tests of the foundation: the binary's commands, configuration errors, the private
cluster, health/readiness/metrics, WebSocket authentication and graceful shutdown."""

import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import psycopg
import websockets.client
from websockets.exceptions import InvalidStatusCode

from harness import (PG_BIN, Engine, EngineTestCase, admin_sql, as_pg_owner, cli_token,
                     database_env, drop_database, engine_env, run_cli)


def server_settings(engine, env):
    """The start-up check's findings, from /v1/diagnostics (`database.server_settings`)."""
    code, admin, err = run_cli(["token", "admin", "e2e-operator"], env)
    assert code == 0, err
    status, body = engine.get_json("/v1/diagnostics", {"Authorization": "Bearer " + admin.strip()})
    assert status == 200, body
    return body["database"]["server_settings"]


class WithDatabase(EngineTestCase):
    # These tests make their own tokens: some check what the first command creates.
    TOKENS = False


class ServeTest(WithDatabase):
    def test_health_readiness_metrics_and_graceful_stop(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.assertEqual(engine.get_json("/healthz"), (200, {"status": "ok"}))
            self.assertEqual(engine.get_json("/readyz"), (200, {"status": "ready"}))
            status, metrics = engine.get("/metrics")
            self.assertEqual(status, 200)
            for pool in ("placement", "settlement", "read", "background"):
                self.assertIn(f'fulltime_db_pool_in_use{{pool="{pool}"}}', metrics)
            self.assertIn("fulltime_gateway_open_connections", metrics)
            self.assertEqual(engine.get("/nope")[0], 404)
        finally:
            code = engine.stop(signal.SIGTERM)
        self.assertEqual(code, 0, engine.log())
        self.assertIn("stopped", engine.log())

    def test_a_stop_does_not_wait_for_the_background_loops_intervals(self):
        # Every periodic loop (pushes, reconciliation, the sweeper) set to an hour: a SIGTERM
        # must still end the process within the drain, not when a pending timer fires.
        env = dict(self.env, FULLTIME_SETTLEMENT_PUSH_INTERVAL_MS="3600000",
                   FULLTIME_RECONCILE_INTERVAL_MS="3600000",
                   FULLTIME_RESERVATIONS_SWEEP_INTERVAL_MS="3600000")
        engine = Engine(env)
        engine.wait_ready()
        # stop() fails the test if the process has not exited 30 s after the signal (the
        # drain's deadline is 10 s); before the fix it waited for the push loop's hour.
        code = engine.stop(signal.SIGTERM, timeout_s=30)
        self.assertEqual(code, 0, engine.log())

    def test_websocket_upgrade_needs_a_valid_token(self):
        code, account_token, err = run_cli(["token", "account", "42"], self.env)
        self.assertEqual(code, 0, err)
        account_token = account_token.strip()
        _, producer_token, _ = run_cli(["token", "producer", "feed-1"], self.env)
        engine = Engine(self.env)
        try:
            engine.wait_ready()

            async def scenario():
                url = engine.ws_url("/v1/bets")
                for headers in ({}, {"Authorization": "Bearer nonsense"},
                                {"Authorization": "Bearer " + producer_token.strip()}):
                    with self.assertRaises(InvalidStatusCode) as ctx:
                        async with websockets.client.connect(url, extra_headers=headers):
                            pass
                    self.assertEqual(ctx.exception.status_code, 401)
                async with websockets.client.connect(url + "?token=" + account_token) as ws:
                    await ws.send("{not json")
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    self.assertEqual(reply["type"], "error")
                    self.assertEqual(reply["code"], "invalid_json")
                    self.assertIsNone(reply["id"])
                    # The connection stays usable after bad input.
                    await ws.send(json.dumps({"type": "no_such_type", "id": "c1"}))
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    self.assertEqual((reply["type"], reply["id"], reply["code"]),
                                     ("error", "c1", "invalid_request"))

            asyncio.run(scenario())
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())

    def test_a_token_secret_rollover_accepts_the_previous_secret(self):
        old, new = "e2e-old-secret-0123456789", "e2e-new-secret-0123456789"
        env = dict(self.env, FULLTIME_TOKEN_SECRET=new, FULLTIME_TOKEN_SECRET_PREVIOUS=old)
        of_old = cli_token(dict(self.env, FULLTIME_TOKEN_SECRET=old), "admin", "e2e-operator")
        of_third = cli_token(dict(self.env, FULLTIME_TOKEN_SECRET="e2e-third-secret-0123456"),
                             "admin", "e2e-operator")
        of_new = cli_token(env, "admin", "e2e-operator")
        # `fulltime token` signs with the current secret only, the previous one configured or not.
        signed, tag = of_new.rsplit(".", 1)
        expected = hmac.new(new.encode(), signed.encode(), hashlib.sha256).digest()
        self.assertEqual(tag, base64.urlsafe_b64encode(expected).rstrip(b"=").decode())
        engine = Engine(env)
        try:
            engine.wait_ready()
            self.assertIn("token secret rollover", engine.log())

            def status(token):
                return engine.get("/v1/accounts/1", {"Authorization": "Bearer " + token})

            # 404: past the token check, to an account that does not exist.
            self.assertEqual(status(of_new)[0], 404)
            self.assertEqual(status(of_old)[0], 404)
            code, body = status(of_third)
            self.assertEqual(code, 401, body)
            self.assertIn("signature", body)
            _, metrics = engine.get("/metrics")
            self.assertIn('fulltime_tokens_verified_total{key="current"} 1\n', metrics)
            self.assertIn('fulltime_tokens_verified_total{key="previous"} 1\n', metrics)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())

    def test_server_settings_are_checked_at_start(self):
        # This database's sessions get no lock-wait logging: the engine says so at start, in its
        # log and in /v1/diagnostics, and still starts; its own sessions name their pool.
        # (A superuser's setting: the engine's role may not change it.)
        admin_sql(f"ALTER DATABASE {self.db_name} SET log_lock_waits = off")
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            checked = server_settings(engine, self.env)
            self.assertFalse(checked["settings"]["log_lock_waits"], checked)
            # The tests' role is the one docs/operations.md asks for, and the check sees it.
            self.assertEqual((checked["settings"]["role"], checked["settings"]["role_is_superuser"],
                              checked["settings"]["role_has_pg_monitor"]),
                             ("fulltime", False, True), checked)
            self.assertEqual(len(checked["warnings"]), 1, checked)
            self.assertIn("log_lock_waits is off", checked["warnings"][0])
            self.assertIn("server settings: log_lock_waits is off", engine.log())
            names = {r[0] for r in self.sql(
                "SELECT application_name FROM pg_stat_activity WHERE datname = %s",
                self.db_name)}
            self.assertIn("fulltime-placement", names)
            self.assertNotIn("fulltime-check", names)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())

    def test_migrate_twice_is_a_no_op(self):
        # A database nothing has migrated (the test's own is a copy of the migrated template).
        name, url, env = database_env()
        self.addCleanup(drop_database, name)
        code, _, err = run_cli(["migrate"], env)
        self.assertEqual(code, 0, err)
        self.assertIn("applied migration 0001_baseline.sql", err)
        self.assertIn("applied function file fulltime_settle_step.sql", err)
        code, _, err = run_cli(["migrate"], env)
        self.assertEqual(code, 0, err)
        self.assertIn("0 applied", err)
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT count(*) FROM fulltime_schema_migrations").fetchone()
            self.assertGreaterEqual(rows[0], 1)


class ErrorsTest(unittest.TestCase):
    def assert_one_line_failure(self, args, env, expected_code, expected_text):
        code, out, err = run_cli(args, env)
        self.assertEqual(code, expected_code, err)
        # Log records may precede it; the failure itself is exactly one line.
        failures = [line for line in err.splitlines() if line.startswith("fulltime: ")]
        self.assertEqual(len(failures), 1, err)
        self.assertIn(expected_text, failures[0])

    def test_unknown_key_and_bad_values(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('{"gateway": {"conections_max": 5}}')
        try:
            self.assert_one_line_failure(["--config", f.name, "serve"], engine_env(), 2,
                                         "unknown key 'gateway.conections_max'")
        finally:
            os.unlink(f.name)
        self.assert_one_line_failure(["serve"], engine_env({"FULLTIME_GATEWAY_CONNECTIONS_MAX": "many"}),
                                     2, "is not an integer")
        self.assert_one_line_failure(["serve"], engine_env({"FULLTIME_LISTEN": "nowhere"}),
                                     2, "'listen' must be host:port")
        self.assert_one_line_failure(["frobnicate"], engine_env(), 2, "unknown command")
        # A rollover whose new secret was never written.
        self.assert_one_line_failure(
            ["serve"], engine_env({"FULLTIME_TOKEN_SECRET_PREVIOUS": "e2e-secret-0123456789abcdef"}),
            2, "'token_secret_previous' is the same as 'token_secret'")

    def test_unreachable_database(self):
        env = engine_env({"FULLTIME_DATABASE_URL": "host=/nonexistent-dir port=5 user=x dbname=y",
                          "FULLTIME_DATABASE_CONNECT_TIMEOUT_MS": "2000"})
        started = time.monotonic()
        self.assert_one_line_failure(["serve"], env, 3, "cannot reach the database at")
        self.assertLess(time.monotonic() - started, 30)

    def test_tokens_from_the_cli(self):
        state = tempfile.mkdtemp(prefix="fulltime-e2e-")
        env = engine_env(state_dir=state)
        del env["FULLTIME_TOKEN_SECRET"]
        code, first, err = run_cli(["token", "account", "42"], env)
        self.assertEqual(code, 0, err)
        self.assertRegex(first.strip(), r"^ft1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
        self.assertTrue(os.path.exists(os.path.join(state, "token_secret")))
        self.assertEqual(os.stat(os.path.join(state, "token_secret")).st_mode & 0o777, 0o600)
        for bad in (["token", "account", "-1"], ["token", "account"], ["token", "wizard"],
                    ["token", "admin", "alice", "--ttl", "0"], ["token", "admin"],
                    ["token", "admin", "two words"], ["token", "admin", "a", "b"]):
            code, _, err = run_cli(bad, env)
            self.assertEqual(code, 2, (bad, err))


class EmbeddedClusterTest(unittest.TestCase):
    def test_serve_without_a_database_runs_its_own_cluster(self):
        state = tempfile.mkdtemp(prefix="fulltime-e2e-embedded-")
        os.chmod(state, 0o755)
        env = engine_env(state_dir=state)
        pid_file = os.path.join(state, "postgres", "data", "postmaster.pid")

        engine = Engine(env)
        try:
            engine.wait_ready(60)
            self.assertTrue(os.path.exists(pid_file))
            self.assertEqual(engine.get_json("/readyz"), (200, {"status": "ready"}))
            # The private cluster starts with the guard rails: the start-up check finds nothing.
            checked = server_settings(engine, env)
            self.assertEqual(checked["warnings"], [], checked)
            self.assertEqual(checked["settings"]["idle_in_transaction_session_timeout_ms"], 60000)
            self.assertTrue(checked["settings"]["log_lock_waits"])
            # The engine connects as a role it made, not as the cluster's superuser.
            self.assertEqual((checked["settings"]["role"], checked["settings"]["role_is_superuser"],
                              checked["settings"]["role_has_pg_monitor"]),
                             ("fulltime", False, True), checked)
            # Commands an operator runs beside the service borrow its cluster and leave it
            # running: the engine still serves after each.
            for command in (["migrate", "--status"], ["migrate"], ["audit"], ["partitions"]):
                code, out, err = run_cli(command, env)
                self.assertEqual(code, 0, f"{command}: {out}{err}")
                self.assertTrue(os.path.exists(pid_file), f"{command} stopped the cluster")
                self.assertEqual(engine.get_json("/readyz"), (200, {"status": "ready"}), command)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        self.assertFalse(os.path.exists(pid_file), "the private cluster was not stopped")

        # A killed engine leaves its cluster running; the next start adopts it.
        engine = Engine(env)
        engine.wait_ready(60)
        engine.stop(signal.SIGKILL)
        self.assertTrue(os.path.exists(pid_file))
        engine = Engine(env)
        try:
            engine.wait_ready(60)
            self.assertIn("adopting", engine.log())
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        self.assertFalse(os.path.exists(pid_file))

    def test_commands_that_check_a_database_never_make_a_private_cluster(self):
        # With no cluster in the state directory (a wrong --config, a restore that did not
        # happen), a new empty one would pass for the real database: they refuse instead.
        state = tempfile.mkdtemp(prefix="fulltime-e2e-no-cluster-")
        os.chmod(state, 0o755)
        env = engine_env(state_dir=state)
        for command in (["audit"], ["reconcile"], ["partitions"], ["project", "--verify"],
                        ["void-overdue", "--market", "1"]):
            code, out, err = run_cli(command, env)
            self.assertEqual(code, 3, f"{command}: {out}{err}")  # no database to reach
            self.assertIn("there is no private cluster in", err, command)
        self.assertFalse(os.path.exists(os.path.join(state, "postgres", "data", "PG_VERSION")))

    def test_a_private_cluster_of_release_0_1_0_is_served_with_a_warning(self):
        # Release 0.1.0 made its private cluster with `fulltime` as the bootstrap superuser and
        # no other role; a bootstrap superuser cannot be demoted, so the engine goes on with it
        # and says so, in its log and in the start-up check.
        state = tempfile.mkdtemp(prefix="fulltime-e2e-embedded-old-")
        os.chmod(state, 0o755)
        root = os.path.join(state, "postgres")
        os.mkdir(root, 0o700)
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        made = subprocess.run(as_pg_owner([
            os.path.join(PG_BIN, "initdb"), "-D", os.path.join(root, "data"), "-U", "fulltime",
            "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"]), capture_output=True, text=True)
        self.assertEqual(made.returncode, 0, made.stderr)
        env = engine_env(state_dir=state)
        engine = Engine(env)
        try:
            engine.wait_ready(60)
            self.assertIn("made by an earlier release", engine.log())
            checked = server_settings(engine, env)
            self.assertTrue(checked["settings"]["role_is_superuser"], checked)
            self.assertEqual(len(checked["warnings"]), 1, checked)
            self.assertIn("connects as fulltime, a superuser", checked["warnings"][0])
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())


if __name__ == "__main__":
    unittest.main()
