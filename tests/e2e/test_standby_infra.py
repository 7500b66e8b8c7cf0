"""The standby helper itself (standby.py), without the engine: a row written on the primary is
read on the standby once replayed; with replay paused it is received but not seen until replay
resumes; a stopped standby refuses sessions and, started again, catches up through its slot;
a query that holds replay back is cancelled after max_standby_streaming_delay (1 s)."""

import threading
import time
import unittest

import psycopg
import psycopg.errors

from harness import drop_database, scratch_database, wait_until
from standby import Standby


class StandbyInfraTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        started = time.monotonic()
        cls.standby = Standby(slot=True)
        cls.addClassCleanup(cls.standby.destroy)
        print(f"\nstandby {cls.standby.name} made in {time.monotonic() - started:.2f} s")

    def setUp(self):
        self.db_name, self.db_url = scratch_database()
        self.addCleanup(drop_database, self.db_name)
        self.primary("CREATE TABLE t (id int PRIMARY KEY, note text)")
        # The new database and its table reach the standby before a session opens there.
        self.standby.wait_caught_up()
        self.standby_url = self.standby.url(self.db_name)
        # A test that stops the standby or pauses replay leaves it as the next test needs it.
        self.addCleanup(self.running_and_replaying)

    def running_and_replaying(self):
        if not self.standby.is_running():
            self.standby.start()
        self.standby.resume_replay()

    def primary(self, query, *args):
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            conn.execute(query, args)

    def on_standby(self, query, *args):
        with psycopg.connect(self.standby_url, autocommit=True) as conn:
            return conn.execute(query, args).fetchall()

    def test_a_row_written_on_the_primary_is_read_on_the_standby(self):
        self.primary("INSERT INTO t VALUES (1, 'one')")
        lsn = self.standby.current_lsn()
        self.standby.wait_caught_up(lsn)
        self.assertEqual(self.on_standby("SELECT id, note FROM t"), [(1, "one")])
        # The standby is read-only.
        with self.assertRaises(psycopg.errors.ReadOnlySqlTransaction):
            self.on_standby("INSERT INTO t VALUES (2, 'two')")
        # The primary sees it streaming, through its slot.
        rows = self.standby.replication_rows()
        self.assertEqual([r["state"] for r in rows.replication], ["streaming"], rows)
        self.assertEqual([(s["slot_type"], s["active"]) for s in rows.slots],
                         [("physical", True)], rows)

    def test_paused_replay_holds_a_row_back_until_resumed(self):
        self.standby.pause_replay()
        self.primary("INSERT INTO t VALUES (1, 'one')")
        lsn = self.standby.current_lsn()
        # Received, so only the pause keeps it from the standby's sessions.
        self.standby.wait_received(lsn)
        self.assertEqual(self.on_standby("SELECT id FROM t"), [])
        self.assertFalse(self.on_standby("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                         lsn)[0][0])
        self.standby.resume_replay()
        self.standby.wait_caught_up(lsn)
        self.assertEqual(self.on_standby("SELECT id FROM t"), [(1,)])

    def test_a_stopped_standby_refuses_sessions_and_catches_up_after_start(self):
        self.standby.stop()
        self.assertFalse(self.standby.is_running())
        with self.assertRaises(psycopg.OperationalError):
            self.on_standby("SELECT 1")
        self.primary("INSERT INTO t SELECT g, 'bulk' FROM generate_series(1, 1000) g")
        lsn = self.standby.current_lsn()
        # Away: no replication row; the slot waits at the standby's position, holding WAL
        # within max_slot_wal_keep_size (scripts/lib.sh), so it has a safe_wal_size.
        rows = self.standby.replication_rows()
        self.assertEqual(rows.replication, [])
        self.assertEqual(len(rows.slots), 1, rows)
        self.assertFalse(rows.slots[0]["active"], rows)
        self.assertIn(rows.slots[0]["wal_status"], ("reserved", "extended"), rows)
        self.assertIsNotNone(rows.slots[0]["safe_wal_size"], rows)

        self.standby.start()
        self.standby.wait_caught_up(lsn)
        self.assertEqual(self.on_standby("SELECT count(*) FROM t"), [(1000,)])
        wait_until(lambda: self.standby.replication_rows().replication,
                   "the primary never saw the standby streaming again")

    def test_a_query_holding_replay_back_is_cancelled_after_a_second(self):
        self.primary("INSERT INTO t VALUES (1, 'one')")
        self.standby.wait_caught_up()
        outcome = {}

        def long_read():
            started = time.monotonic()
            try:
                self.on_standby("SELECT pg_sleep(20) FROM t")
                outcome["error"] = None
            except psycopg.Error as e:
                outcome["error"] = e
            outcome["seconds"] = time.monotonic() - started

        reader = threading.Thread(target=long_read)
        reader.start()
        try:
            wait_until(lambda: self.on_standby(
                "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(20)%%' "
                "AND state = 'active'"), "the long read never started on the standby")
            # Its replay needs an access exclusive lock the long read's share lock blocks.
            self.primary("ALTER TABLE t ADD COLUMN later int")
            lsn = self.standby.current_lsn()
            reader.join(15)
            self.assertFalse(reader.is_alive(), "the long read was not cancelled")
            self.assertIsInstance(outcome["error"], psycopg.errors.SerializationFailure,
                                  outcome)
            self.assertIn("conflict with recovery", str(outcome["error"]))
            self.assertLess(outcome["seconds"], 10, outcome)
            self.standby.wait_caught_up(lsn)
            self.assertEqual(self.on_standby("SELECT id, later FROM t"), [(1, None)])
        finally:
            reader.join(30)


if __name__ == "__main__":
    unittest.main()
