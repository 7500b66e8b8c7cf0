"""The example clients in examples/python/ run against a real engine, as their README says to
use them: the feed producer sends a market and a result, the bet client places (and replays) a
bet, reads its balance and every page of its bets, is refused, prints its pushes across an engine
restart (it reconnects), and, used as a library with one request in flight allowed per
connection, retries `busy` with the same keys until every bet is placed once."""

import asyncio
import json
import os
import socket
import subprocess
import sys

from fixtures import OTHER_MARKET
from harness import Engine, EngineTestCase
from money import assert_money_invariants

EXAMPLES = os.path.realpath(os.path.join(os.path.dirname(__file__), "../../examples/python"))
sys.path.insert(0, EXAMPLES)

from fulltime_client import BetClient  # noqa: E402  (the example, not a copy)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ExampleClientsTestCase(EngineTestCase):
    """An engine on a fixed port, so that the engine restarted by watch_through_a_restart is
    where a watching client reconnects, and with one request in flight per connection, so that
    concurrent placements on one connection are answered `busy`; `self.bettor` is account 42's
    token. No tests of its own: test_examples_ts.py runs the TypeScript client on it too."""

    def setUp(self):
        self.port = free_port()
        self.ENGINE_ENV = {"FULLTIME_LISTEN": f"127.0.0.1:{self.port}",
                           "FULLTIME_GATEWAY_INFLIGHT_PER_CONNECTION_MAX": "1"}
        super().setUp()
        self.engine = Engine(self.env)
        self.addCleanup(lambda: self.engine.stop())
        self.engine.wait_ready()
        self.bettor = self.token("account", "42")
        self.bets_url = f"ws://127.0.0.1:{self.port}/v1/bets"

    def run_client(self, command, url, *args, token=None, env=None):
        """Runs an example client (`command`, e.g. [python, bet.py]) with --url, --token (the
        bettor's by default; none when token is False) and `args`; returns its exit status,
        the JSON objects it printed and its stderr."""
        tokens = [] if token is False else ["--token", token or self.bettor]
        p = subprocess.run([*command, "--url", url, *tokens, *args], env=env,
                           capture_output=True, text=True, timeout=120)
        return p.returncode, [json.loads(line) for line in p.stdout.splitlines()], p.stderr

    def run_example(self, script, *args, token=None):
        """Runs examples/python/SCRIPT (bet.py or feed.py) on this engine."""
        url = self.bets_url if script == "bet.py" else f"http://127.0.0.1:{self.port}"
        return self.run_client([sys.executable, os.path.join(EXAMPLES, script)], url, *args,
                               token=token)

    def watch_through_a_restart(self, watch, env=None):
        """Runs `watch` (a bet client's `watch --count 2` command line), restarts the engine
        once it says it is connected, and sends market 100's home win (feed.py) once it says it
        is connected again: it reconnects on its own and prints the pushes of the result sent
        after it. Returns its exit status, the (outcome, payout) it printed in bet_id order,
        and its stderr."""
        proc = subprocess.Popen(watch, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        self.addCleanup(proc.kill)
        self.assertEqual(json.loads(proc.stdout.readline()), {"watching": True, "connection": 1})
        self.assertEqual(self.engine.stop(), 0, self.engine.log())
        self.engine = Engine(self.env)
        self.engine.wait_ready()
        self.assertEqual(json.loads(proc.stdout.readline()), {"watching": True, "connection": 2})
        code, out, err = self.run_example(
            "feed.py", "result", "--market", "100", "--seq", "1", "--key", "final-r1",
            "--win", "1001", "--lose", "1002", token=self.producer)
        self.assertEqual((code, out[0]["duplicate"]), (0, False), out + [err])
        pushed, err = proc.communicate(timeout=120)
        outcomes = sorted((m["bet_id"], m["outcome"], m["payout"])
                          for m in map(json.loads, pushed.splitlines()))
        return proc.returncode, [o[1:] for o in outcomes], err

    def assert_placed_once_each(self, bet_ids, busy_retries):
        """After 20 placements at once on one connection (market 200's OTHER_MARKET, keys
        b0..b19), with one request in flight allowed: every one placed, once."""
        self.assertEqual(len(set(bet_ids)), 20)
        # The others were answered busy and sent again.
        self.assertGreater(busy_retries, 0)
        self.assertEqual(self.sql("SELECT count(*) FROM bets")[0][0], 20)
        assert_money_invariants(self, self.db_url)


class ExamplesTest(ExampleClientsTestCase):
    def test_the_example_clients(self):
        code, out, err = self.run_example(
            "feed.py", "market", "--market", "100", "--event", "10", "--name", "Final",
            "--selection", "1001:Home:2.50", "--selection", "1002:Away:3.10", token=self.producer)
        self.assertEqual((code, out[0]["type"]), (0, "ack"), out + [err])
        self.open_accounts(self.engine, [42], "100.00")

        code, out, err = self.run_example("bet.py", "place", "--selection", "1001",
                                          "--stake", "10.00", "--odds", "2.50", "--key", "k1")
        self.assertEqual(code, 0, err)
        self.assertEqual((out[0]["type"], out[0]["replayed"]), ("placed", False), out)
        first = out[0]["bet"]["bet_id"]
        # The same key again: the same bet, replayed, not a second one.
        code, out, err = self.run_example("bet.py", "place", "--selection", "1001",
                                          "--stake", "10.00", "--odds", "2.50", "--key", "k1")
        self.assertEqual((code, out[0]["replayed"], out[0]["bet"]["bet_id"]), (0, True, first))
        code, out, err = self.run_example("bet.py", "place", "--selection", "1002",
                                          "--stake", "5.00", "--odds", "3.10")
        self.assertEqual((code, out[0]["type"]), (0, "placed"), out + [err])
        # Refused: the odds moved on (exact is the default); exit 1 with the reply.
        code, out, err = self.run_example("bet.py", "place", "--selection", "1001",
                                          "--stake", "1.00", "--odds", "2.40")
        self.assertEqual((code, out[0]["type"], out[0]["code"]), (1, "rejected", "odds_changed"))

        code, out, err = self.run_example("bet.py", "balance")
        self.assertEqual((code, out[0]["available"], out[0]["reserved"]), (0, "85.00", "15.00"))
        # Pages of one bet: the client follows next_before to the end.
        code, out, err = self.run_example("bet.py", "bets", "--page-size", "1")
        self.assertEqual(code, 0, err)
        self.assertEqual([b["selection_id"] for b in out], [1002, 1001])

        # A watching client, then an engine restart: it reconnects on its own and prints the
        # pushes of the result sent after it.
        code, outcomes, err = self.watch_through_a_restart([
            sys.executable, os.path.join(EXAMPLES, "bet.py"), "--url", self.bets_url,
            "--token", self.bettor, "watch", "--count", "2"])
        self.assertEqual(code, 0, err)
        self.assertEqual(outcomes, [("won", "25.00"), ("lost", "0.00")])
        # Sending the result again is a duplicate (the producer's safe retry).
        code, out, err = self.run_example(
            "feed.py", "result", "--market", "100", "--seq", "1", "--key", "final-r1",
            "--win", "1001", "--lose", "1002", token=self.producer)
        self.assertEqual((code, out[0]["duplicate"]), (0, True), out + [err])
        assert_money_invariants(self, self.db_url)

    def test_the_client_library_retries_busy_with_the_same_keys(self):
        self.send_market(self.engine, OTHER_MARKET)
        self.open_accounts(self.engine, [42], "100.00")

        async def scenario():
            async with BetClient(self.bets_url, self.bettor) as client:
                replies = await asyncio.gather(*(
                    client.place(2001, "1.00", "2.00", idempotency_key=f"b{i}")
                    for i in range(20)))
                return replies, client.busy_retries

        replies, busy_retries = asyncio.run(scenario())
        self.assert_placed_once_each([r["bet"]["bet_id"] for r in replies], busy_retries)


if __name__ == "__main__":
    import unittest
    unittest.main()
