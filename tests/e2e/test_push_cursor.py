"""End-to-end: the push loop's cursor survives a restart (docs/schema.md, "Outbox"). A bet placed
over WebSocket, the engine stopped, the bet settled while no engine runs, the engine started
again: a bettor who connects after the restart is pushed the settlement written while the engine
was down, and the consumer's row in outbox_cursors moves past it.

With no engine running, the result is stored and applied by the engine's own SQL functions, one
autocommit statement per call, as the feed endpoint (fulltime_record_result) and a market actor
(fulltime_settle_step) call them; the settlement's outbox row is thus written while nothing reads
the outbox. Before the restart the snapshot's xmin has passed the row, so an engine that started
at the tail (as before the cursor was stored) would skip it as history. The restarted engine
must not read the row before the bettor has connected either (a bettor not connected gets
nothing, by design), and would otherwise race the connection: the test holds a lock on the
outbox (LOCK TABLE, no transaction id, so xmin moves on) until the bettor is connected, and the
loop's first read waits for it. Money invariants at the end."""

import asyncio
import json
import re
import time
import unittest
import urllib.request

import psycopg
import websockets.client

from fixtures import MARKET
from harness import Engine, EngineTestCase
from money import assert_money_invariants

# HOME_WINS as the feed stores it (core/feed_protocol.cpp, result_event_payload): factors in
# units of 1/10000.
HOME_WINS_PAYLOAD = json.dumps({"outcomes": [
    {"selection_id": 1001, "win": True, "void_factor": 0, "dead_heat_factor": 10000},
    {"selection_id": 1002, "win": False, "void_factor": 0, "dead_heat_factor": 10000}]})

DEADLINE_S = 30


class PushCursorTest(EngineTestCase):
    # A purge round every 200 ms (of the loop's passes), so the test sees the consumed rows go.
    ENGINE_ENV = {"FULLTIME_SETTLEMENT_OUTBOX_PURGE_INTERVAL_MS": "200"}

    def cursor(self):
        """The push consumer's stored cursor, as (xact_id text, outbox_id), or None."""
        rows = self.sql("SELECT last_xact_id::text, last_outbox_id FROM outbox_cursors "
                        "WHERE consumer = 'push'")
        return rows[0] if rows else None

    def cursor_passed(self, xact_id, outbox_id):
        """Whether the stored cursor is at or after the row (xact_id, outbox_id)."""
        rows = self.sql("SELECT (last_xact_id, last_outbox_id) >= (%s::xid8, %s::bigint) "
                        "FROM outbox_cursors WHERE consumer = 'push'", xact_id, outbox_id)
        return bool(rows and rows[0][0])

    def wait_cursor_passed(self, xact_id, outbox_id, engine):
        until = time.monotonic() + DEADLINE_S
        while not self.cursor_passed(xact_id, outbox_id):
            self.assertLess(time.monotonic(), until, "the cursor never passed the row:\n" +
                            engine.log())
            time.sleep(0.05)

    def resumed_after(self, engine):
        """The cursor the engine's push loop says it opened, once it has said so."""
        until = time.monotonic() + DEADLINE_S
        while not (m := re.search(r"consumer push reads the outbox after \((\d+), (\d+)\)",
                                  engine.log())):
            self.assertLess(time.monotonic(), until, "no cursor opened:\n" + engine.log())
            time.sleep(0.05)
        return m.group(1), int(m.group(2))

    def purged_total(self, engine):
        with urllib.request.urlopen(engine.url("/metrics"), timeout=10) as r:
            m = re.search(r"^fulltime_outbox_rows_purged_total (\d+)$", r.read().decode(),
                          re.MULTILINE)
        return int(m.group(1)) if m else None

    def wait_purged(self, xact_id, outbox_id, engine):
        """Waits until the outbox rows up to (xact_id, outbox_id) are gone and the engine counted
        them; returns its count."""
        until = time.monotonic() + DEADLINE_S
        while (self.sql("SELECT count(*) FROM outbox WHERE (xact_id, outbox_id) <= "
                        "(%s::xid8, %s::bigint)", xact_id, outbox_id)[0][0] > 0
               or not self.purged_total(engine)):
            self.assertLess(time.monotonic(), until, "the consumed rows were not purged:\n" +
                            engine.log())
            time.sleep(0.05)
        return self.purged_total(engine)

    def settle_step(self, conn):
        return conn.execute("SELECT status FROM fulltime_settle_step(100, 200, 1000)").fetchone()[0]

    def settle_while_down(self):
        """Stores and applies the home win with the engine's SQL functions; returns the outbox
        row of the settling batch as (xact_id, outbox_id)."""
        stored = self.sql("SELECT outcome FROM fulltime_record_result(100, 1, 'final-r1', "
                          "'result', %s::jsonb, 'feed-1')", HOME_WINS_PAYLOAD)
        self.assertEqual(stored, [("stored",)])
        with psycopg.connect(self.db_url, autocommit=True) as steps:
            until = time.monotonic() + DEADLINE_S
            while (status := self.settle_step(steps)) != "finished":
                self.assertIn(status, ("started", "fenced", "batch"))
                self.assertLess(time.monotonic(), until, "the event never finished")
                if status == "fenced":
                    time.sleep(0.05)
        rows = self.sql("SELECT xact_id::text, outbox_id FROM outbox "
                        "WHERE topic = 'settlement_batch'")
        self.assertEqual(len(rows), 1, rows)
        return rows[0]

    def wait_history(self, xact_id):
        """Waits until every transaction up to `xact_id` has finished, cluster-wide (the tests
        beside this one share transaction ids): its rows are then behind the tail."""
        until = time.monotonic() + DEADLINE_S
        while not self.sql("SELECT pg_snapshot_xmin(pg_current_snapshot()) > %s::xid8",
                           xact_id)[0][0]:
            self.assertLess(time.monotonic(), until, "xmin never passed " + xact_id)
            time.sleep(0.05)

    def test_a_settlement_written_while_the_engine_was_down_is_pushed_after_the_restart(self):
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, MARKET)
            self.open_accounts(engine, [42], "100.00")
            bettor = self.token("account", "42")
            bet_id = self.place_bet(engine, bettor)["bet_id"]
            # The cursor is stored as the loop reads: it passes the bet's own outbox row. On a
            # slow machine the row may already be purged, which the purge does only once every
            # consumer's cursor passed it: that says the same.
            placed = self.sql("SELECT xact_id::text, outbox_id FROM outbox "
                              "WHERE topic = 'bet_placed'")
            if placed:
                self.wait_cursor_passed(*placed[0], engine)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        stored_before = self.cursor()

        settled_row = self.settle_while_down()
        # Written after everything the stopped engine had read, and history by the tail rule.
        self.assertFalse(self.cursor_passed(*settled_row))
        self.assertEqual(self.cursor(), stored_before)
        self.wait_history(settled_row[0])

        with psycopg.connect(self.db_url) as holder:
            holder.execute("LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE")
            engine = Engine(self.env)
            try:
                engine.wait_ready()
                # It resumed after the stored cursor (not at the tail, where a new consumer starts).
                self.assertEqual(self.resumed_after(engine), stored_before)

                async def bettor_after_restart():
                    async with websockets.client.connect(
                            engine.ws_url("/v1/bets?token=" + bettor)) as ws:
                        # Connected (a request answered: the session is registered for pushes),
                        # the row not read yet; then the loop's read may go on.
                        await ws.send(json.dumps({"type": "balance", "id": "b1"}))
                        balance = json.loads(await asyncio.wait_for(ws.recv(), 10))
                        self.assertEqual(balance["type"], "balance", balance)
                        self.assertFalse(self.cursor_passed(*settled_row))
                        holder.rollback()
                        return json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))

                pushed = asyncio.run(bettor_after_restart())
                self.assertEqual(pushed, {"type": "bet_settled", "bet_id": bet_id, "version": 1,
                                          "outcome": "won", "payout": "25.00"})
                self.wait_cursor_passed(*settled_row, engine)
                # The only consumer has read it: the purge deletes it and counts it.
                self.assertGreaterEqual(self.wait_purged(*settled_row, engine), 1)
            finally:
                self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    unittest.main()
