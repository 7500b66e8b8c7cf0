"""Faults other than SIGKILL of the engine: the database ends the engine's sessions under it
(`pg_terminate_backend`, as an administrator, a failover or an OOM kill of a backend would)
while bettors place and while a market settles; and PostgreSQL itself restarts (fast mode)
while bettors place. Bettors retry a `busy` (or a dropped
connection) with the same key, as the protocol tells them to. Afterwards every key holds
exactly one bet, every bet of the settled market is settled exactly once, and the money
invariants hold."""

import asyncio
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest

import psycopg

import websockets.client
import websockets.exceptions

from fixtures import HOME_WINS, MARKET, OTHER_MARKET
from harness import PG_BIN, Engine, EngineTestCase, engine_env
from money import assert_money_invariants

ACCOUNTS = list(range(1, 21))
BURST_BETS = 150     # per account, on market 100, before the result
DURING_BETS = 60     # per account, on market 200, while the market settles
PROGRESS_STEP = 40   # bets placed or settled between two cuts (about a hundred cuts in all)


class FaultsTest(EngineTestCase):
    ENGINE_ENV = {"FULLTIME_SETTLEMENT_BATCH_BETS_MAX": "100",
                  "FULLTIME_SETTLEMENT_DUTY_PERCENT": "50"}

    def terminate(self, application):
        """Ends every session of the engine's pool `application` on the test database."""
        rows = self.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND application_name = %s",
                        application)
        return rows[0][0]

    async def place_all(self, engine, tokens, market, selections, count, prefix, bets):
        """Each account places `count` bets, one at a time, retrying a busy answer or a lost
        connection with the same key until the bet is placed. Fills `bets` ({key: bet_id}) as
        they are placed (the chaos thread counts it) and returns it."""

        async def bettor(account, token):
            i = 0
            while i < count:
                key = f"{prefix}-{account}-{i}"
                selection, odds = selections[i % len(selections)]
                try:
                    async with websockets.client.connect(
                            engine.ws_url("/v1/bets"),
                            extra_headers={"Authorization": "Bearer " + token}) as ws:
                        while i < count:
                            key = f"{prefix}-{account}-{i}"
                            selection, odds = selections[i % len(selections)]
                            await ws.send(json.dumps({
                                "type": "place", "id": key, "idempotency_key": key,
                                "selection_id": selection, "stake": "1.00", "odds": odds}))
                            while True:
                                m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                                if m.get("id") == key:
                                    break
                            if m["type"] == "rejected" and m["code"] == "busy":
                                continue  # the same key again
                            self.assertEqual(m["type"], "placed", m)
                            bets[key] = m["bet"]["bet_id"]
                            i += 1
                except TimeoutError:
                    # An OSError too, but not a cut: the engine answers every placement (a
                    # busy one at its deadline), so a silence is a lost request.
                    self.fail(f"no answer to {key} within 60 s")
                except (websockets.exceptions.ConnectionClosed, OSError):
                    continue  # reconnect; the key is retried

        await asyncio.gather(*(bettor(a, t) for a, t in tokens.items()))
        return bets

    def chaos(self, stop, applications, counts, progress):
        """Until `stop`, ends the sessions of each pool in turn, at most a few times a second
        and each time only after the engine got on with the work (`progress()`, a count of
        placed or settled bets, moved by PROGRESS_STEP). Cutting on a clock alone livelocks a
        loaded machine: reconnecting takes longer there than the next cut leaves, and the
        test then measures the machine's load, not what survives a cut."""
        while not stop.is_set():
            for application in applications:
                counts[application] = counts.get(application, 0) + self.terminate(application)
                cut_at = progress()
                if stop.wait(0.15):
                    return
                while progress() < cut_at + PROGRESS_STEP:
                    if stop.wait(0.02):
                        return

    def test_sessions_ended_under_placement_and_settlement(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, MARKET)
            self.send_market(engine, OTHER_MARKET)
            self.open_accounts(engine, ACCOUNTS, "10000.00")
            tokens = {a: self.token("account", str(a)) for a in ACCOUNTS}

            # 1. Placements while the placement connections are ended under them.
            stop, counts, burst = threading.Event(), {}, {}
            chaos = threading.Thread(target=self.chaos,
                                     args=(stop, ["fulltime-placement"], counts,
                                           lambda: len(burst)))
            chaos.start()
            try:
                asyncio.run(self.place_all(engine, tokens, 100,
                                           [(1001, "2.50"), (1002, "3.10")],
                                           BURST_BETS, "b", burst))
            finally:
                stop.set()
                chaos.join()
            self.assertGreater(counts["fulltime-placement"], 0, "no session was ended")
            self.assertEqual(len(burst), len(ACCOUNTS) * BURST_BETS)
            self.assertEqual(len(set(burst.values())), len(burst), "a key holds two bets")

            # 2. The result settles while settlement's and placement's sessions are ended, and
            # placements continue on another market.
            status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
            self.assertEqual(status, 200, body)
            stop, counts, during = threading.Event(), {}, {}
            progress = psycopg.connect(self.db_url, autocommit=True)  # the chaos thread's

            def placed_and_settled():
                return len(during) + progress.execute(
                    "SELECT count(*) FROM bet_settlements s JOIN bets b USING (bet_id) "
                    "WHERE b.market_id = 100").fetchone()[0]

            chaos = threading.Thread(
                target=self.chaos,
                args=(stop, ["fulltime-settlement", "fulltime-placement"], counts,
                      placed_and_settled))
            chaos.start()
            try:
                asyncio.run(self.place_all(engine, tokens, 200, [(2001, "2.00")],
                                           DURING_BETS, "d", during))
                until = time.monotonic() + 180
                while self.sql("SELECT applied_seq FROM settlement_progress "
                               "WHERE market_id = 100")[0][0] < 1:
                    self.assertLess(time.monotonic(), until, "the market never settled:\n"
                                    + engine.log()[-3000:])
                    time.sleep(0.05)
            finally:
                stop.set()
                chaos.join()
                progress.close()
            self.assertGreater(counts.get("fulltime-settlement", 0), 0, counts)
            self.assertEqual(len(during), len(ACCOUNTS) * DURING_BETS)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())

        # Every key one bet; every bet of market 100 settled exactly once, at the right payout.
        rows = self.sql("SELECT count(*), count(DISTINCT idempotency_key) FROM bets")
        self.assertEqual(rows[0][0], rows[0][1])
        self.assertEqual(rows[0][0], len(ACCOUNTS) * (BURST_BETS + DURING_BETS))
        rows = self.sql("SELECT count(*), count(DISTINCT s.bet_id) FROM bet_settlements s "
                        "JOIN bets b USING (bet_id) WHERE b.market_id = 100")
        self.assertEqual(rows[0], (len(ACCOUNTS) * BURST_BETS, len(ACCOUNTS) * BURST_BETS))
        assert_money_invariants(self, self.db_url)


    def test_a_postgresql_fast_restart_under_placements(self):
        # The engine's own private cluster (no database URL), restarted with pg_ctl's fast mode
        # while bettors place: every session of every pool is cut at once, and the server is
        # away for the restart. Bettors retry with their keys; the pools reconnect.
        state = tempfile.mkdtemp(prefix="fulltime-e2e-restart-")
        os.chmod(state, 0o755)
        env = engine_env(state_dir=state)
        engine = Engine(env)
        try:
            engine.wait_ready(60)
            socket = re.search(r"private PostgreSQL cluster started \(socket in ([^)]+)\)",
                               engine.log()).group(1)
            url = f"host={socket} port=5432 user=fulltime dbname=fulltime"
            self.send_market(engine, MARKET)
            accounts = ACCOUNTS[:10]
            self.open_accounts(engine, accounts, "10000.00")
            tokens = {a: self.token("account", str(a)) for a in accounts}

            restarted = threading.Event()

            def restart_midway():
                until = time.monotonic() + 120
                while time.monotonic() < until:
                    with psycopg.connect(url, autocommit=True) as conn:
                        if conn.execute("SELECT count(*) FROM bets").fetchone()[0] >= 300:
                            break
                    time.sleep(0.02)
                command = [PG_BIN + "/pg_ctl", "-D", os.path.join(state, "postgres", "data"),
                           "restart", "-m", "fast", "-w", "-t", "60"]
                if os.geteuid() == 0:
                    command = ["runuser", "-u", "postgres", "--"] + command
                # No pipes: the restarted server inherits pg_ctl's output and would hold them.
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=90)
                restarted.set()

            restart = threading.Thread(target=restart_midway)
            restart.start()
            bets = asyncio.run(self.place_all(engine, tokens, 100,
                                              [(1001, "2.50"), (1002, "3.10")], 100, "r", {}))
            restart.join()
            self.assertTrue(restarted.is_set(), "the cluster was not restarted")
            self.assertEqual(len(bets), len(accounts) * 100)
            engine.wait_ready(60)
            self.assertIn("connection_lost", engine.log())

            status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
            self.assertEqual(status, 200, body)
            until = time.monotonic() + 120
            while True:
                with psycopg.connect(url, autocommit=True) as conn:
                    row = conn.execute("SELECT applied_seq FROM settlement_progress "
                                       "WHERE market_id = 100").fetchone()
                if row and row[0] >= 1:
                    break
                self.assertLess(time.monotonic(), until, "never settled:\n" + engine.log()[-3000:])
                time.sleep(0.05)
            with psycopg.connect(url, autocommit=True) as conn:
                count, keys = conn.execute(
                    "SELECT count(*), count(DISTINCT idempotency_key) FROM bets").fetchone()
            self.assertEqual((count, keys), (len(bets), len(bets)))
            assert_money_invariants(self, url)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())

if __name__ == "__main__":
    unittest.main()
