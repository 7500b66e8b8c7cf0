"""Peak diagnosis end to end: each of the article's three verdicts caused for real against the
real PostgreSQL while bettors place over WebSocket, and read back from GET /v1/diagnostics and
`fulltime diagnose`; a quiet run's verdict; /metrics; and GET /dashboard rendered by headless
Chromium with data in its charts (the screenshot is kept under build/test-artifacts/).

  - connections: one placement connection, no grouping, sixteen bettors;
  - shared rows: a market's settlement burst on the accounts that keep placing on another
    market, with a long lock timeout;
  - the oldest transaction: a session left idle in a transaction while placements churn the
    hot rows, named by its pid within 30 s;
  - connections behind PgBouncer: SHOW POOLS read on its admin console, a client waiting.

Every wait is on an event (the verdict changing, a market applied) with a deadline, never a
fixed sleep. Money invariants after each scenario."""

import asyncio
import json
import os
import re
import shutil
import subprocess
import threading
import time
import unittest

import psycopg
import websockets.client
import websockets.exceptions

from fixtures import MARKET, OTHER_MARKET
from harness import BINARY, Engine, EngineTestCase, PgBouncer, admin_sql, run_cli
from money import assert_money_invariants

# The markets of the settlement burst: 100..103, selections m*10+1 (home) and m*10+2.
BURST = [100, 101, 102, 103]


def burst_market(m):
    return {"type": "market", "market_id": m, "event_id": m, "name": f"Match {m}",
            "status": "open",
            "selections": [{"selection_id": m * 10 + 1, "name": "Home", "odds": "2.50"},
                           {"selection_id": m * 10 + 2, "name": "Away", "odds": "3.10"}]}


def burst_result(m):
    return {"type": "result", "market_id": m, "seq": 1, "event_key": f"r-{m}",
            "outcomes": [{"selection_id": m * 10 + 1, "result": "win"},
                         {"selection_id": m * 10 + 2, "result": "lose"}]}
ARTIFACTS = os.path.join(os.path.dirname(os.path.abspath(BINARY)), "test-artifacts")
VERDICT_TIMEOUT_S = 120


class Load:
    """Bettors placing 1.00 bets in a closed loop, each on its own connection, until stop(),
    each resting `pause_s` after an answer (so that a long scenario does not leave more bets
    than the money checks need to read). Runs its own asyncio loop on a thread so that the
    test can poll the engine meanwhile."""

    def __init__(self, engine, tokens, selection_id, odds, prefix, pause_s=0.02):
        self.engine, self.tokens, self.prefix = engine, tokens, prefix
        self.selection_id, self.odds, self.pause_s = selection_id, odds, pause_s
        self.answers = {}
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()

    async def _bettor(self, account, token):
        url = self.engine.ws_url("/v1/bets")
        async with websockets.client.connect(
                url, extra_headers={"Authorization": "Bearer " + token}) as ws:
            i = 0
            while not self._stop.is_set():
                await ws.send(json.dumps({
                    "type": "place", "id": str(i), "idempotency_key": f"{self.prefix}-{account}-{i}",
                    "selection_id": self.selection_id, "stake": "1.00", "odds": self.odds}))
                while True:
                    m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    if m.get("id") == str(i):
                        break
                kind = m["type"] if m["type"] != "rejected" else "rejected:" + m["code"]
                self.answers[kind] = self.answers.get(kind, 0) + 1
                i += 1
                if self.pause_s:
                    await asyncio.sleep(self.pause_s)

    async def _run(self):
        results = await asyncio.gather(*(self._bettor(a, t) for a, t in self.tokens.items()),
                                       return_exceptions=True)
        self.errors = [r for r in results if isinstance(r, BaseException)]

    def placed(self):
        return self.answers.get("placed", 0)

    def stop(self):
        self._stop.set()
        self._thread.join(120)


class DiagnosisTest(EngineTestCase):
    SAMPLE_ENV = {"FULLTIME_DIAGNOSTICS_SAMPLE_INTERVAL_MS": "250",
                  "FULLTIME_DIAGNOSTICS_VERDICT_WINDOW_S": "10"}

    def start(self, extra=None):
        self.env.update(self.SAMPLE_ENV)
        self.env.update(extra or {})
        engine = Engine(self.env)
        engine.wait_ready()
        return engine

    def bettors(self, engine, accounts, deposit="100000.00"):
        self.open_accounts(engine, accounts, deposit)
        return {a: self.token("account", str(a)) for a in accounts}

    def diagnostics(self, engine):
        status, body = engine.get_json("/v1/diagnostics",
                                       {"Authorization": "Bearer " + self.admin})
        self.assertEqual(status, 200, body)
        return body

    def wait_verdict(self, engine, code, timeout_s=VERDICT_TIMEOUT_S, accept=None):
        """Polls GET /v1/diagnostics until its verdict is `code` (any but the scenario's own
        when `code` is None: the load has been judged before the cause starts) and
        `accept(doc)` holds; returns the document."""
        until = time.monotonic() + timeout_s
        seen = []
        while time.monotonic() < until:
            doc = self.diagnostics(engine)
            v = doc["verdict"]
            if not seen or seen[-1] != v["code"]:
                seen.append(v["code"])
            judged = v["code"] not in ("no_data", "shared_rows", "oldest_transaction")
            if (v["code"] == code if code else judged) and (accept is None or accept(doc)):
                return doc
            time.sleep(0.25)
        self.fail(f"verdict never became {code}; seen in order: {seen}; last: "
                  + json.dumps(doc["verdict"], indent=1) + "\n" + engine.log()[-3000:])

    def diagnose_cli(self, engine):
        return run_cli(["diagnose", "--url", f"http://127.0.0.1:{engine.port}"], self.env)

    def test_a_quiet_run_metrics_diagnose_and_the_dashboard(self):
        # A replication slot that reserves WAL (cluster-wide: named after this test's database
        # and dropped after it) for the slot readings.
        slot = self.db_name + "_slot"
        admin_sql("SELECT pg_create_physical_replication_slot(%s, true)", slot)
        self.addCleanup(admin_sql, "SELECT pg_drop_replication_slot(%s)", slot)
        engine = self.start()
        try:
            self.send_market(engine, MARKET)
            load = Load(engine, self.bettors(engine, list(range(1, 9))), 1001, "2.50", "q")
            try:
                doc = self.wait_verdict(
                    engine, "quiet",
                    accept=lambda d: d["verdict"]["samples"] >= 10 and
                    any(x and x > 0 for x in d["series"]["placements_per_s"][-5:]))
                self.assertEqual(doc["verdict"]["summary"], "Nothing holds placement back.")
                self.assertEqual(doc["verdict"]["findings"], [])
                series = doc["series"]
                n = len(series["t_ms"])
                for key in ("placement_p99_ms", "lock_waiters", "oldest_transaction_ms",
                            "settled_bets_per_s", "settlement_backlog_age_ms"):
                    self.assertEqual(len(series[key]), n, key)
                self.assertEqual(sorted(series["dead_tuples"]),
                                 ["accounts", "idempotency_keys", "market_exposure",
                                  "settlement_progress"])
                self.assertEqual(sorted(series["pool_waiting"]),
                                 ["background", "placement", "read", "settlement"])
                self.assertEqual(series["t_ms"], sorted(series["t_ms"]))
                # since_ms: only the newer samples, for a client that appends (the dashboard).
                cut = series["t_ms"][-3]
                status, newer = engine.get_json(f"/v1/diagnostics?since_ms={cut}",
                                                {"Authorization": "Bearer " + self.admin})
                self.assertEqual(status, 200)
                self.assertTrue(newer["series"]["t_ms"])
                self.assertTrue(all(t > cut for t in newer["series"]["t_ms"]))
                self.assertEqual(newer["series"]["t_ms"][:2], series["t_ms"][-2:])
                self.assertEqual(len(newer["series"]["dead_tuples"]["accounts"]),
                                 len(newer["series"]["t_ms"]))
                self.assertEqual(doc["sampler"]["interval_ms"], 250)
                self.assertEqual(doc["sampler"]["failures_total"], 0, doc["sampler"])
                self.assertTrue(doc["latest"]["database_ok"])
                # The database's activity is the newest sample's, not a second read.
                database = doc["database"]
                self.assertEqual(database["sampled_at_ms"], doc["latest"]["t_ms"])
                self.assertEqual(database["lock_waiters"], 0)
                self.assertIn("accounts", database["hot_tables"])
                self.assertIn("server_settings", database)
                mine = [x for x in doc["latest"]["slots"] if x["name"] == slot]
                self.assertEqual(len(mine), 1, doc["latest"]["slots"])
                self.assertEqual((mine[0]["type"], mine[0]["wal_status"]), ("physical", "reserved"))

                status, metrics = engine.get("/metrics")
                self.assertEqual(status, 200)
                for name in ("fulltime_db_lock_waiting_sessions ",
                             "fulltime_db_oldest_transaction_age_seconds ",
                             'fulltime_db_table_dead_tuples{table="accounts"} ',
                             'fulltime_diagnosis_verdict{verdict="quiet"} 1',
                             "fulltime_settlement_backlog_age_seconds ",
                             'fulltime_db_pool_acquire_wait_seconds_count{pool="background"} ',
                             "fulltime_placement_queued ",
                             f'fulltime_db_replication_slot_wal_status{{slot="{slot}",'
                             'status="reserved"} 1'):
                    self.assertIn(name, metrics)

                code, out, err = self.diagnose_cli(engine)
                self.assertEqual(code, 0, out + err)
                self.assertIn("verdict: quiet", out)
                self.assertIn("Nothing holds placement back.", out)

                self.check_dashboard(engine)
            finally:
                load.stop()
            self.assertEqual(load.errors, [])
            self.assertGreater(load.placed(), 0)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)

    def check_dashboard(self, engine):
        """Loads /dashboard in headless Chromium while the load runs: every chart of the engine's
        series has points, the verdict is shown; keeps a screenshot."""
        status, _ = engine.get("/dashboard")
        self.assertEqual(status, 401)
        status, page = engine.get("/dashboard?token=" + self.admin)
        self.assertEqual(status, 200)
        self.assertIn("/v1/diagnostics", page)
        self.assertNotRegex(page, r"<script[^>]+src=|<link[^>]+stylesheet|https?://")
        url = engine.url("/dashboard?token=" + self.admin)
        dom = subprocess.run(self.chromium() + ["--dump-dom", url], capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
        html = dom.stdout
        self.assertRegex(html, r'<body[^>]*data-rendered="1"', html[:2000])
        self.assertRegex(html, r'id="verdict"[^>]*data-code="quiet"|data-code="quiet"[^>]*id="verdict"')
        points = {m.group(1): int(m.group(2)) for m in re.finditer(
            r'data-chart="([a-z_]+)"[^>]*data-points="(\d+)"', html)}
        for chart in ("latency", "placements", "settled", "backlog", "locks", "pools",
                      "oldest_tx", "dead_tuples"):
            self.assertIn(chart, points, html[:3000])
        for chart in ("latency", "placements", "pools", "dead_tuples", "locks"):
            self.assertGreater(points[chart], 0, f"chart {chart} has no points: {points}")
        self.screenshot(engine, "dashboard.png")

    def chromium(self):
        chromium = shutil.which("chromium")
        self.assertIsNotNone(chromium, "chromium is not installed: run scripts/install-deps")
        return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--window-size=1280,1800", "--virtual-time-budget=5000"]

    def screenshot(self, engine, name):
        """Keeps the dashboard as Chromium draws it now in build/test-artifacts/NAME."""
        os.makedirs(ARTIFACTS, exist_ok=True)
        shot = os.path.join(ARTIFACTS, name)
        if os.path.exists(shot):
            os.remove(shot)
        png = subprocess.run(self.chromium() + ["--screenshot=" + shot,
                                                engine.url("/dashboard?token=" + self.admin)],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(png.returncode, 0, png.stderr[-2000:])
        with open(shot, "rb") as f:
            head = f.read(8)
        self.assertEqual(head, b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(shot), 20_000)

    def test_a_pool_too_small_under_load_is_connections(self):
        # One placement actor with one connection, and no group commit: sixteen bettors wait
        # for it in turn, each far longer than its statement takes.
        engine = self.start({"FULLTIME_GATEWAY_IO_THREADS": "1",
                             "FULLTIME_PLACEMENT_ACTORS": "1",
                             "FULLTIME_DATABASE_POOLS_PLACEMENT_SIZE_MAX": "1",
                             "FULLTIME_PLACEMENT_GROUP_BETS_MAX": "1"})
        try:
            self.send_market(engine, MARKET)
            load = Load(engine, self.bettors(engine, list(range(1, 17))), 1001, "2.50", "c",
                        pause_s=0)
            try:
                doc = self.wait_verdict(engine, "connections")
                v = doc["verdict"]
                self.assertIn("connection", v["summary"])
                self.assertTrue(any("waits for a connection in" in e for e in v["evidence"]), v)
                self.assertIn("lock waits flat", v["evidence"])
                code, out, err = self.diagnose_cli(engine)
                self.assertEqual(code, 1, out + err)
                self.assertIn("verdict: connections", out)
            finally:
                load.stop()
            self.assertEqual(load.errors, [])
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)

    def test_a_settlement_burst_on_the_accounts_placements_use_is_shared_rows(self):
        # Forty-one accounts hold open bets on four markets; forty keep placing on market 200.
        # The four results settle at once (one chain of 100-bet batches per market, paced at
        # duty 10 %), and once they have started an operator's transaction takes account 41's
        # balance row. Each batch updates its accounts' balance rows in ascending order: the
        # batch that holds account 41's bets takes the rows of accounts below it, then waits
        # for row 41, and the placements on those accounts wait for the batch. With long lock
        # (and statement) timeouts nobody gives up: lock waits rise with the settlement
        # batches, and the session at the root of the chain is named.
        batch = 100
        engine = self.start({"FULLTIME_PLACEMENT_LOCK_TIMEOUT_MS": "60000",
                             "FULLTIME_SETTLEMENT_LOCK_TIMEOUT_MS": "60000",
                             "FULLTIME_DATABASE_STATEMENT_TIMEOUT_MS": "60000",
                             "FULLTIME_DATABASE_QUERY_TIMEOUT_MS": "70000",
                             "FULLTIME_SETTLEMENT_BATCH_BETS_MAX": str(batch),
                             "FULLTIME_SETTLEMENT_LANES": "1",
                             "FULLTIME_SETTLEMENT_DUTY_PERCENT": "10",
                             "FULLTIME_DIAGNOSTICS_SAMPLE_INTERVAL_MS": "200"})
        accounts = list(range(1, 42))
        per_account = 40
        try:
            for m in BURST:
                self.send_market(engine, burst_market(m))
            self.send_market(engine, OTHER_MARKET)
            tokens = self.bettors(engine, accounts)
            # Settlement takes a market's bets in bet_id order. The others' first `ahead` bets
            # each (32: 320 a market) fill each market's first three batches; account 41's ten
            # bets a market come next, with the others' last 80 after them, so they fall in each
            # market's fourth batch, beside 90 bets of accounts 1..40: three batches and their
            # rests (nine times a batch each) after the market started, which leaves the
            # operator ample time to take the row first.
            others = {a: t for a, t in tokens.items() if a != 41}
            ahead = 3 * batch * len(BURST) // len(others)
            asyncio.run(self.place_many(engine, others, range(0, ahead)))
            asyncio.run(self.place_many(engine, {41: tokens[41]}, range(0, per_account)))
            asyncio.run(self.place_many(engine, others, range(ahead, per_account)))
            load = Load(engine, others, 2001, "2.00", "s")
            try:
                self.wait_verdict(engine, None, accept=lambda d: load.placed() > 0)
                # The operator's session is open (and has no transaction id) before the results.
                with psycopg.connect(self.db_url, application_name="slow-operator") as holder:
                    holder.execute("SET idle_in_transaction_session_timeout = 0")
                    holder.commit()
                    pid = holder.execute("SELECT pg_backend_pid()").fetchone()[0]
                    holder.commit()
                    for m in BURST:
                        status, body = engine.post_json("/v1/feed", burst_result(m),
                                                        self.producer)
                        self.assertEqual(status, 200, body)
                    # Once a market's event has started (its fence set: a transaction that got
                    # its id earlier would hold the market at the fence, not in its batches),
                    # the operator takes account 41's row.
                    until = time.monotonic() + VERDICT_TIMEOUT_S
                    while not self.sql("SELECT 1 FROM settlement_progress WHERE market_id = "
                                       "ANY(%s) AND (current_seq = 1 OR applied_seq = 1) "
                                       "LIMIT 1", BURST):
                        self.assertLess(time.monotonic(), until, "the burst never started")
                        time.sleep(0.005)
                    holder.execute("SELECT available FROM accounts WHERE account_id = 41 "
                                   "FOR NO KEY UPDATE").fetchone()
                    # The first verdict naming the operator may come from a sample in which
                    # only the batch waited for it yet; the placements queue behind the batch
                    # a moment later, and the verdict names the settlement session as a
                    # blocker too.
                    doc = self.wait_verdict(
                        engine, "shared_rows",
                        accept=lambda d: d["verdict"].get("culprit", {}).get("pid") == pid and any(
                            "fulltime-settlement" in e for e in d["verdict"].get("evidence", [])))
                    holder.rollback()
                v = doc["verdict"]
                self.assertIn("with settlement batches", v["summary"], v)
                self.assertEqual(v["culprit"]["application_name"], "slow-operator")
                self.assertTrue(any(e.startswith("lock waits in") for e in v["evidence"]), v)
                self.assertTrue(any("fulltime-settlement" in e for e in v["evidence"]), v)
                self.assertTrue(any(x and x > 0 for x in doc["series"]["lock_waiters"]))
                blocked = [w for w in doc["latest"]["lock_waits"]
                           if w["application_name"].startswith("fulltime-")]
                self.assertTrue(blocked, doc["latest"])
            finally:
                load.stop()
            self.assertEqual(load.errors, [])
            until = time.monotonic() + VERDICT_TIMEOUT_S
            while self.sql("SELECT count(*) FROM settlement_progress WHERE market_id = ANY(%s) "
                           "AND applied_seq = 1", BURST)[0][0] < len(BURST):
                self.assertLess(time.monotonic(), until, "the burst never finished")
                time.sleep(0.1)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        settled = self.sql("SELECT count(DISTINCT s.bet_id) FROM bet_settlements s "
                           "JOIN bets b USING (bet_id) WHERE b.market_id = ANY(%s) "
                           "AND s.kind = 'settle'", BURST)
        self.assertEqual(settled[0][0], len(accounts) * per_account)
        assert_money_invariants(self, self.db_url)

    async def place_many(self, engine, tokens, indexes):
        """Places a bet numbered i for each i of `indexes` from each account, bet i on market
        BURST[i % 4] (home or away in turns of four), 8 in flight per account; a `busy`
        answer is retried with its key."""
        indexes = list(indexes)

        async def one(account, token):
            async with websockets.client.connect(
                    engine.ws_url("/v1/bets"),
                    extra_headers={"Authorization": "Bearer " + token}) as ws:
                def place(i):
                    m = BURST[i % len(BURST)]
                    home = (i // len(BURST)) % 2 == 0
                    return ws.send(json.dumps({
                        "type": "place", "id": str(i), "idempotency_key": f"m-{account}-{i}",
                        "selection_id": m * 10 + (1 if home else 2), "stake": "1.00",
                        "odds": "2.50" if home else "3.10"}))
                sent, placed = 0, 0
                while placed < len(indexes):
                    while sent < len(indexes) and sent - placed < 8:
                        await place(indexes[sent])
                        sent += 1
                    m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    if "id" not in m:
                        continue
                    if m["type"] == "rejected" and m["code"] == "busy":
                        await place(int(m["id"]))
                        continue
                    self.assertEqual(m["type"], "placed", m)
                    placed += 1
        await asyncio.gather(*(one(a, t) for a, t in tokens.items()))

    def test_an_idle_transaction_under_churn_is_the_oldest_transaction(self):
        engine = self.start({"FULLTIME_DIAGNOSTICS_SAMPLE_INTERVAL_MS": "500",
                             "FULLTIME_DIAGNOSTICS_VERDICT_WINDOW_S": "30"})
        try:
            self.send_market(engine, MARKET)
            load = Load(engine, self.bettors(engine, list(range(1, 9))), 1001, "2.50", "o")
            try:
                self.wait_verdict(engine, None, accept=lambda d: load.placed() > 0)
                # A forgotten writer: a snapshot taken, then nothing, with the server's idle
                # timeout lifted for this session.
                with psycopg.connect(self.db_url, application_name="forgotten-report") as idle:
                    idle.execute("SET idle_in_transaction_session_timeout = 0")
                    idle.commit()
                    idle.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                    pid = idle.execute("SELECT pg_backend_pid()").fetchone()[0]
                    idle.execute("SELECT count(*) FROM accounts").fetchone()
                    began = time.monotonic()
                    doc = self.wait_verdict(
                        engine, "oldest_transaction",
                        accept=lambda d: d["verdict"].get("culprit", {}).get("pid") == pid)
                    named_after = time.monotonic() - began
                    v = doc["verdict"]
                    self.assertLessEqual(named_after, 30, f"named after {named_after:.1f} s")
                    self.assertEqual(v["culprit"]["application_name"], "forgotten-report")
                    self.assertEqual(v["culprit"]["state"], "idle in transaction")
                    self.assertIn(f"pid {pid} (forgotten-report)", v["summary"])
                    self.assertTrue(any(e.startswith("dead tuples on the hot tables +")
                                        for e in v["evidence"]), v)
                    idle_pids = [s["pid"] for s in doc["latest"]["idle_in_transaction_sessions"]]
                    self.assertIn(pid, idle_pids)
                    code, out, err = self.diagnose_cli(engine)
                    self.assertEqual(code, 1, out + err)
                    self.assertIn(f"look at: pid {pid} (forgotten-report)", out)
                    self.screenshot(engine, "dashboard-oldest-transaction.png")
                    idle.rollback()
            finally:
                load.stop()
            self.assertEqual(load.errors, [])
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)


    def test_pgbouncer_clients_waiting_are_read_from_show_pools(self):
        # A PgBouncer in transaction mode with one server connection for the test database:
        # one client holds it in a transaction, another waits. The sampler reads SHOW POOLS on
        # the admin console and the waiting client makes the verdict connections.
        bouncer = PgBouncer(self.db_name)
        self.addCleanup(bouncer.stop)
        engine = self.start({"FULLTIME_DIAGNOSTICS_PGBOUNCER_ADMIN_URL": bouncer.admin_url})
        try:
            with psycopg.connect(bouncer.url, autocommit=True) as holder:
                holder.execute("BEGIN")
                holder.execute("SELECT 1").fetchone()
                waiter = threading.Thread(target=bouncer.query_one, daemon=True)
                waiter.start()
                doc = self.wait_verdict(engine, "connections")
                holder.execute("COMMIT")
                waiter.join(60)
            self.assertGreaterEqual(max(x or 0 for x in doc["series"]["pgbouncer_clients_waiting"]), 1)
            self.assertIn("pgbouncer", doc["latest"])
            self.assertTrue(any(e.startswith("PgBouncer clients waiting") for e in
                                doc["verdict"]["evidence"]), doc["verdict"])
            self.assertEqual(doc["sampler"]["failures_total"], 0, doc["sampler"])
            status, metrics = engine.get("/metrics")
            self.assertIn("fulltime_pgbouncer_clients_waiting ", metrics)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())


if __name__ == "__main__":
    unittest.main()
