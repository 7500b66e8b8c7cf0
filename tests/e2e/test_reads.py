"""End-to-end: the read side with a real streaming standby (docs/architecture.md, "Reads").

The engine runs with FULLTIME_READ_DATABASE_URL on a hot standby of the test cluster
(standby.py). A bettor's `balance` and `bets` go to the standby while it is fresh enough; with its
replay paused, a bettor still sees their own bet at once (read-your-writes: the read waits for the
standby or goes to the primary), and once the standby is further behind than a read accepts, the
read goes to the primary; with the standby stopped, reads go to the primary with no error, and
back to the standby once it runs again. `/metrics` says where each read went
(fulltime_reads_total{target,route}). Another case: a read model rebuilt from scratch
(`fulltime project --rebuild`) equals the live one, and `bets` pages walk a bettor's history
with `before` / `next_before`. Money invariants (the audit checks the read model too) at the end
of each."""

import asyncio
import json
import re
import time
import unittest
import urllib.request

import websockets.client

from fixtures import HOME_WINS, MARKET, OTHER_MARKET
from harness import Engine, EngineTestCase, run_cli
from money import assert_money_invariants
from standby import Standby

DEADLINE_S = 30
# The standby is too stale for a balance past this; the primary then answers.
BALANCE_STALENESS_MS = 1000


def metrics(engine):
    with urllib.request.urlopen(engine.url("/metrics"), timeout=10) as r:
        return r.read().decode()


def metric(text, name, labels=""):
    """The value of one series in a /metrics text (None when absent)."""
    pattern = "^" + re.escape(name) + (re.escape("{" + labels + "}") if labels else "") + \
        r" (\S+)$"
    m = re.search(pattern, text, re.MULTILINE)
    return float(m.group(1)) if m else None


def routed(engine, target, route):
    return metric(metrics(engine), "fulltime_reads_total",
                  f'target="{target}",route="{route}"') or 0.0


class Bettor:
    """One WebSocket session of a bettor: requests answered in order (one in flight)."""

    def __init__(self, engine, token):
        self.url = engine.ws_url("/v1/bets?token=" + token)
        self.ws = None
        self.n = 0

    async def __aenter__(self):
        self.ws = await websockets.client.connect(self.url)
        return self

    async def __aexit__(self, *exc):
        await self.ws.close()

    async def ask(self, message):
        self.n += 1
        rid = f"r{self.n}"
        await self.ws.send(json.dumps({**message, "id": rid}))
        while True:
            reply = json.loads(await asyncio.wait_for(self.ws.recv(), DEADLINE_S))
            if reply.get("id") == rid:
                return reply

    async def balance(self):
        reply = await self.ask({"type": "balance"})
        assert reply["type"] == "balance", reply
        return reply["available"], reply["reserved"]

    async def bet_ids(self, **request):
        reply = await self.ask({"type": "bets", **request})
        assert reply["type"] == "bets", reply
        return [b["bet_id"] for b in reply["bets"]]

    async def place(self, key, selection=1001, stake="10.00", odds="2.50"):
        reply = await self.ask({"type": "place", "idempotency_key": key,
                                "selection_id": selection, "stake": stake, "odds": odds})
        assert reply["type"] == "placed", reply
        return reply["bet"]["bet_id"]


def start_alice_and_bob(case, engine):
    """Once the engine is ready: MARKET open, accounts 42 (alice) and 43 (bob) with 100.00
    each; returns their tokens."""
    engine.wait_ready()
    case.send_market(engine, MARKET)
    case.open_accounts(engine, [42, 43], "100.00")
    return case.token("account", "42"), case.token("account", "43")


class StandbyReadsTest(EngineTestCase):
    ENGINE_ENV = {
        "FULLTIME_READ_BALANCE_STALENESS_MS": str(BALANCE_STALENESS_MS),
        "FULLTIME_READ_BETS_STALENESS_MS": str(BALANCE_STALENESS_MS),
        # Long enough for a standby of a cluster that commits asynchronously (the test
        # cluster's synchronous_commit is off: WAL reaches the standby within wal_writer_delay).
        "FULLTIME_READ_RYW_WAIT_MS": "500",
        "FULLTIME_READ_SAMPLE_INTERVAL_MS": "50",
    }

    @classmethod
    def setUpClass(cls):
        cls.standby = Standby(slot=True)
        cls.addClassCleanup(cls.standby.destroy)

    def setUp(self):
        super().setUp()
        self.env["FULLTIME_READ_DATABASE_URL"] = self.standby.url(self.db_name)

    def wait_metric(self, engine, what, predicate):
        until = time.monotonic() + DEADLINE_S
        while True:
            text = metrics(engine)
            if predicate(text):
                return text
            self.assertLess(time.monotonic(), until, f"never: {what}\n" + engine.log())
            time.sleep(0.05)

    def wait_standby_fresh(self, engine):
        """Waits until the standby replayed everything and the engine dates it fresh."""
        self.standby.wait_caught_up()
        self.wait_metric(engine, "the standby fresh", lambda t: (
            metric(t, "fulltime_standby_up") == 1.0
            and 0 <= (metric(t, "fulltime_standby_staleness_seconds") or -1)
            < BALANCE_STALENESS_MS / 2000))

    def test_reads_follow_the_standby_and_a_bettor_always_sees_their_own_bet(self):
        engine = Engine(self.env)
        try:
            alice, bob = start_alice_and_bob(self, engine)
            self.wait_standby_fresh(engine)

            async def scenario():
                async with Bettor(engine, alice) as a, Bettor(engine, bob) as b:
                    # Fresh: the standby answers.
                    fresh = routed(engine, "standby", "fresh")
                    self.assertEqual(await b.balance(), ("100.00", "0.00"))
                    self.assertGreater(routed(engine, "standby", "fresh"), fresh)

                    # Replay paused: alice's own bet shows in her very next reads.
                    self.standby.pause_replay()
                    bet = await a.place("k1")
                    self.assertEqual(await a.balance(), ("90.00", "10.00"))
                    self.assertEqual(await a.bet_ids(), [bet])
                    self.assertGreater(routed(engine, "primary", "behind_write"), 0)
                    # And on another connection of hers (a second device): the engine knows
                    # the account's newest write, not only the session's.
                    async with Bettor(engine, alice) as a2:
                        self.assertEqual(await a2.balance(), ("90.00", "10.00"))
                        self.assertEqual(await a2.bet_ids(), [bet])

                    # Money moved by someone else (a deposit) shows on the primary once the
                    # standby is further behind than a balance accepts.
                    status, body = engine.post_json("/v1/accounts/43/deposits",
                                                    {"amount": "5.00", "key": "dep-43-2"},
                                                    self.admin)
                    self.assertIn(status, (200, 201), body)
                    self.wait_metric(engine, "the standby stale", lambda t: (
                        metric(t, "fulltime_standby_staleness_seconds") or 0)
                        > BALANCE_STALENESS_MS / 1000)
                    stale = routed(engine, "primary", "stale")
                    self.assertEqual(await b.balance(), ("105.00", "0.00"))
                    self.assertGreater(routed(engine, "primary", "stale"), stale)

                    # Resumed: the standby answers again, and has it all.
                    self.standby.resume_replay()
                    self.wait_standby_fresh(engine)
                    fresh = routed(engine, "standby", "fresh")
                    self.assertEqual(await b.balance(), ("105.00", "0.00"))
                    self.assertEqual(await a.balance(), ("90.00", "10.00"))
                    self.assertGreater(routed(engine, "standby", "fresh"), fresh)

                    # Stopped: the primary answers, and nothing fails.
                    self.standby.stop()
                    second = await a.place("k2", stake="5.00")
                    self.assertEqual(await a.balance(), ("85.00", "15.00"))
                    self.assertEqual(await a.bet_ids(), [second, bet])
                    self.assertEqual(await b.balance(), ("105.00", "0.00"))
                    text = metrics(engine)
                    self.assertGreater(
                        (metric(text, "fulltime_reads_total",
                                'target="primary",route="standby_down"') or 0)
                        + (metric(text, "fulltime_reads_total",
                                  'target="primary",route="standby_failed"') or 0), 0)

                    # Started again: back to the standby.
                    self.standby.start()
                    self.wait_standby_fresh(engine)
                    fresh = routed(engine, "standby", "fresh")
                    self.assertEqual(await b.balance(), ("105.00", "0.00"))
                    self.assertGreater(routed(engine, "standby", "fresh"), fresh)

            asyncio.run(scenario())

            # The primary's view of the standby and its slot (the peak sampler's), and the
            # router's, in /metrics and /v1/diagnostics.
            text = self.wait_metric(engine, "the slot in /metrics", lambda t: re.search(
                r'^fulltime_db_replication_slot_wal_status\{slot="' + re.escape(self.standby.name)
                + r'",status="reserved"\} 1$', t, re.MULTILINE))
            self.assertIsNotNone(metric(text, "fulltime_db_replication_slot_safe_wal_size_bytes",
                                        f'slot="{self.standby.name}"'))
            # The sampler reads pg_stat_replication once per interval: the latest sample may
            # be one taken while the standby was stopped or reconnecting, so wait for one that
            # shows it streaming again.
            until = time.monotonic() + DEADLINE_S
            while True:
                status, diagnostics = engine.get_json(
                    "/v1/diagnostics", {"Authorization": "Bearer " + self.admin})
                self.assertEqual(status, 200, diagnostics)
                latest = diagnostics["latest"]
                if latest.get("database_ok") and self.standby.name in [
                        r["name"] for r in latest["replicas"]]:
                    break
                self.assertLess(time.monotonic(), until,
                                f"the standby never in diagnostics: {latest}")
                time.sleep(0.05)
            reads = diagnostics["reads"]
            self.assertTrue(reads["standby"])
            self.assertTrue(reads["standby_up"])
            self.assertGreater(reads["routes"]["fresh"], 0)
            self.assertIn(self.standby.name, [s["name"] for s in latest["slots"]])
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)


class OwnWritesTest(EngineTestCase):
    # No projector in this engine: the read model never shows a new bet, so only
    # read-your-writes can (the page then comes from the write tables).
    ENGINE_ENV = {"FULLTIME_READ_PROJECTOR_INTERVAL_MS": "0", "FULLTIME_READ_RYW_WAIT_MS": "50"}

    def test_a_bettor_sees_their_bet_on_every_connection_and_only_theirs_wait(self):
        engine = Engine(self.env)
        try:
            alice, bob = start_alice_and_bob(self, engine)

            async def scenario():
                async with Bettor(engine, alice) as a:
                    bet = await a.place("own-1")
                # A connection opened after the first one closed (a client that connects per
                # command, as examples/python/bet.py does).
                async with Bettor(engine, alice) as again, Bettor(engine, bob) as b:
                    behind = metric(metrics(engine), "fulltime_reads_behind_own_write_total")
                    self.assertEqual(await again.bet_ids(), [bet])
                    self.assertEqual(await again.balance(), ("90.00", "10.00"))
                    self.assertEqual(metric(metrics(engine), "fulltime_reads_behind_own_write_total"),
                                     behind + 1)
                    # Bob wrote nothing: his page comes from the (empty) read model at once.
                    self.assertEqual(await b.bet_ids(), [])
                    self.assertEqual(metric(metrics(engine), "fulltime_reads_behind_own_write_total"),
                                     behind + 1)

            asyncio.run(scenario())
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)


class ReadModelTest(EngineTestCase):
    def wait_projected(self):
        """Waits until the projector's cursor is past every outbox row."""
        self.wait_for("SELECT 1 FROM outbox_cursors c WHERE c.consumer = 'projector' "
                      "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE (o.xact_id, o.outbox_id) "
                      "> (c.last_xact_id, c.last_outbox_id))")

    def model(self):
        return (self.sql("SELECT * FROM bet_views ORDER BY account_id, bet_id"),
                self.sql("SELECT market_id, currency, bets, stake, open_bets, open_stake, "
                         "settled_bets, payout FROM market_views ORDER BY market_id, currency"))

    def test_pages_of_history_and_a_rebuilt_model_equal_to_the_live_one(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, MARKET)
            self.send_market(engine, OTHER_MARKET)
            self.open_accounts(engine, [42, 43], "1000.00")
            alice, bob = self.token("account", "42"), self.token("account", "43")

            async def place_many():
                async with Bettor(engine, alice) as a, Bettor(engine, bob) as b:
                    ids = []
                    for i in range(23):
                        ids.append(await a.place(f"a{i}", selection=1001 if i % 2 else 2001,
                                                 stake="1.00", odds="2.50" if i % 2 else "2.00"))
                    await b.place("b0", selection=1002, stake="3.00", odds="3.10")
                    return ids
            alice_bets = asyncio.run(place_many())

            status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
            self.assertEqual(status, 200, body)
            self.wait_for("SELECT 1 FROM settlement_progress WHERE market_id = 100 "
                          "AND applied_seq >= 1")
            self.wait_projected()

            async def walk(status_filter, limit):
                async with Bettor(engine, alice) as a:
                    seen, before = [], None
                    while True:
                        request = {"type": "bets", "status": status_filter, "limit": limit}
                        if before is not None:
                            request["before"] = before
                        reply = await a.ask(request)
                        self.assertEqual(reply["type"], "bets", reply)
                        seen += reply["bets"]
                        before = reply["next_before"]
                        if before is None:
                            return seen
            every = asyncio.run(walk("all", 5))
            self.assertEqual([b["bet_id"] for b in every], sorted(alice_bets, reverse=True))
            settled = asyncio.run(walk("settled", 4))
            # The odd ones were on market 100's home, which won: settled at 2.50.
            self.assertEqual([b["bet_id"] for b in settled],
                             sorted(alice_bets[1::2], reverse=True))
            self.assertTrue(all(b["outcome"] == "won" and b["payout"] == "2.50"
                                for b in settled))
            still_open = asyncio.run(walk("open", 200))
            self.assertEqual([b["bet_id"] for b in still_open],
                             sorted(alice_bets[0::2], reverse=True))

            # The operators' summaries, from the same read model.
            status, summary = engine.get_json("/v1/markets/100/summary",
                                              {"Authorization": "Bearer " + self.admin})
            self.assertEqual(status, 200, summary)
            self.assertEqual(summary["currencies"], [{
                "currency": "EUR", "bets": 12, "stake": "14.00", "open_bets": 0,
                "open_stake": "0.00", "settled_bets": 12, "payout": "27.50",
                "updated_at": summary["currencies"][0]["updated_at"]}])
            status, summary = engine.get_json("/v1/markets/200/summary",
                                              {"Authorization": "Bearer " + self.admin})
            self.assertEqual(status, 200, summary)
            self.assertEqual((summary["currencies"][0]["bets"],
                              summary["currencies"][0]["open_bets"],
                              summary["currencies"][0]["open_stake"]), (12, 12, "12.00"))
            status, summary = engine.get_json("/v1/markets/999/summary",
                                              {"Authorization": "Bearer " + self.admin})
            self.assertEqual((status, summary["currencies"]), (200, []))
            status, _ = engine.get("/v1/markets/100/summary")
            self.assertEqual(status, 401)

            live = self.model()
            code, out, err = run_cli(["project", "--rebuild"], self.env)
            self.assertEqual(code, 0, out + err)
            self.assertEqual(self.model(), live)
            code, out, err = run_cli(["project", "--verify"], self.env)
            self.assertEqual(code, 0, out + err)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    unittest.main()
