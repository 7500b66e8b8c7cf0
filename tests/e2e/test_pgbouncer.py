"""The engine through PgBouncer in transaction pooling mode (docs/config.md: prepared statements
off, session timeouts off): every pool's connections share fewer server connections than the
engine opens, so any session state the engine relied on would leak between them or be lost.
Migrations, the catalog feed, the operator API, placements with replays, balance and bet reads,
a result settled with its pushes, a correction, the reconciliation and the peak sampler's
SHOW POOLS all run through it. Money invariants at the end, read directly."""

import asyncio
import json
import time
import unittest

import websockets.client

from fixtures import HOME_WINS, MARKET
from harness import Engine, EngineTestCase, PgBouncer
from money import assert_money_invariants

CORRECTED = {"type": "result", "market_id": 100, "seq": 2, "event_key": "final-r2",
             "outcomes": [{"selection_id": 1001, "result": "lose"},
                          {"selection_id": 1002, "result": "win"}]}
ACCOUNTS = list(range(1, 21))
PER_ACCOUNT = 20


class PgBouncerTest(EngineTestCase):
    def applied_seq(self):
        rows = self.sql("SELECT applied_seq FROM settlement_progress WHERE market_id = 100")
        return rows[0][0] if rows else 0

    def wait_applied(self, seq, timeout_s=120):
        until = time.monotonic() + timeout_s
        while self.applied_seq() < seq:
            self.assertLess(time.monotonic(), until, f"seq {seq} never applied")
            time.sleep(0.05)

    def test_everything_through_transaction_pooling(self):
        # Six server connections for the engine's eighteen (placement 8, settlement 4, read 4,
        # background 2).
        bouncer = PgBouncer(self.db_name, pool_size=6)
        self.addCleanup(bouncer.stop)
        self.env.update({"FULLTIME_DATABASE_URL": bouncer.url,
                         "FULLTIME_DATABASE_PREPARED_STATEMENTS": "false",
                         "FULLTIME_DATABASE_SESSION_TIMEOUTS": "false",
                         "FULLTIME_DIAGNOSTICS_PGBOUNCER_ADMIN_URL": bouncer.admin_url,
                         "FULLTIME_DIAGNOSTICS_SAMPLE_INTERVAL_MS": "200"})
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.assertIn("using the database at " + bouncer.url, engine.log())
            self.send_market(engine, MARKET)
            self.open_accounts(engine, ACCOUNTS, "1000.00")
            pushes = asyncio.run(self.bettors(engine))
            self.assertEqual(sorted(pushes), ACCOUNTS)
            for account, pushed in pushes.items():
                self.assertEqual(len(pushed), PER_ACCOUNT, f"account {account}: {pushed}")

            status, body = engine.post_json("/v1/feed", CORRECTED, self.producer)
            self.assertEqual(status, 200, body)
            self.wait_applied(2)

            status, body = engine.post_json("/v1/reconcile", {}, self.admin)
            self.assertEqual(status, 200, body)
            self.assertEqual(body["drifts"], 0, body)

            status, doc = engine.get_json("/v1/diagnostics",
                                          {"Authorization": "Bearer " + self.admin})
            self.assertEqual(status, 200, doc)
            self.assertEqual(doc["sampler"]["failures_total"], 0, doc["sampler"])
            self.assertIn("pgbouncer", doc["latest"])
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        self.assertNotIn(" error ", engine.log(), engine.log()[-3000:])
        # PgBouncer carried the work: its statistics count the engine's transactions.
        stats = bouncer.stats()
        self.assertGreater(stats["total_xact_count"], 2 * len(ACCOUNTS), stats)
        # Every bet settled by the result and then by its correction: a reversal and a new
        # settlement each.
        kinds = dict(self.sql("SELECT kind, count(*) FROM bet_settlements GROUP BY kind"))
        bets = len(ACCOUNTS) * PER_ACCOUNT
        self.assertEqual(kinds, {"settle": 2 * bets, "reverse": bets})
        assert_money_invariants(self, self.db_url)

    async def bettors(self, engine):
        """Each account places PER_ACCOUNT bets (every one sent twice: the second is a replay),
        reads its balance and bets, then waits for the result's pushes. Returns the pushed
        bet ids per account."""
        placed_all = asyncio.Event()
        placed = {"n": 0}
        # Made before any bettor connects: `fulltime token` is a blocking subprocess, which
        # inside the event loop holds up the connections already opening.
        tokens = {account: self.token("account", str(account)) for account in ACCOUNTS}

        async def bettor(account):
            token = tokens[account]
            # A loaded machine may take a while to accept 20 connections at once.
            async with websockets.client.connect(
                    engine.ws_url("/v1/bets"), open_timeout=60,
                    extra_headers={"Authorization": "Bearer " + token}) as ws:
                async def ask(message):
                    await ws.send(json.dumps(message))
                    while True:
                        m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                        if m.get("id") == message["id"]:
                            return m

                for i in range(PER_ACCOUNT):
                    place = {"type": "place", "id": f"p{i}", "idempotency_key": f"k-{account}-{i}",
                             "selection_id": 1001 + i % 2, "stake": "1.00",
                             "odds": "2.50" if i % 2 == 0 else "3.10"}
                    first = await ask(place)
                    self.assertEqual(first["type"], "placed", first)
                    again = await ask(dict(place, id=f"r{i}"))
                    self.assertTrue(again["replayed"], again)
                    self.assertEqual(again["bet"], first["bet"])
                balance = await ask({"type": "balance", "id": "b"})
                self.assertEqual((balance["available"], balance["reserved"]),
                                 (f"{1000 - PER_ACCOUNT}.00", f"{PER_ACCOUNT}.00"))
                listed = await ask({"type": "bets", "id": "l", "status": "open", "limit": 50})
                self.assertEqual(len(listed["bets"]), PER_ACCOUNT)
                placed["n"] += 1
                if placed["n"] == len(ACCOUNTS):
                    placed_all.set()
                pushed = set()
                while len(pushed) < PER_ACCOUNT:
                    m = json.loads(await asyncio.wait_for(ws.recv(), 120))
                    if m.get("type") == "bet_settled":
                        pushed.add(m["bet_id"])
                return account, pushed

        async def producer():
            await placed_all.wait()
            status, body = await asyncio.to_thread(engine.post_json, "/v1/feed", HOME_WINS,
                                                   self.producer)
            self.assertEqual(status, 200, body)

        results = await asyncio.gather(producer(), *(bettor(a) for a in ACCOUNTS))
        return dict(results[1:])


if __name__ == "__main__":
    unittest.main()
