"""A producer's anomalies in a market's `seq` against a running engine:
a seq beyond PostgreSQL's integer, and a hole that held every later event back for good. The
operator closes the hole (POST /v1/feed/markets/{id}/close-gap, or `fulltime close-gap` from the
command line), the events after it apply,
the operator's void works past a huge seq, and a producer event inside the closed range is
refused. Money invariants at the end."""

import asyncio
import json

import websockets.client

from harness import Engine, EngineTestCase, run_cli, wait_until
from money import assert_money_invariants

HUGE_SEQ = 9223372036854775000  # past 2^31 - 1 (PostgreSQL integer), below 2^63 - 1


def market(market_id):
    return {"type": "market", "market_id": market_id, "event_id": market_id, "name": "Gap",
            "status": "open",
            "selections": [{"selection_id": market_id * 10 + 1, "name": "Home", "odds": "2.00"},
                           {"selection_id": market_id * 10 + 2, "name": "Away", "odds": "3.00"}]}


def result(market_id, seq, key):
    return {"type": "result", "market_id": market_id, "seq": seq, "event_key": key,
            "outcomes": [{"selection_id": market_id * 10 + 1, "result": "win"},
                         {"selection_id": market_id * 10 + 2, "result": "lose"}]}


class FeedGapTest(EngineTestCase):
    ENGINE_ENV = {"FULLTIME_SETTLEMENT_POLL_INTERVAL_MS": "200"}

    def place(self, engine, token, market_id, key):
        async def scenario():
            async with websockets.client.connect(engine.ws_url("/v1/bets?token=" + token)) as ws:
                await ws.send(json.dumps({"type": "place", "id": "p", "idempotency_key": key,
                                          "selection_id": market_id * 10 + 1, "stake": "10.00",
                                          "odds": "2.00"}))
                return json.loads(await asyncio.wait_for(ws.recv(), 10))
        placed = asyncio.run(scenario())
        self.assertEqual(placed["type"], "placed", placed)
        return placed["bet"]["bet_id"]

    def settled(self, bet_id):
        return self.sql("SELECT count(*) FROM bet_settlements WHERE bet_id = %s AND NOT reversal",
                        bet_id)[0][0]

    def test_a_hole_in_the_feed_is_closed_by_the_operator_and_a_huge_seq_is_served(self):
        engine = Engine(self.env)
        self.addCleanup(engine.kill)
        engine.wait_ready()
        for m in (400, 401):
            self.send_market(engine, market(m))
        self.open_accounts(engine, [61], "100.00")
        bettor = self.token("account", "61")
        gapped = self.place(engine, bettor, 400, "k400")
        huge = self.place(engine, bettor, 401, "k401")

        # Market 400: only seq 5 arrives; 1 to 4 never will. The result waits.
        status, body = engine.post_json("/v1/feed", result(400, 5, "r400-5"), self.producer)
        self.assertEqual(status, 200, body)
        wait_until(lambda: self.sql("SELECT 1 FROM settlement_progress WHERE market_id = 400"),
                   "no progress row for market 400")
        self.assertEqual(self.settled(gapped), 0)

        # The void would wait behind the hole too: refused, naming it, nothing stored.
        status, body = engine.post_json("/v1/markets/400/void-overdue", {"force": True}, self.admin)
        self.assertEqual((status, body["code"]), (409, "feed_gap"), body)
        self.assertIn("seq 1 to 4", body["detail"])
        # Not a gap: a stored seq inside, nothing after it, a reversed range.
        for bad, code in (({"from": 1, "through": 5}, "not_a_gap"),
                          ({"from": 6, "through": 9}, "not_a_gap"),
                          ({"from": 4, "through": 1}, "invalid_request"),
                          ({"from": 0, "through": 1}, "invalid_request"),
                          ({"from": 1}, "invalid_request")):
            status, body = engine.post_json("/v1/feed/markets/400/close-gap", bad, self.admin)
            self.assertEqual(body["code"], code, (bad, body))
        status, body = engine.post_json("/v1/feed/markets/999/close-gap",
                                        {"from": 1, "through": 4}, self.admin)
        self.assertEqual((status, body["code"]), (404, "unknown_market"), body)
        # A producer token may not close a gap.
        status, body = engine.post_json("/v1/feed/markets/400/close-gap",
                                        {"from": 1, "through": 4}, self.producer)
        self.assertEqual(status, 401, body)
        self.assertEqual(self.sql("SELECT count(*) FROM result_events WHERE market_id = 400")[0][0],
                         1)

        # The operator closes it: seq 5 applies, the bet is settled.
        status, body = engine.post_json("/v1/feed/markets/400/close-gap",
                                        {"from": 1, "through": 4, "key": "gap-400"}, self.admin)
        self.assertEqual(status, 200, body)
        self.assertEqual(body, {"market_id": 400, "from": 1, "through": 4, "event_key": "gap-400",
                                "duplicate": False})
        wait_until(lambda: self.settled(gapped) == 1, "seq 5 never applied after the close")
        wait_until(lambda: self.sql("SELECT applied_seq FROM settlement_progress "
                                    "WHERE market_id = 400")[0][0] == 5, "seq 5 never finished")
        # The same request again is a duplicate; nothing new.
        status, body = engine.post_json("/v1/feed/markets/400/close-gap",
                                        {"from": 1, "through": 4, "key": "gap-400"}, self.admin)
        self.assertEqual((status, body["duplicate"]), (200, True), body)
        # A late producer event inside the closed range is refused, naming it.
        status, body = engine.post_json("/v1/feed", result(400, 3, "r400-3"), self.producer)
        self.assertEqual((status, body["code"]), (409, "conflict"), body)
        self.assertIn("closed", body["detail"])
        # The producer's listing shows the operator's event.
        status, body = engine.get_json("/v1/feed/markets/400/events",
                                       {"Authorization": "Bearer " + self.producer})
        self.assertEqual(status, 200, body)
        kinds = {e["seq"]: e["kind"] for e in body["events"]}
        self.assertEqual(kinds, {1: "gap_closed", 5: "result"})
        self.assertIn("operator: close-gap", engine.log())

        # Market 401: a seq past PostgreSQL's integer is stored, and the operator's void that
        # takes the seq after it works (it answered 503 "integer out of range" before).
        status, body = engine.post_json("/v1/feed", {"type": "cancel", "market_id": 401,
                                                     "seq": 1, "event_key": "c401-1"},
                                        self.producer)
        self.assertEqual(status, 200, body)
        status, body = engine.post_json("/v1/feed", {"type": "rollback_cancel", "market_id": 401,
                                                     "seq": 2, "event_key": "rc401-2"},
                                        self.producer)
        self.assertEqual(status, 200, body)
        wait_until(lambda: self.sql("SELECT applied_seq FROM settlement_progress "
                                    "WHERE market_id = 401")[0][0] == 2, "401 not applied")
        # The gap from 3 to HUGE_SEQ - 1 is closed too, and the huge seq applies.
        status, body = engine.post_json("/v1/feed", {"type": "cancel", "market_id": 401,
                                                     "seq": HUGE_SEQ, "event_key": "c401-huge"},
                                        self.producer)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["seq"], HUGE_SEQ)
        status, body = engine.post_json("/v1/feed/markets/401/close-gap",
                                        {"from": 3, "through": HUGE_SEQ - 1}, self.admin)
        self.assertEqual(status, 200, body)
        wait_until(lambda: self.sql("SELECT applied_seq FROM settlement_progress "
                                    "WHERE market_id = 401")[0][0] == HUGE_SEQ,
                   "the huge seq never applied")
        # Its bet is cancelled (refunded). A rollback_cancel puts it back open, then the void.
        status, body = engine.post_json("/v1/feed", {"type": "rollback_cancel", "market_id": 401,
                                                     "seq": HUGE_SEQ + 1,
                                                     "event_key": "rc401-huge"}, self.producer)
        self.assertEqual(status, 200, body)
        wait_until(lambda: self.sql("SELECT applied_seq FROM settlement_progress "
                                    "WHERE market_id = 401")[0][0] == HUGE_SEQ + 1,
                   "the rollback never applied")
        status, body = engine.post_json("/v1/markets/401/void-overdue", {"force": True}, self.admin)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["seq"], HUGE_SEQ + 2)
        wait_until(lambda: self.sql("SELECT applied_seq FROM settlement_progress "
                                    "WHERE market_id = 401")[0][0] == HUGE_SEQ + 2,
                   "the void never applied")
        # Cancelled and restored twice (seqs 1-2, then the huge ones), then voided by the
        # operator.
        self.assertEqual([r[0] for r in self.sql("SELECT kind FROM bet_settlements "
                                                 "WHERE bet_id = %s ORDER BY version, reversal",
                                                 huge)],
                         ["cancel", "uncancel", "cancel", "uncancel", "cancel"])
        assert_money_invariants(self, self.db_url)

    def close_gap_cli(self, *args):
        code, out, err = run_cli(["close-gap", *args], self.env)
        return code, json.loads(out) if out.strip() else None, err

    def test_the_command_line_closes_a_hole_for_a_running_engine(self):
        engine = Engine(self.env)
        self.addCleanup(engine.kill)
        engine.wait_ready()
        self.send_market(engine, market(410))
        self.open_accounts(engine, [62], "50.00")
        bet = self.place(engine, self.token("account", "62"), 410, "k410")
        status, body = engine.post_json("/v1/feed", result(410, 3, "r410-3"), self.producer)
        self.assertEqual(status, 200, body)

        # Refusals exit 1 with the route's codes; bad arguments are usage errors (2); nothing is
        # stored by either.
        code, out, err = self.close_gap_cli("--market", "410", "--from", "1", "--through", "3")
        self.assertEqual((code, out["code"]), (1, "not_a_gap"), (out, err))
        code, out, err = self.close_gap_cli("--market", "411", "--from", "1", "--through", "2")
        self.assertEqual((code, out["code"]), (1, "unknown_market"), (out, err))
        for bad in (["--from", "2", "--through", "1"], ["--from", "0", "--through", "1"],
                    ["--from", "1", "--through", "2", "--key", "k" * 256],
                    ["--from", "1", "--through", "2", "--operator", ""]):
            code, out, err = self.close_gap_cli("--market", "410", *bad)
            self.assertEqual(code, 2, (bad, out, err))
            self.assertIsNone(out, bad)
        self.assertEqual(self.sql("SELECT count(*) FROM result_events WHERE market_id = 410")[0][0],
                         1)
        self.assertEqual(self.settled(bet), 0)

        # The hole closed from the command line: the running engine applies seq 3 on its scan.
        code, out, err = self.close_gap_cli("--market", "410", "--from", "1", "--through", "2",
                                            "--operator", "night-shift")
        self.assertEqual(code, 0, (out, err))
        self.assertEqual((out["outcome"], out["duplicate"], out["event_key"]),
                         ("stored", False, "operator:close-gap:410:1-2"), out)
        wait_until(lambda: self.settled(bet) == 1, "seq 3 never applied after the close")
        code, out, err = self.close_gap_cli("--market", "410", "--from", "1", "--through", "2")
        self.assertEqual((code, out["duplicate"]), (0, True), (out, err))
        payload = self.sql("SELECT payload FROM result_events WHERE market_id = 410 AND seq = 1")
        self.assertEqual(payload[0][0].get("operator"), "night-shift", payload)
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    import unittest
    unittest.main()
