"""End-to-end settlement over the public protocol, with clients that are not our code: results
sent on the feed (WebSocket and POST), duplicates acknowledged and ignored, bet_settled pushed to
a connected bettor, and the engine killed (SIGKILL) in the middle of settling a large market,
then restarted: settlement completes and every bet is settled exactly once, with the settlement
governor off and with it steering (placements kept over its budget, so it cuts batches and
pauses down to its floor). The read model's projector leaving the database to a settlement for
at most read.projector_yield_ms, then catching up, and a bettor's read of their own placement
answered from the write tables meanwhile. Money invariants after each scenario."""

import asyncio
import json
import re
import signal
import subprocess
import time
import unittest

import psycopg
import websockets.client

from fixtures import HOME_WINS, MARKET, OTHER_MARKET
from harness import BINARY, Engine, EngineTestCase, wait_until
from money import assert_money_invariants


class SettlementTest(EngineTestCase):
    ENGINE_ENV = {"FULLTIME_SETTLEMENT_BATCH_BETS_MAX": "200",
                  "FULLTIME_SETTLEMENT_POLL_INTERVAL_MS": "200"}

    def prepare(self, engine, accounts):
        self.send_market(engine, MARKET)
        self.open_accounts(engine, accounts, "1000.00")

    def applied_seq(self):
        rows = self.sql("SELECT applied_seq, checkpoint_bet_id FROM settlement_progress "
                        "WHERE market_id = 100")
        return rows[0] if rows else (0, 0)

    def wait_applied(self, seq, timeout_s=60):
        until = time.monotonic() + timeout_s
        while time.monotonic() < until:
            if self.applied_seq()[0] >= seq:
                return True
            time.sleep(0.05)
        return False

    def test_results_on_the_feed_duplicates_and_pushes(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.prepare(engine, [42])
            bettor = self.token("account", "42")

            async def scenario():
                bets_url = engine.ws_url("/v1/bets") + "?token=" + bettor
                feed_url = engine.ws_url("/v1/feed") + "?token=" + self.producer
                async with websockets.client.connect(bets_url) as ws, \
                        websockets.client.connect(feed_url) as feed:
                    async def ask(sock, message):
                        await sock.send(json.dumps(message))
                        return json.loads(await asyncio.wait_for(sock.recv(), 10))

                    home = await ask(ws, {"type": "place", "id": "p1", "idempotency_key": "h",
                                          "selection_id": 1001, "stake": "10.00",
                                          "odds": "2.50"})
                    away = await ask(ws, {"type": "place", "id": "p2", "idempotency_key": "a",
                                          "selection_id": 1002, "stake": "20.00",
                                          "odds": "3.10"})
                    self.assertEqual((home["type"], away["type"]), ("placed", "placed"))

                    ack = await ask(feed, {**HOME_WINS, "id": "f1"})
                    self.assertEqual((ack["type"], ack["duplicate"]), ("ack", False), ack)
                    again = await ask(feed, {**HOME_WINS, "id": "f2"})
                    self.assertEqual((again["type"], again["duplicate"]), ("ack", True), again)

                    pushed = {}
                    while len(pushed) < 2:
                        m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                        self.assertEqual(m["type"], "bet_settled", m)
                        pushed[m["bet_id"]] = m
                    self.assertEqual(pushed[home["bet"]["bet_id"]]["outcome"], "won")
                    self.assertEqual(pushed[home["bet"]["bet_id"]]["payout"], "25.00")
                    self.assertEqual(pushed[away["bet"]["bet_id"]]["outcome"], "lost")
                    self.assertEqual(pushed[away["bet"]["bet_id"]]["payout"], "0.00")
                    self.assertEqual(pushed[home["bet"]["bet_id"]]["version"], 1)

                    balance = await ask(ws, {"type": "balance", "id": "b"})
                    self.assertEqual((balance["available"], balance["reserved"]),
                                     ("995.00", "0.00"))
                    settled = await ask(ws, {"type": "bets", "id": "s", "status": "settled",
                                             "limit": 10})
                    self.assertEqual(len(settled["bets"]), 2)

                    # The market is suspended by the result; a late bet is refused.
                    late = await ask(ws, {"type": "place", "id": "p3", "idempotency_key": "l",
                                          "selection_id": 1001, "stake": "1.00",
                                          "odds": "2.50"})
                    self.assertEqual((late["type"], late["code"]),
                                     ("rejected", "market_suspended"))

                    # A correction (away won) arrives by POST: pushed as version 2.
                    status, body = engine.post_json("/v1/feed", {
                        "type": "result", "market_id": 100, "seq": 2, "event_key": "final-r2",
                        "outcomes": [{"selection_id": 1002, "result": "win"}]}, self.producer)
                    self.assertEqual(status, 200, body)
                    pushed = {}
                    while len(pushed) < 2:
                        m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                        pushed[m["bet_id"]] = m
                    self.assertEqual((pushed[home["bet"]["bet_id"]]["outcome"],
                                      pushed[home["bet"]["bet_id"]]["version"]), ("lost", 2))
                    self.assertEqual(pushed[away["bet"]["bet_id"]]["payout"], "62.00")

            asyncio.run(scenario())
            self.assertTrue(self.wait_applied(2))
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)

    def test_sigkill_mid_settlement_then_restart_settles_each_bet_once(self):
        self.sigkill_scenario(self.env)

    def test_sigkill_mid_settlement_under_the_governor_settles_each_bet_once(self):
        # A budget of 1 ms that placements cannot keep (a closed loop of 128 requests in flight:
        # by Little's law each waits 128 / throughput, over 1 ms below 128,000 placements/s), a
        # floor of 250 bets/s: once batches run, the governor cuts them and pauses as far as the
        # floor lets. The floor is well under what back-to-back batches settle beside that load
        # (2,000-3,300 bets/s in CI, less in the sanitizer build): a floor they cannot beat
        # would hold full batches from the first cut, with nothing cut to see.
        env = {**self.env, "FULLTIME_SETTLEMENT_PLACEMENT_P99_BUDGET_MS": "1",
               "FULLTIME_SETTLEMENT_PLACEMENT_WINDOW_MS": "300",
               "FULLTIME_SETTLEMENT_MIN_BETS_PER_S": "250"}
        self.sigkill_scenario(env, governed=True)

    def test_the_projector_leaves_the_database_to_settlement_for_at_most_its_yield(self):
        # One chain of batches paced to a twentieth of a backend (the market keeps its slot
        # through the rests), so that settling 10,000 bets outlasts the projector's 1 s yield
        # several times over: twenty times the batches' own time, which is about half a second
        # on a quiet machine. (Two lanes at a tenth took about 2 s in CI, as long as the yield
        # then, and the market could finish before the projector caught up once.)
        env = {**self.env, "FULLTIME_READ_PROJECTOR_YIELD_MS": "1000",
               "FULLTIME_SETTLEMENT_LANES": "1", "FULLTIME_SETTLEMENT_DUTY_PERCENT": "5"}
        bets = 10000
        engine = Engine(env)
        try:
            engine.wait_ready()
            self.seed_bets(engine, bets)
            # Nothing settles yet: the projector brings the placements into the read model.
            until = time.monotonic() + 120
            while time.monotonic() < until and self.projected(100)[0] < bets:
                time.sleep(0.05)
            self.assertEqual(self.projected(100), (bets, 0))
            self.assertEqual(self.projector_yielding(engine), 0)

            status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
            self.assertEqual(status, 200, body)
            lagged = caught_up_while_settling = False
            until = time.monotonic() + 300
            while time.monotonic() < until:
                yielding = self.projector_yielding(engine)
                settled = self.sql("SELECT count(*) FROM bet_settlements")[0][0]
                shown = self.projected(100)[1]
                if self.applied_seq()[0] >= 1:
                    break
                # It left the settled bets to later while settlement ran (a batch's worth and
                # more) ...
                lagged = lagged or (yielding == 1 and settled - shown >= 200)
                # ... and, settlement still running, caught up once its yield was spent.
                caught_up_while_settling = caught_up_while_settling or (lagged and shown > 0)
                time.sleep(0.05)
            self.assertEqual(self.applied_seq()[0], 1, engine.log())
            self.assertTrue(lagged, "the read model kept up with settlement: no yield seen")
            self.assertTrue(caught_up_while_settling,
                            "the read model showed no settled bet until settlement ended")
            # Settlement over: the projector stops yielding and catches up in full.
            until = time.monotonic() + 120
            while time.monotonic() < until and self.projected(100)[1] < bets:
                time.sleep(0.05)
            self.assertEqual(self.projected(100), (bets, bets))
            # The market gives its slot back after its last batch, and the projector reads that
            # at its next round (the gauge is what it decided then).
            wait_until(lambda: self.projector_yielding(engine) == 0,
                       "the projector still yields with settlement over", timeout_s=30)
            # And it is the write tables' account of every bet (the audit's check of the model).
            with psycopg.connect(self.db_url) as conn:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                mismatches = conn.execute(
                    "SELECT * FROM fulltime_project_verify('projector')").fetchall()
            self.assertEqual(mismatches, [])
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)

    def test_a_read_of_its_own_write_goes_to_the_write_tables_while_the_projector_yields(self):
        # A yield and a read-your-writes wait longer than the test: the projector leaves its pages
        # for the whole settlement, and a read that waited for it would wait until settlement
        # ended. A bettor who places meanwhile gets the page from the write tables at once.
        # One chain of batches at duty 5 %: 3,000 bets take a few seconds, the scenario's four
        # requests a fraction of one.
        env = {**self.env, "FULLTIME_READ_PROJECTOR_YIELD_MS": "600000",
               "FULLTIME_READ_RYW_WAIT_MS": "600000", "FULLTIME_SETTLEMENT_LANES": "1",
               "FULLTIME_SETTLEMENT_DUTY_PERCENT": "5"}
        engine = Engine(env)
        try:
            engine.wait_ready()
            self.seed_bets(engine, 3000)
            self.send_market(engine, OTHER_MARKET)
            self.open_accounts(engine, [201], "100.00")
            until = time.monotonic() + 120
            while time.monotonic() < until and self.projected(100)[0] < 3000:
                time.sleep(0.05)
            self.assertEqual(self.projected(100), (3000, 0))
            bettor = self.token("account", "201")

            async def scenario():
                url = engine.ws_url("/v1/bets") + "?token=" + bettor
                async with websockets.client.connect(url) as ws:
                    async def ask(message, timeout_s=10):
                        await ws.send(json.dumps(message))
                        return json.loads(await asyncio.wait_for(ws.recv(), timeout_s))

                    status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
                    self.assertEqual(status, 200, body)
                    until = time.monotonic() + 120
                    while time.monotonic() < until and self.projector_yielding(engine) != 1:
                        await asyncio.sleep(0.02)
                    self.assertEqual(self.projector_yielding(engine), 1, engine.log())
                    behind = self.reads_behind(engine)
                    placed = await ask({"type": "place", "id": "p", "idempotency_key": "y1",
                                        "selection_id": 2001, "stake": "1.00", "odds": "2.00"})
                    self.assertEqual(placed["type"], "placed", placed)
                    page = await ask({"type": "bets", "id": "b", "status": "open", "limit": 10},
                                     timeout_s=60)
                    # Still the same yield (it ends only with the settlement): the answer did
                    # not wait for a catch-up.
                    self.assertEqual(self.projector_yielding(engine), 1)
                    self.assertEqual([b["bet_id"] for b in page["bets"]],
                                     [placed["bet"]["bet_id"]], page)
                    self.assertEqual(self.reads_behind(engine), behind + 1)

            asyncio.run(scenario())
            self.assertTrue(self.wait_applied(1, timeout_s=300), engine.log())
            until = time.monotonic() + 120
            while time.monotonic() < until and self.projected(100)[1] < 3000:
                time.sleep(0.05)
            self.assertEqual(self.projected(100), (3000, 3000))
            self.assertEqual(self.projected(200), (1, 0))
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)

    def reads_behind(self, engine):
        found = re.search(r"^fulltime_reads_behind_own_write_total ([0-9.e+]+)$",
                          self.metrics_text(engine), re.MULTILINE)
        self.assertIsNotNone(found, "no fulltime_reads_behind_own_write_total in /metrics")
        return float(found.group(1))

    def projected(self, market_id):
        """The read model's bets and settled bets on a market."""
        rows = self.sql("SELECT coalesce(sum(bets), 0), coalesce(sum(settled_bets), 0) "
                        "FROM market_views WHERE market_id = %s", market_id)
        return (int(rows[0][0]), int(rows[0][1]))

    def metrics_text(self, engine):
        status, text = engine.get("/metrics")
        self.assertEqual(status, 200, text)
        return text

    def projector_yielding(self, engine):
        found = re.search(r"^fulltime_projector_yielding (-?[0-9.e+]+)$",
                          self.metrics_text(engine), re.MULTILINE)
        self.assertIsNotNone(found, "no fulltime_projector_yielding in /metrics")
        return float(found.group(1))

    def governor_gauges(self, engine):
        return {m.group(1): float(m.group(2)) for m in
                re.finditer(r"^fulltime_settlement_governor_([a-z_0-9]+) (-?[0-9.e+]+)$",
                            self.metrics_text(engine), re.MULTILINE)}

    def seed_bets(self, engine, bets):
        """Opens accounts 1 to 200 and places `bets` bets on MARKET, alternating its two
        selections, with the placement's own function (the engine's SQL)."""
        self.prepare(engine, list(range(1, 201)))
        self.sql("SELECT count(*) FROM (SELECT (fulltime_place((g %% 200) + 1, 'k' || g, 'fp', "
                 "CASE WHEN g %% 2 = 0 THEN 1001 ELSE 1002 END, 100, 2, 0, 'any', 1000, 0)).outcome "
                 "FROM generate_series(0, %s - 1) g) x", bets)
        self.assertEqual(self.sql("SELECT count(*) FROM bets")[0][0], bets)

    def start_load(self, engine, env, key_prefix):
        """Places on OTHER_MARKET from 64 accounts of their own, as fast as the engine answers
        (a closed loop of 128 requests in flight), for up to 300 s: the caller kills it."""
        self.send_market(engine, OTHER_MARKET)
        self.open_accounts(engine, range(201, 265), "100000.00")
        return subprocess.Popen(
            [BINARY, "bench-placement", "--port", str(engine.port), "--connections", "8",
             "--inflight", "16", "--first-account", "201", "--accounts", "64",
             "--selection", "2001", "--stake", "1.00", "--odds", "2.00",
             "--duration-s", "300", "--key-prefix", key_prefix],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def test_a_budget_in_percent_is_a_share_of_the_p99_with_nothing_settling(self):
        # 150 % of the placement p99 over the last second of placement with settlement quiet.
        env = {**self.env, "FULLTIME_SETTLEMENT_PLACEMENT_P99_BUDGET_PERCENT": "150",
               "FULLTIME_SETTLEMENT_PLACEMENT_BASELINE_MS": "1000"}
        engine = Engine(env)
        load = None
        try:
            engine.wait_ready()
            # No placement yet: no baseline, so no budget, and the governor does not steer.
            g = self.governor_gauges(engine)
            self.assertEqual((g["baseline_p99_seconds"], g["budget_seconds"]), (-1, 0), g)
            status, body = engine.get_json("/v1/diagnostics",
                                           {"Authorization": "Bearer " + self.admin})
            self.assertEqual(status, 200, body)
            governor = body["settlement"]["governor"]
            self.assertEqual((governor["enabled"], governor["baseline_p99_ms"]), (False, None),
                             governor)
            self.seed_bets(engine, 4000)
            load = self.start_load(engine, env, "percent")
            # The baseline forms once placements have run with nothing settling (and 5 s after
            # the engine started, which counts as settling).
            until = time.monotonic() + 60
            while time.monotonic() < until:
                g = self.governor_gauges(engine)
                if g["baseline_p99_seconds"] > 0:
                    break
                time.sleep(0.05)
            self.assertGreater(g["baseline_p99_seconds"], 0, g)
            self.assertAlmostEqual(g["budget_seconds"], 1.5 * g["baseline_p99_seconds"],
                                   delta=2e-6, msg=g)
            status, body = engine.get_json("/v1/diagnostics",
                                           {"Authorization": "Bearer " + self.admin})
            governor = body["settlement"]["governor"]
            self.assertTrue(governor["enabled"], governor)
            self.assertGreater(governor["baseline_p99_ms"], 0, governor)
            # While the market settles the baseline stands: settling time never enters it.
            status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
            self.assertEqual(status, 200, body)
            seen = []
            until = time.monotonic() + 120
            while time.monotonic() < until and self.applied_seq()[0] < 1:
                seen.append(self.governor_gauges(engine))
                time.sleep(0.02)
            self.assertEqual(self.applied_seq()[0], 1, engine.log())
            settling = [s for s in seen if s["settled_bets_per_second"] > 0]
            self.assertTrue(settling, seen[-3:])
            self.assertEqual({s["baseline_p99_seconds"] for s in settling},
                             {settling[0]["baseline_p99_seconds"]}, settling)
        finally:
            if load is not None:
                load.kill()
                load.wait()
            self.assertEqual(engine.stop(), 0, engine.log())
        self.assertEqual(self.sql("SELECT count(*) FROM bet_settlements")[0][0], 4000)
        assert_money_invariants(self, self.db_url)

    def sigkill_scenario(self, env, governed=False):
        bets = 10000
        engine = Engine(env)
        engine.wait_ready()
        self.seed_bets(engine, bets)

        load = None
        seen = []
        if not governed:
            status, body = engine.get_json("/v1/diagnostics",
                                           {"Authorization": "Bearer " + self.admin})
            self.assertEqual(status, 200, body)
            self.assertFalse(body["settlement"]["governor"]["enabled"], body)
        if governed:
            load = self.start_load(engine, env, "governed")
            # The governor has seen the slow placements before the result arrives.
            until = time.monotonic() + 30
            while time.monotonic() < until:
                g = self.governor_gauges(engine)
                if g.get("placement_p99_seconds", -1) > 0.001:
                    break
                time.sleep(0.05)
            # The operator reads the same state in /v1/diagnostics.
            status, body = engine.get_json("/v1/diagnostics",
                                           {"Authorization": "Bearer " + self.admin})
            self.assertEqual(status, 200, body)
            governor = body["settlement"]["governor"]
            self.assertEqual((governor["enabled"], governor["budget_ms"]), (True, 1.0), governor)
            self.assertGreater(governor["placement_p99_ms"], 1.0, governor)
            self.assertLessEqual(governor["batch_bets"], 200, governor)
            self.assertEqual(set(governor), {"enabled", "budget_ms", "baseline_p99_ms",
                                             "placement_p99_ms", "batch_bets", "pause_ms",
                                             "settled_bets_per_s", "floored", "slow_start"})
        try:
            status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
            self.assertEqual(status, 200, body)
            # Kill once some batches committed and others have not (governed: once the governor
            # has cut down to its floor, which it does within its first few windows of batches).
            # (Counted in settlement rows: in lanes each lane has its own checkpoint.)
            until = time.monotonic() + 60
            while time.monotonic() < until:
                seq, _ = self.applied_seq()
                settled = self.sql("SELECT count(*) FROM bet_settlements")[0][0]
                if governed:
                    seen.append(self.governor_gauges(engine))
                if seq == 0 and settled >= 2000 and (
                        not governed or any(g["floored"] == 1 for g in seen)):
                    break
                time.sleep(0.01)
            if not governed:
                # The operator sees how far each lane got.
                status, body = engine.get_json("/v1/diagnostics",
                                               {"Authorization": "Bearer " + self.admin})
                self.assertEqual(status, 200, body)
                market = [m for m in body["settlement"]["markets"] if m["market_id"] == 100]
                self.assertEqual(len(market), 1, body["settlement"])
                self.assertEqual(market[0]["lanes"], 2, market)
                self.assertEqual([lane["lane"] for lane in market[0]["lane_checkpoints"]],
                                 [0, 1], market)
                self.assertTrue(any(lane["checkpoint_bet_id"] > 0
                                    for lane in market[0]["lane_checkpoints"]), market)
            engine.stop(signal.SIGKILL)
        finally:
            if load is not None:
                load.kill()
                load.wait()
        if governed:
            self.assertTrue(seen)
            self.assertEqual(seen[-1]["budget_seconds"], 0.001)
            self.assertTrue(any(g["placement_p99_seconds"] > 0.001 for g in seen), seen[-3:])
            # It steered: smaller batches than the configured 200, a pause, and the floor.
            self.assertTrue(any(g["batch_bets"] < 200 for g in seen), seen[-3:])
            self.assertTrue(any(g["pause_seconds"] > 0 for g in seen), seen[-3:])
            self.assertTrue(any(g["floored"] == 1 for g in seen), seen[-3:])
        seq, _ = self.applied_seq()
        self.assertEqual(seq, 0, "settlement finished before the kill: make the market larger")
        # Ungoverned, the event was settled in the shipped settlement.lanes (2), each lane on its
        # own checkpoint; the governor steers one chain of batches.
        self.assertEqual(self.sql("SELECT lanes FROM settlement_progress WHERE market_id = 100")
                         [0][0], 1 if governed else 2)
        self.assertEqual(self.sql("SELECT count(*) FROM settlement_lanes")[0][0],
                         0 if governed else 2)
        settled_before = self.sql("SELECT count(*) FROM bet_settlements")[0][0]
        self.assertGreater(settled_before, 0)
        self.assertLess(settled_before, bets)

        engine = Engine(env)
        try:
            engine.wait_ready()
            # The engine's scan finds the unfinished event and resumes after the checkpoint.
            self.assertTrue(self.wait_applied(1), engine.log())
            # A duplicate after the fact changes nothing.
            status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
            self.assertEqual(status, 200, body)
            self.assertTrue(body["duplicate"], body)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        self.assertEqual(self.sql("SELECT count(*) FROM bet_settlements")[0][0], bets)
        self.assertEqual(self.sql("SELECT count(DISTINCT bet_id) FROM bet_settlements")[0][0],
                         bets)
        self.assertEqual(self.sql("SELECT count(*) FROM bet_settlements WHERE outcome = 'won' "
                                  "AND payout = 250")[0][0], bets // 2)
        self.assertEqual(self.sql("SELECT count(*) FROM ledger_transfers WHERE entry_key LIKE "
                                  "'bet:%%:v1:s_'")[0][0], bets + bets // 2)
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    unittest.main()
