"""`fulltime rehearse` runs the shipped smoke scenario end to end, once straight against its
own PostgreSQL and once through PgBouncer in transaction pooling mode: every fault of the
scenario is injected (engine SIGKILL, sessions ended, an idle transaction, a duplicate, a
reordered correction, a cancel, a PostgreSQL restart, dropped bettor connections), and every
exit criterion holds: the placement p99 during the burst, the backlog's recovery, zero money
invariant failures, zero lost or doubled acknowledgements, every resulted bet settled. The
report and the plot are checked for what an operator reads in them.

The timing criteria are loosened here (a p99 limit of a minute, the backlog's recovery within
the run): tests run on shared machines and under the sanitizer build, so speed is shown by the
documented runs (docs/rehearsal.md), not asserted here. The money and acknowledgement criteria
stay as they are: zero."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest
import xml.dom.minidom

from harness import BINARY, engine_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = os.path.join(ROOT, "config", "scenarios", "smoke.json")
FAULTS = {"duplicate_result", "terminate_backends placement", "idle_in_transaction",
          "kill_engine", "terminate_backends settlement", "correct_result", "cancel_market",
          "restart_postgres", "drop_connections"}


class RehearsalSmokeTest(unittest.TestCase):
    def rehearse(self, *extra):
        out = tempfile.mkdtemp(prefix="fulltime-rehearsal-")
        self.addCleanup(shutil.rmtree, out, True)
        with open(SMOKE) as f:
            scenario = json.load(f)
        scenario["criteria"]["placement_p99_ms_max"] = 60000
        scenario["criteria"]["backlog_within_s"] = (scenario["timeline"]["duration_s"]
                                                    - scenario["timeline"]["burst_at_s"])
        path = os.path.join(out, "scenario.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        env = engine_env()
        p = subprocess.run([BINARY, "rehearse", path, "--out", out, *extra], env=env,
                           capture_output=True, text=True, timeout=600)
        report_path = os.path.join(out, "smoke.json")
        self.assertTrue(os.path.exists(report_path),
                        f"no report (exit {p.returncode}):\n{p.stdout}\n{p.stderr}")
        with open(report_path) as f:
            report = json.load(f)
        failed = [c for c in report["criteria"] if not c["passed"]]
        self.assertEqual(p.returncode, 0,
                         f"criteria failed: {json.dumps(failed, indent=1)}\n"
                         f"fault errors: {report['fault_errors']}\n"
                         f"acknowledgement problems: "
                         f"{report['bettors']['acknowledgement_problems']}\n{p.stdout}\n"
                         f"{p.stderr[-3000:]}")
        self.assertTrue(report["passed"])
        self.assertIn("rehearsal smoke: PASSED", p.stdout)
        return out, report

    def check_report(self, out, report):
        by_name = {c["name"]: c for c in report["criteria"]}
        self.assertGreater(by_name["placement_p99_ms"]["measured"], 0)
        self.assertIsNotNone(report["burst_applied_s"])
        names = set(by_name)
        self.assertEqual(names, {"placement_p99_ms", "backlog_recovered_s", "invariant_failures",
                                 "lost_acknowledgements", "doubled_acknowledgements",
                                 "unsettled_bets"})
        # Every fault happened, after the burst was posted.
        whats = [m["what"] for m in report["timeline"]]
        self.assertEqual(whats[0], "burst")
        self.assertTrue(FAULTS <= set(whats), whats)
        self.assertEqual(report["fault_errors"], [])
        for m in report["timeline"]:
            self.assertNotIn("FAILED", m["detail"])
        by_what = {m["what"]: m["detail"] for m in report["timeline"]}
        self.assertIn("acknowledged as a duplicate", by_what["duplicate_result"])
        self.assertRegex(by_what["terminate_backends placement"], r"^[1-9]\d* sessions")
        # The bettors placed, some were sent again (dropped connections, the engine killed),
        # and each request has its final answer.
        bettors = report["bettors"]
        self.assertGreater(bettors["requests"], 3000)
        self.assertGreater(bettors["outcomes"].get("placed", 0), 0.95 * bettors["requests"])
        self.assertNotIn("unanswered", bettors["outcomes"])
        self.assertGreater(bettors["reconnects"], 20)
        self.assertGreater(bettors["retries"], 0)
        self.assertEqual(bettors["acknowledgement_problems"], [])
        # The audit ran every invariant, and each passed.
        self.assertGreater(len(report["audit"]), 5)
        self.assertTrue(all(a["passed"] for a in report["audit"]), report["audit"])
        # A second per second of the night, and the backlog read through it.
        self.assertEqual(len(report["per_second"]), 40)
        self.assertGreater(len(report["backlog"]), 40)
        self.assertGreater(max(b["age_ms"] for b in report["backlog"]), 0)
        # The plot is well-formed SVG with the burst and the faults marked.
        with open(os.path.join(out, "smoke.svg")) as f:
            svg = f.read()
        xml.dom.minidom.parseString(svg)
        for what in ("burst", "kill_engine", "restart_postgres"):
            self.assertIn(f">{what}</text>", svg)

    def test_smoke_direct(self):
        out, report = self.rehearse()
        self.assertFalse(report["scenario"]["pgbouncer"])
        self.check_report(out, report)

    def test_smoke_through_pgbouncer(self):
        out, report = self.rehearse("--pgbouncer")
        self.assertTrue(report["scenario"]["pgbouncer"])
        self.check_report(out, report)

    def test_a_bad_scenario_is_refused_before_anything_starts(self):
        d = tempfile.mkdtemp(prefix="fulltime-rehearsal-")
        self.addCleanup(shutil.rmtree, d, True)
        with open(SMOKE) as f:
            doc = json.load(f)
        doc["faults"].append({"kind": "unplug", "at_s": 3})
        path = os.path.join(d, "bad.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = subprocess.run([BINARY, "rehearse", path, "--out", d], env=engine_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn('faults[9].kind: unknown fault "unplug"', p.stderr)
        self.assertEqual(os.listdir(d), ["bad.json"])


if __name__ == "__main__":
    unittest.main()
