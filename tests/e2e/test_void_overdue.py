"""End-to-end `fulltime void-overdue` against a running engine: bets placed
over WebSocket, a market past its reservation deadline, the command run while `fulltime serve`
runs (the engine's settlement finds the stored event on its scan and voids the open bets), the
bettor pushed `bet_settled` with outcome void, the command run again (a duplicate: nothing voided
twice), and its refusals (not_overdue, nothing_to_void, unknown_market) exiting 1 with their code
and moving no money. Money invariants at the end."""

import asyncio
import json
import time
import unittest

import websockets.client

from harness import Engine, EngineTestCase, run_cli
from money import assert_money_invariants

MARKET = {"type": "market", "market_id": 300, "event_id": 30, "name": "Overdue: winner",
          "status": "open", "settle_deadline_at": "2099-01-01T00:00:00Z",
          "selections": [{"selection_id": 3001, "name": "Home", "odds": "2.00"},
                         {"selection_id": 3002, "name": "Away", "odds": "3.00"}]}


class VoidOverdueTest(EngineTestCase):
    ENGINE_ENV = {"FULLTIME_SETTLEMENT_POLL_INTERVAL_MS": "200",
                  "FULLTIME_RESERVATIONS_GRACE_S": "60",
                  "FULLTIME_RESERVATIONS_SWEEP_INTERVAL_MS": "200"}

    def books(self):
        return self.sql("SELECT account_id, available, reserved, owed FROM accounts "
                        "ORDER BY account_id") + self.sql("SELECT count(*) FROM ledger_transfers")

    def void_overdue(self, *args):
        code, out, err = run_cli(["void-overdue", "--market", *args], self.env)
        return code, json.loads(out) if out.strip() else None, err

    def test_void_overdue_against_a_running_engine(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, MARKET)
            self.open_accounts(engine, (51, 52), "100.00")
            bettor = self.token("account", "51")
            other = self.token("account", "52")

            async def scenario():
                async with websockets.client.connect(engine.ws_url("/v1/bets?token=" + bettor)) as ws, \
                        websockets.client.connect(engine.ws_url("/v1/bets?token=" + other)) as ws2:
                    async def ask(sock, message):
                        # The reply to this request; pushes that arrive first are skipped.
                        await sock.send(json.dumps(message))
                        while True:
                            reply = json.loads(await asyncio.wait_for(sock.recv(), 10))
                            if reply.get("id") == message["id"]:
                                return reply

                    for i, (sock, stake) in enumerate([(ws, "10.00"), (ws, "5.50"), (ws2, "20.00")]):
                        placed = await ask(sock, {"type": "place", "id": f"p{i}",
                                                  "idempotency_key": f"k{i}", "selection_id": 3001,
                                                  "stake": stake, "odds": "2.00"})
                        self.assertEqual(placed["type"], "placed", placed)

                    # Not overdue yet: refused, exit 1, the code printed, nothing stored.
                    before = self.books()
                    code, out, err = self.void_overdue("300")
                    self.assertEqual(code, 1, err)
                    self.assertEqual(out["code"], "not_overdue")
                    self.assertIn("not_overdue", err)
                    code, out, err = self.void_overdue("999")
                    self.assertEqual((code, out["code"]), (1, "unknown_market"))
                    self.assertEqual(self.books(), before)
                    self.assertEqual(self.sql("SELECT count(*) FROM result_events")[0][0], 0)

                    # The producer's deadline passes (settle_deadline_at + 60 s grace).
                    overdue = dict(MARKET, settle_deadline_at="2000-01-01T00:00:00Z")
                    status, body = engine.post_json("/v1/feed", overdue, self.producer)
                    self.assertEqual(status, 200, body)
                    # The sweeper reports the market, once, with the reserved stake; no money moves.
                    incident = self.wait_for("SELECT actual, details->>'open_bets', runs FROM "
                                             "incidents WHERE subject = 'market:300' AND "
                                             "resolved_at IS NULL AND runs >= 2")
                    self.assertEqual((incident[0], incident[1]), (3550, "3"))
                    self.assertEqual(self.books(), before)
                    code, out, err = self.void_overdue("300")
                    self.assertEqual(code, 0, err)
                    self.assertEqual((out["outcome"], out["seq"], out["duplicate"]),
                                     ("stored", 1, False))
                    self.assertEqual(out["event_key"], "operator:void-overdue:300")

                    # The running engine applies it: pushes with outcome void, stakes back.
                    pushed = []
                    while len(pushed) < 2:
                        m = json.loads(await asyncio.wait_for(ws.recv(), 20))
                        if m["type"] == "bet_settled":
                            pushed.append(m)
                    self.assertEqual(sorted(p["payout"] for p in pushed), ["10.00", "5.50"])
                    self.assertTrue(all(p["outcome"] == "void" for p in pushed))
                    balance = await ask(ws, {"type": "balance", "id": "b"})
                    self.assertEqual((balance["available"], balance["reserved"]), ("100.00", "0.00"))
                    balance = await ask(ws2, {"type": "balance", "id": "b2"})
                    self.assertEqual((balance["available"], balance["reserved"]), ("100.00", "0.00"))

            asyncio.run(scenario())

            # Run twice: a duplicate, nothing voided twice; another key finds nothing open.
            before = self.books()
            code, out, err = self.void_overdue("300")
            self.assertEqual(code, 0, err)
            self.assertEqual((out["outcome"], out["duplicate"], out["seq"]), ("duplicate", True, 1))
            code, out, err = self.void_overdue("300", "--key", "again")
            self.assertEqual((code, out["code"]), (1, "nothing_to_void"))
            time.sleep(0.5)
            self.assertEqual(self.books(), before)
            self.assertEqual(self.sql("SELECT count(*) FROM bet_settlements")[0][0], 3)
            # The producer reads how the event was applied.
            status, body = engine.get_json("/v1/feed/markets/300/events",
                                           {"Authorization": "Bearer " + self.producer})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["events"][0]["kind"], "void_open")
            self.assertIsNotNone(body["events"][0]["applied_at"])
            # The sweeper resolves the incident: nothing is open on the market any more.
            resolved = self.wait_for("SELECT resolution FROM incidents WHERE subject = "
                                     "'market:300' AND resolved_at IS NOT NULL")
            self.assertEqual(resolved[0], "no open bet left on the market")
            self.assertEqual(self.sql("SELECT count(*) FROM incidents")[0][0], 1)
            status, metrics = engine.get("/metrics")
            self.assertIn("\nfulltime_reservations_overdue 0\n", metrics)
            self.assertEqual(engine.stop(), 0, engine.log())
        finally:
            engine.kill()
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    unittest.main()
