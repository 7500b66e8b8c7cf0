"""The TypeScript example bet client (examples/typescript/) compiled with Debian's tsc and run on
Node.js with Debian's ws against a real engine, as its README says to use it: it places (and
replays) a bet, reads its balance and every page of its bets, is refused, prints its pushes
across an engine restart (it reconnects), keeps ids above 2^53 exact, and, used as a library
(tests/e2e/ts/client_driver.ts), retries `busy` with the same keys and sends a placement lost
with its connection again, with its key, on the next one.

tsc (node-typescript) and ws (node-ws) are required, not optional: scripts/install-deps installs
them, and without them every test here fails saying so."""

import json
import os
import shutil
import signal
import subprocess
import tempfile

from fixtures import MARKET, OTHER_MARKET
from harness import Engine, wait_until
from money import assert_money_invariants
from test_examples import ExampleClientsTestCase

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "../.."))
# Debian's node-* packages install into /usr/share/nodejs; Debian's own nodejs looks there, a
# Node.js from elsewhere (NodeSource's) only through NODE_PATH.
NODE_PATH = "/usr/share/nodejs"
_build = {}


def tearDownModule():
    if "dir" in _build:
        shutil.rmtree(_build["dir"], ignore_errors=True)


def build():
    """Compiles examples/typescript (with its own tsconfig, as its README says) and the test
    driver, once per run, into a temporary directory; returns it. Raises AssertionError, naming
    what to install, when node, tsc or ws is missing or tsc fails."""
    if "error" in _build:
        raise AssertionError(_build["error"])
    if "dir" in _build:
        return _build["dir"]
    missing = [f"{tool} ({package})" for tool, package in (("node", "nodejs"),
                                                          ("tsc", "node-typescript"))
               if not shutil.which(tool)]
    if not os.path.exists(os.path.join(NODE_PATH, "ws", "package.json")):
        missing.append(f"ws in {NODE_PATH} (node-ws)")
    if missing:
        _build["error"] = ("the TypeScript client needs " + ", ".join(missing) +
                           ": run scripts/install-deps")
        raise AssertionError(_build["error"])
    out = tempfile.mkdtemp(prefix="fulltime-ts-")
    _build["dir"] = out
    for project, into in (("examples/typescript", "examples"), ("tests/e2e/ts", "driver")):
        p = subprocess.run(["tsc", "-p", os.path.join(ROOT, project),
                            "--outDir", os.path.join(out, into)],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            _build["error"] = f"tsc -p {project} failed:\n{p.stdout}{p.stderr}"
            raise AssertionError(_build["error"])
    return out


def node_env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "BET_TOKEN"}
    return {**env, "NODE_PATH": NODE_PATH, **extra}


def process_state(pid):
    """R, S, T (stopped), ...: the third field of /proc/PID/stat (after the name's ")")."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


class TypeScriptExamplesTest(ExampleClientsTestCase):
    def setUp(self):
        self.out = build()  # before the engine: a missing tool fails at once
        super().setUp()

    def bet(self, *args, token=None, env=None):
        """Runs the compiled bet.js (as `node bet.js --url .. --token .. ARGS`)."""
        return self.run_client(["node", os.path.join(self.out, "examples", "bet.js")],
                               self.bets_url, *args, token=token, env=env or node_env())

    def driver(self, mode):
        return subprocess.Popen(
            ["node", os.path.join(self.out, "driver", "tests", "e2e", "ts", "client_driver.js"),
             self.bets_url, self.bettor, mode],
            env=node_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)

    def test_the_typescript_bet_client(self):
        self.send_market(self.engine, MARKET)  # market 100: 1001 at 2.50, 1002 at 3.10
        self.open_accounts(self.engine, [42], "100.00")

        code, out, err = self.bet("place", "--selection", "1001", "--stake", "10.00",
                                  "--odds", "2.50", "--key", "k1")
        self.assertEqual(code, 0, err)
        self.assertEqual((out[0]["type"], out[0]["replayed"]), ("placed", False), out)
        # Money as the wire has it: strings, never numbers.
        self.assertEqual((out[0]["bet"]["stake"], out[0]["balance"]["available"]),
                         ("10.00", "90.00"))
        first = out[0]["bet"]["bet_id"]
        # The same key again, the token from BET_TOKEN as bet.py reads it: the same bet,
        # replayed, not a second one.
        code, out, err = self.bet("place", "--selection", "1001", "--stake", "10.00",
                                  "--odds", "2.50", "--key", "k1",
                                  token=False, env=node_env(BET_TOKEN=self.bettor))
        self.assertEqual((code, out[0]["replayed"], out[0]["bet"]["bet_id"]), (0, True, first),
                         out + [err])
        code, out, err = self.bet("place", "--selection", "1002", "--stake", "5.00",
                                  "--odds", "3.10")
        self.assertEqual((code, out[0]["type"]), (0, "placed"), out + [err])
        # Refused: the odds moved on (exact is the default); exit 1 with the reply.
        code, out, err = self.bet("place", "--selection", "1001", "--stake", "1.00",
                                  "--odds", "2.40")
        self.assertEqual((code, out[0]["type"], out[0]["code"]), (1, "rejected", "odds_changed"))
        # No token at all is bad usage, as in bet.py.
        code, out, err = self.bet("balance", token=False)
        self.assertEqual(code, 2, err)
        self.assertIn("BET_TOKEN", err)

        code, out, err = self.bet("balance")
        self.assertEqual((code, out[0]["available"], out[0]["reserved"]), (0, "85.00", "15.00"))
        # Pages of one bet: the client follows next_before to the end.
        code, out, err = self.bet("bets", "--page-size", "1")
        self.assertEqual(code, 0, err)
        self.assertEqual([b["selection_id"] for b in out], [1002, 1001])
        code, out, err = self.bet("bets", "--status", "settled")
        self.assertEqual((code, out), (0, []), err)

        code, outcomes, err = self.watch_through_a_restart(
            ["node", os.path.join(self.out, "examples", "bet.js"), "--url", self.bets_url,
             "--token", self.bettor, "watch", "--count", "2"], env=node_env())
        self.assertEqual(code, 0, err)
        self.assertEqual(outcomes, [("won", "25.00"), ("lost", "0.00")])
        code, out, err = self.bet("bets", "--status", "settled", "--page-size", "1")
        self.assertEqual(sorted((b["outcome"], b["payout"]) for b in out),
                         [("lost", "0.00"), ("won", "25.00")], err)
        assert_money_invariants(self, self.db_url)

    def test_ids_above_2_53_stay_exact(self):
        # Ids that a producer and an operator chose: JSON.parse would round each of these to
        # its even neighbour (2^53 + 1 to 2^53), and so to another selection or account.
        account, market = 2**53 + 1, 2**62 + 3
        selections = (2**53 + 1, 2**63 - 1)
        self.send_market(self.engine, {
            "type": "market", "market_id": market, "event_id": 2**53 + 7, "name": "Big ids",
            "status": "open", "selections": [{"selection_id": s, "name": f"s{i}", "odds": "2.00"}
                                             for i, s in enumerate(selections)]})
        self.open_accounts(self.engine, [account], "100.00")
        bettor = self.token("account", str(account))

        for i, selection in enumerate(selections):
            code, out, err = self.bet("place", "--selection", str(selection), "--stake", "1.00",
                                      "--odds", "2.00", "--key", f"big{i}", token=bettor)
            self.assertEqual(code, 0, err)
            self.assertEqual((out[0]["bet"]["selection_id"], out[0]["bet"]["account_id"],
                              out[0]["bet"]["market_id"]), (selection, account, market), out)
        code, out, err = self.bet("bets", "--page-size", "1", token=bettor)
        self.assertEqual(code, 0, err)
        self.assertEqual([(b["selection_id"], b["account_id"]) for b in out],
                         [(selections[1], account), (selections[0], account)])

    def test_the_client_library_retries_busy_with_the_same_keys(self):
        self.send_market(self.engine, OTHER_MARKET)
        self.open_accounts(self.engine, [42], "100.00")
        driver = self.driver("busy")
        self.addCleanup(driver.kill)
        out, err = driver.communicate(timeout=120)
        self.assertEqual(driver.returncode, 0, err)
        result = json.loads(out)
        self.assert_placed_once_each(result["bet_ids"], result["busy_retries"])

    def test_the_client_library_sends_a_lost_placement_again_with_its_key(self):
        self.send_market(self.engine, OTHER_MARKET)
        self.open_accounts(self.engine, [42], "100.00")
        driver = self.driver("inflight")
        self.addCleanup(driver.kill)
        self.assertEqual(json.loads(driver.stdout.readline()), {"connection": 1})
        # The engine stopped (not gone: the connection stays up), the placement is sent and
        # gets no answer; then the engine dies, with the request unread.
        pid = self.engine.proc.pid
        os.kill(pid, signal.SIGSTOP)
        wait_until(lambda: process_state(pid) == "T", "the engine did not stop")
        driver.stdin.write("place\n")
        driver.stdin.flush()
        self.assertEqual(json.loads(driver.stdout.readline()), {"placing": True})
        self.engine.kill()
        self.engine = Engine(self.env)
        self.engine.wait_ready()
        self.assertEqual(json.loads(driver.stdout.readline()), {"connection": 2})
        # readline, not communicate: the line may be in stdout's buffer already.
        result = json.loads(driver.stdout.readline() or "null")
        _, err = driver.communicate(timeout=120)
        self.assertEqual(driver.returncode, 0, err)
        self.assertIsNotNone(result, err)
        # Sent again on the new connection, with its key: placed there, once.
        self.assertEqual(result["resent"], 1, result)
        self.assertEqual((result["placed"]["type"], result["placed"]["replayed"]),
                         ("placed", False), result)
        self.assertEqual(self.sql("SELECT count(*) FROM bets")[0][0], 1)
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    import unittest
    unittest.main()
