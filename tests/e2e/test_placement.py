"""End-to-end placement over the public protocol with Python's `websockets` library (not our
code): the catalog from the feed, an account from the operator API, bets placed and replayed,
and a SIGKILL of the engine while placements are in flight. Money invariants after each."""

import asyncio
import json
import signal
import unittest

import websockets.client
import websockets.exceptions

from fixtures import MARKET
from harness import Engine, EngineTestCase
from money import assert_money_invariants


class PlacementTest(EngineTestCase):
    def setUp(self):
        super().setUp()
        self.bettor = self.token("account", "42")

    def prepare(self, engine, deposit="100.00"):
        self.send_market(engine, MARKET)
        self.open_accounts(engine, [42], deposit, key="dep-1")

    def test_place_replay_and_refusals(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.prepare(engine)

            async def scenario():
                url = engine.ws_url("/v1/bets")
                async with websockets.client.connect(
                        url, extra_headers={"Authorization": "Bearer " + self.bettor}) as ws:
                    async def ask(message):
                        await ws.send(json.dumps(message))
                        return json.loads(await asyncio.wait_for(ws.recv(), 10))

                    place = {"type": "place", "id": "c1", "idempotency_key": "k1",
                             "selection_id": 1001, "stake": "10.00", "odds": "2.50"}
                    first = await ask(place)
                    self.assertEqual(first["type"], "placed", first)
                    self.assertEqual(first["id"], "c1")
                    self.assertFalse(first["replayed"])
                    bet = first["bet"]
                    self.assertEqual((bet["account_id"], bet["market_id"], bet["selection_id"]),
                                     (42, 100, 1001))
                    self.assertEqual((bet["stake"], bet["odds"]), ("10.00", "2.50"))
                    self.assertEqual(first["balance"], {"available": "90.00", "reserved": "10.00"})

                    again = await ask(dict(place, id="c2"))
                    self.assertEqual(again["type"], "placed")
                    self.assertTrue(again["replayed"])
                    self.assertEqual(again["id"], "c2")
                    self.assertEqual(again["bet"], bet)
                    self.assertEqual(again["balance"], first["balance"])

                    reused = await ask(dict(place, id="c3", stake="11.00"))
                    self.assertEqual((reused["type"], reused["code"]),
                                     ("rejected", "idempotency_key_reused"))

                    poor = await ask(dict(place, id="c4", idempotency_key="k2", stake="95.00"))
                    self.assertEqual((poor["type"], poor["code"]), ("rejected", "insufficient_funds"))
                    # A refusal stays refused when retried with its key, even after a deposit.
                    status, _ = engine.post_json("/v1/accounts/42/deposits",
                                                 {"amount": "100.00", "key": "dep-2"}, self.admin)
                    self.assertIn(status, (200, 201))
                    still = await ask(dict(place, id="c5", idempotency_key="k2", stake="95.00"))
                    self.assertEqual((still["type"], still["code"], still.get("replayed")),
                                     ("rejected", "insufficient_funds", True))

                    changed = await ask(dict(place, id="c6", idempotency_key="k3", odds="2.60"))
                    self.assertEqual((changed["type"], changed["code"]), ("rejected", "odds_changed"))

                    balance = await ask({"type": "balance", "id": "b1"})
                    self.assertEqual(balance, {"type": "balance", "id": "b1", "available": "190.00",
                                               "reserved": "10.00", "currency": "EUR"})
                    bets = await ask({"type": "bets", "id": "l1", "status": "open", "limit": 10})
                    self.assertEqual([b["bet_id"] for b in bets["bets"]], [bet["bet_id"]])

                    bad = await ask({"type": "place", "id": "x", "idempotency_key": "k9",
                                     "selection_id": 1001, "stake": "1.001", "odds": "2.50"})
                    self.assertEqual((bad["type"], bad["code"]), ("error", "invalid_request"))
                    ok = await ask({"type": "balance", "id": "b2"})
                    self.assertEqual(ok["type"], "balance")

            asyncio.run(scenario())
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)

    def test_a_bettors_pipelined_bets_apply_in_the_order_sent(self):
        # Twelve bettors, each on its own connection, each sending 24 placements of 10.00 at
        # once without waiting, against 95.00: the first nine each sent are placed and the rest
        # refused for funds, whatever actor each bet was routed to while the others' groups ran.
        bettors = list(range(60, 72))
        per_bettor, fits = 24, 9
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, MARKET)
            self.open_accounts(engine, bettors, "95.00")

            # Made before the bettors start: `fulltime token` is a blocking subprocess, and made
            # inside the event loop it held up the connections already opening (under the
            # sanitizers, twelve in a row outlasted their 10 s opening timeout).
            tokens = {account: self.token("account", str(account)) for account in bettors}

            async def bettor(account):
                token = tokens[account]
                async with websockets.client.connect(
                        engine.ws_url("/v1/bets"),
                        extra_headers={"Authorization": "Bearer " + token}) as ws:
                    for i in range(per_bettor):
                        await ws.send(json.dumps({
                            "type": "place", "id": str(i), "idempotency_key": f"p-{account}-{i}",
                            "selection_id": 1001, "stake": "10.00", "odds": "2.50"}))
                    answers = {}
                    while len(answers) < per_bettor:
                        m = json.loads(await asyncio.wait_for(ws.recv(), 30))
                        if "id" in m:
                            answers[int(m["id"])] = m
                    return account, answers

            async def everyone():
                return await asyncio.gather(*(bettor(a) for a in bettors))

            for account, answers in asyncio.run(everyone()):
                kinds = [(answers[i]["type"], answers[i].get("code")) for i in range(per_bettor)]
                self.assertEqual(kinds, [("placed", None)] * fits
                                 + [("rejected", "insufficient_funds")] * (per_bettor - fits),
                                 f"account {account}")
                self.assertEqual(answers[fits - 1]["balance"],
                                 {"available": "5.00", "reserved": "90.00"}, f"account {account}")
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)

    def test_sigkill_while_placing_then_retry_every_key(self):
        total = 300
        keys = [f"kill-{i}" for i in range(total)]
        engine = Engine(self.env)
        engine.wait_ready()
        self.prepare(engine, deposit="1000.00")

        async def fire_and_kill():
            url = engine.ws_url("/v1/bets") + "?token=" + self.bettor
            conns = [await websockets.client.connect(url) for _ in range(10)]
            for i, key in enumerate(keys):
                await conns[i % 10].send(json.dumps({
                    "type": "place", "id": key, "idempotency_key": key, "selection_id": 1001,
                    "stake": "1.00", "odds": "2.50"}))

            # Kill once 20 placements are confirmed. The 300 requests outrun the account's
            # placement queue, so some of the first replies are `busy` refusals: they are kept
            # too, and their keys are retried below like every other.
            before_kill = {}
            placed = 0

            async def drain(ws):
                nonlocal placed
                try:
                    while True:
                        reply = json.loads(await ws.recv())
                        if placed < 20:
                            before_kill[reply["id"]] = reply
                            if reply["type"] == "placed":
                                placed += 1
                                if placed == 20:
                                    engine.stop(signal.SIGKILL)
                except websockets.exceptions.ConnectionClosed:
                    pass

            await asyncio.wait_for(asyncio.gather(*(drain(ws) for ws in conns)), 60)
            return before_kill

        before_kill = asyncio.run(fire_and_kill())
        placed_before = {k: r for k, r in before_kill.items() if r["type"] == "placed"}
        self.assertEqual(len(placed_before), 20)
        for reply in before_kill.values():
            self.assertIn(reply["type"], ("placed", "rejected"), reply)
            if reply["type"] == "rejected":
                self.assertEqual(reply["code"], "busy", reply)

        engine = Engine(self.env)
        try:
            engine.wait_ready()

            async def retry_all():
                url = engine.ws_url("/v1/bets") + "?token=" + self.bettor
                async with websockets.client.connect(url) as ws:
                    outcomes = {}
                    for key in keys:
                        # `busy` says: the same key again, after retry_after_ms (a loaded
                        # machine may still answer it; the engine is ready only once its
                        # placement connections are open, so not for want of one at start).
                        for _ in range(20):
                            await ws.send(json.dumps({
                                "type": "place", "id": key, "idempotency_key": key,
                                "selection_id": 1001, "stake": "1.00", "odds": "2.50"}))
                            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
                            if reply.get("code") != "busy":
                                break
                            await asyncio.sleep(reply["retry_after_ms"] / 1000)
                        outcomes[key] = reply
                    return outcomes

            outcomes = asyncio.run(retry_all())
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        self.assertTrue(all(r["type"] == "placed" for r in outcomes.values()), outcomes)
        self.assertEqual(len({r["bet"]["bet_id"] for r in outcomes.values()}), total)
        # Every placement confirmed before the kill survived it: the retry replays the same bet.
        # A key refused busy, or not answered, may or may not have committed; either way its
        # retry yields exactly one bet (the distinct-bet count above).
        for key, reply in placed_before.items():
            self.assertTrue(outcomes[key]["replayed"], (key, outcomes[key]))
            self.assertEqual(outcomes[key]["bet"]["bet_id"], reply["bet"]["bet_id"])
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    unittest.main()
