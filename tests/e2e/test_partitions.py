"""End-to-end time partitions (docs/schema.md, "Time partitions") with one-second periods: the
engine's partition keeper makes periods ahead and closes those that are over while deposits and
bets go on; a deposit retried after its period closed is still a replay (wallet_keys: the
ledger's entry keys are unique per partition only); `fulltime partitions` lists the periods with
what holds them, and refuses a bad argument; `fulltime audit` and `fulltime reconcile`, which
start from the last closed period, pass. Every wait is on a condition, never a fixed sleep."""

import asyncio
import json
import time
import unittest

import websockets.client

from harness import Engine, EngineTestCase, run_cli
from money import assert_money_invariants

MARKET = {"type": "market", "market_id": 700, "event_id": 70, "name": "Partitions: winner",
          "status": "open",
          "selections": [{"selection_id": 7001, "name": "Home", "odds": "2.00"},
                         {"selection_id": 7002, "name": "Away", "odds": "3.00"}]}

ONE_SECOND_PERIODS = {"FULLTIME_HISTORY_PERIOD": "1 second",
                      "FULLTIME_HISTORY_AHEAD_PERIODS": "3",
                      "FULLTIME_HISTORY_RETENTION": "1 hour",
                      "FULLTIME_HISTORY_CLOSE_GRACE_S": "0",
                      "FULLTIME_HISTORY_KEEPER_INTERVAL_MS": "200",
                      "FULLTIME_SETTLEMENT_POLL_INTERVAL_MS": "200"}


class PartitionsTest(EngineTestCase):
    ENGINE_ENV = ONE_SECOND_PERIODS

    def partitions(self, *args):
        code, out, err = run_cli(["partitions", "--json", *args], self.env)
        self.assertEqual(code, 0, err)
        return json.loads(out)

    def test_the_keeper_closes_periods_while_money_moves(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, MARKET)
            self.open_accounts(engine, (71, 72), "100.00")
            deposit = self.sql("SELECT t.created_at FROM ledger_transfers t "
                               "WHERE t.entry_key = 'deposit:71:dep-71'")[0][0]
            # The deposit's period closes: the keeper stored account 71's balance at its end.
            self.wait_for("SELECT 1 FROM history_periods WHERE closed_at IS NOT NULL "
                          "AND period_start <= %s AND period_end > %s", deposit, deposit)
            self.wait_for("SELECT 1 FROM period_balances WHERE account_id = 71")

            # The same deposit again, in a later period: a replay, no second transfer.
            status, body = engine.post_json("/v1/accounts/71/deposits",
                                            {"amount": "100.00", "key": "dep-71"}, self.admin)
            self.assertEqual(status, 200, body)
            self.assertTrue(body["replayed"], body)
            status, body = engine.post_json("/v1/accounts/71/deposits",
                                            {"amount": "5.00", "key": "dep-71"}, self.admin)
            self.assertEqual(status, 409, body)
            self.assertEqual(self.sql("SELECT available FROM accounts WHERE account_id = 71"),
                             [(10000,)])

            # A bet in one period, settled in a later one.
            bettor = self.token("account", "72")

            async def bet():
                async with websockets.client.connect(
                        engine.ws_url("/v1/bets?token=" + bettor)) as ws:
                    await ws.send(json.dumps({"type": "place", "id": "c1",
                                              "idempotency_key": "b1", "selection_id": 7001,
                                              "stake": "10.00", "odds": "2.00"}))
                    while True:
                        reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
                        if reply.get("id") == "c1":
                            return reply
            reply = asyncio.run(bet())
            self.assertEqual(reply["type"], "placed", reply)
            placed = self.sql("SELECT placed_at FROM bets WHERE idempotency_key = 'b1'")[0][0]
            self.wait_for("SELECT 1 FROM history_periods WHERE closed_at IS NOT NULL "
                          "AND period_start <= %s AND period_end > %s", placed, placed)
            status, body = engine.post_json(
                "/v1/feed", {"type": "result", "market_id": 700, "seq": 1, "event_key": "r-700",
                             "outcomes": [{"selection_id": 7001, "result": "win"}]},
                self.producer)
            self.assertEqual(status, 200, body)
            self.wait_for("SELECT 1 FROM settlement_progress WHERE market_id = 700 "
                          "AND applied_seq = 1")
            self.assertEqual(self.sql("SELECT available FROM accounts WHERE account_id = 72"),
                             [(10000 - 1000 + 2000,)])

            listing = self.partitions()
            self.assertEqual(listing["period"], "1 second")
            periods = listing["periods"]
            self.assertEqual(periods[0]["period_start"], "-infinity")
            self.assertIn("closed", {p["state"] for p in periods})
            self.assertIn("open", {p["state"] for p in periods})
            # Retention is an hour: every closed period is held by it, and the newest periods
            # are open; nothing has left.
            for p in periods:
                self.assertTrue(p["holds"], p)
            self.assertEqual(self.sql("SELECT count(*) FROM history_periods "
                                      "WHERE dropped_at IS NOT NULL"), [(0,)])

            code, out, err = run_cli(["reconcile"], self.env)
            self.assertEqual(code, 0, out + err)
            code, out, err = run_cli(["audit"], self.env)
            self.assertEqual(code, 0, out + err)
        finally:
            engine.stop()
        assert_money_invariants(self, self.db_url)

    def test_partitions_without_an_engine(self):
        code, _, err = run_cli(["partitions", "--bogus"], self.env)
        self.assertEqual(code, 2)
        self.assertIn("see fulltime partitions --help", err)
        code, _, err = run_cli(["migrate"], self.env)
        self.assertEqual(code, 0, err)
        # --keep closes the history period (it ended when the schema was made) and makes the
        # periods ahead of now, as the keeper would.
        until = time.monotonic() + 30
        while True:
            listing = self.partitions("--keep")
            self.assertTrue(listing["kept"]["ok"], listing)
            if listing["periods"][0]["state"] == "closed":
                break
            self.assertLess(time.monotonic(), until, listing)
            time.sleep(0.1)
        ends = [p["period_end"] for p in listing["periods"]]
        self.assertEqual(ends, sorted(ends))
        self.assertGreaterEqual(len(ends), 3)


if __name__ == "__main__":
    unittest.main()
