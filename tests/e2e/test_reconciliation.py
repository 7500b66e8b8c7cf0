"""End-to-end reconciliation and audit, through the public interfaces only: POST /v1/reconcile
and GET /v1/incidents with and without the admin token, /metrics, and the `fulltime reconcile`
and `fulltime audit` commands against a good database and one corrupted by hand. The engine
reports the corruption as one incident and never corrects it; fixed by hand, the next run
closes it."""

import json
import unittest

from harness import Engine, EngineTestCase, engine_env, run_cli
from money import assert_money_invariants

MARKET = {"type": "market", "market_id": 100, "event_id": 10, "name": "Final: winner",
          "status": "open",
          "selections": [{"selection_id": 1001, "name": "Home", "odds": "2.50"}]}


class ReconciliationTest(EngineTestCase):
    # Scheduled runs off: every run in this test is one the test asked for.
    ENGINE_ENV = {"FULLTIME_RECONCILE_INTERVAL_MS": "0",
                  "FULLTIME_RECONCILE_CHUNK_ACCOUNTS": "2"}

    def auth(self):
        return {"Authorization": "Bearer " + self.admin}

    def reconcile(self, engine):
        status, body = engine.post_json("/v1/reconcile", {}, self.admin)
        self.assertEqual(status, 200, body)
        return body

    def incidents(self, engine, query=""):
        status, body = engine.get_json("/v1/incidents" + query, self.auth())
        self.assertEqual(status, 200, body)
        self.assertEqual(list(body.keys()), ["incidents"])
        return body["incidents"]

    def test_drift_is_reported_once_never_corrected_and_closed_when_fixed(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, MARKET)
            self.open_accounts(engine, (41, 42, 43), "100.00", key="d{}")

            # Both routes take the admin token, and only it.
            for token in (None, self.producer, self.token("account", "42"), "garbage"):
                headers = {"Authorization": "Bearer " + token} if token else {}
                status, _ = engine.get("/v1/incidents", headers)
                self.assertEqual(status, 401, token)
                status, _ = engine.post_json("/v1/reconcile", {}, token or "")
                self.assertEqual(status, 401, token)

            clean = self.reconcile(engine)
            self.assertEqual(clean["accounts_checked"], 3)
            self.assertEqual(clean["chunks"], 2)
            self.assertEqual(clean["incidents_opened"], 0)
            self.assertEqual(clean["incidents_open"], 0)
            self.assertEqual(clean["currencies"],
                             [{"currency": "EUR", "accounts": 3, "imbalance": "0.00"}])
            self.assertEqual(self.incidents(engine), [])

            # Corrupt one balance row by hand.
            self.sql("UPDATE accounts SET available = available + 1 WHERE account_id = 42")
            found = self.reconcile(engine)
            self.assertEqual(found["incidents_opened"], 1)
            self.assertEqual(found["incidents_open"], 1)
            self.assertEqual(found["incidents_open_by_kind"]["balance_drift"], 1)
            [incident] = self.incidents(engine)
            self.assertEqual(incident["kind"], "balance_drift")
            self.assertEqual(incident["account_id"], 42)
            self.assertEqual(incident["side"], "available")
            self.assertEqual(incident["currency"], "EUR")
            self.assertEqual(incident["expected"], "100.00")
            self.assertEqual(incident["actual"], "100.01")
            self.assertEqual(incident["runs"], 1)
            self.assertIsNone(incident["resolved_at"])
            self.assertIsNone(incident["market_id"])
            self.assertIsNone(incident["bet_id"])
            # The engine never corrects it: the balance it serves is the corrupted row.
            status, account = engine.get_json("/v1/accounts/42", self.auth())
            self.assertEqual(account["available"], "100.01")

            # Seen again: the same incident, not a second one.
            again = self.reconcile(engine)
            self.assertEqual(again["incidents_opened"], 0)
            self.assertEqual(again["incidents_seen_again"], 1)
            [same] = self.incidents(engine, "?status=all")
            self.assertEqual(same["incident_id"], incident["incident_id"])
            self.assertEqual(same["runs"], 2)

            status, metrics = engine.get("/metrics")
            self.assertIn('fulltime_incidents_open{kind="balance_drift"} 1', metrics)
            self.assertIn('fulltime_incidents_open{kind="overdue_reservation"} 0', metrics)
            self.assertIn('fulltime_reconcile_runs_total{outcome="ok"} 3', metrics)
            self.assertIn("fulltime_reconcile_accounts_checked_total 9", metrics)
            self.assertIn("fulltime_reconcile_last_run_duration_seconds", metrics)
            self.assertIn("fulltime_reconcile_last_success_timestamp_seconds", metrics)

            # The operator's commands see it too, on the live database.
            code, out, err = run_cli(["audit"], self.env)
            self.assertEqual(code, 1, out + err)
            self.assertRegex(out, r"(?m)^FAIL  balances_match_ledger  \(1 violations\)")
            self.assertRegex(out, r"(?m)^FAIL  no_open_reconciliation_incident  \(1 violations\)")
            self.assertRegex(out, r"(?m)^PASS  ledger_sums_to_zero  \(0 violations\)$")
            code, out, err = run_cli(["reconcile", "--json"], self.env)
            self.assertEqual(code, 1, out + err)
            self.assertEqual(json.loads(out)["incidents_seen_again"], 1)

            # Filters.
            self.assertEqual(len(self.incidents(engine, "?kind=balance_drift&limit=1")), 1)
            self.assertEqual(self.incidents(engine, "?kind=currency_mismatch"), [])
            self.assertEqual(self.incidents(engine, "?account_id=41"), [])
            self.assertEqual(self.incidents(engine, "?status=resolved"), [])
            for bad in ("?status=closed", "?kind=nope", "?limit=0", "?limit=100000",
                        "?account_id=x"):
                status, body = engine.get_json("/v1/incidents" + bad, self.auth())
                self.assertEqual(status, 400, bad)
                self.assertEqual(body["code"], "invalid_request")

            # Fixed by hand: the next run closes it.
            self.sql("UPDATE accounts SET available = available - 1 WHERE account_id = 42")
            fixed = self.reconcile(engine)
            self.assertEqual(fixed["incidents_resolved"], 1)
            self.assertEqual(fixed["incidents_open"], 0)
            self.assertEqual(self.incidents(engine), [])
            [closed] = self.incidents(engine, "?status=resolved")
            self.assertEqual(closed["incident_id"], incident["incident_id"])
            self.assertIsNotNone(closed["resolved_at"])
            self.assertTrue(closed["resolution"].startswith("not found by the reconciliation"))
        finally:
            self.assertEqual(engine.stop(), 0)

        code, out, err = run_cli(["audit"], self.env)
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("FAIL", out)
        self.assertEqual(out.count("PASS"), 11, out)
        code, out, err = run_cli(["reconcile"], self.env)
        self.assertEqual(code, 0, out + err)
        self.assertIn("reconciled 3 accounts", out)
        assert_money_invariants(self, self.db_url)

    def test_commands_fail_cleanly_without_a_database(self):
        env = engine_env({"FULLTIME_DATABASE_URL": "host=/nonexistent-socket-dir port=1 "
                                                   "user=nobody dbname=nothing",
                          "FULLTIME_DATABASE_CONNECT_TIMEOUT_MS": "2000"})
        for command in (["audit"], ["reconcile"]):
            code, out, err = run_cli(command, env)
            self.assertEqual(code, 3, out + err)
            self.assertIn("cannot reach the database", err)
        code, out, err = run_cli(["audit", "--bogus"], self.env)
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()
