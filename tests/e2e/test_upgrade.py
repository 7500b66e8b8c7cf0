"""An upgrade, as an operator runs it (docs/operations.md, "Upgrades"): a database that an earlier
release served is restored from tests/e2e/upgrade/ (made by scripts/upgrade-fixture with that
release's binary, see upgrade_fixture.py), and this binary says what is pending, migrates it,
and serves it: no balance or bet changes in the migration, the audit passes, the bets the earlier
release left open settle, the read model shows the bets it placed, and new bets are taken. One
subtest per file in tests/e2e/upgrade/, so each release that changes the schema adds one.

The other direction, a database newer than the binary, is test_service.py's."""

import asyncio
import glob
import gzip
import json
import os
import subprocess
import unittest

import websockets.client

from harness import Engine, EngineTestCase, database_env, drop_database, run_cli, wait_until
from money import assert_money_invariants
from upgrade_fixture import ACCOUNTS, BETS

FIXTURES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "upgrade", "*.sql.gz")))
MIGRATIONS = sorted(os.path.basename(p) for p in glob.glob(
    os.path.join(os.path.dirname(__file__), "..", "..", "db", "migrations", "*.sql")))
OTHER_WINS = {"type": "result", "market_id": 200, "seq": 1, "event_key": "other-r1",
              "outcomes": [{"selection_id": 2001, "result": "win"}]}
KEY_RETENTION_S = 31622400  # placement.idempotency_retention_s at its maximum, 366 days
NEW_MARKET = {"type": "market", "market_id": 300, "event_id": 30, "name": "After the upgrade",
              "status": "open",
              "selections": [{"selection_id": 3001, "name": "Home", "odds": "1.80"}]}


def cents(amount):
    units, _, fraction = amount.partition(".")
    return int(units) * 100 + int((fraction + "00")[:2])


def restore(fixture, url):
    """Loads a fixture into the (empty) database at `url` as the engine's role, with psql."""
    with gzip.open(fixture, "rb") as f:
        sql = f.read()
    done = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url],
                          input=sql, capture_output=True)
    if done.returncode != 0:
        raise AssertionError(f"restoring {fixture} failed:\n{done.stderr.decode()[-3000:]}")


class UpgradeTest(EngineTestCase):
    def test_a_database_of_an_earlier_release_is_migrated_and_served(self):
        self.assertTrue(FIXTURES, "no fixture in tests/e2e/upgrade/")
        for fixture in FIXTURES:
            with self.subTest(fixture=os.path.basename(fixture)):
                # Keys kept as long as the engine allows, so the fixture's still replay.
                name, url, env = database_env(
                    {"FULLTIME_PLACEMENT_IDEMPOTENCY_RETENTION_S": str(KEY_RETENTION_S)})
                try:
                    restore(fixture, url)
                    self.upgrade(url, env)
                finally:
                    drop_database(name)

    def rows(self, url, query):
        out = subprocess.run(["psql", "-X", "-A", "-t", "-F", "|", "-d", url, "-c", query],
                             capture_output=True, text=True, check=True).stdout
        return sorted(line.split("|") for line in out.splitlines() if line)

    def balances(self, url):
        return self.rows(url, "SELECT account_id, available, reserved, owed FROM accounts")

    def bets(self, url):
        return self.rows(url, "SELECT bet_id, account_id, selection_id, stake, odds, "
                              "idempotency_key, placed_at FROM bets")

    def upgrade(self, url, env):
        applied_before = [r[0] for r in self.rows(
            url, "SELECT name FROM fulltime_schema_migrations")]
        pending = [m for m in MIGRATIONS if m not in applied_before]
        self.assertTrue(pending, "the fixture is as new as this binary: it tests nothing")
        balances, bets = self.balances(url), self.bets(url)
        self.assertEqual(len(bets), len(ACCOUNTS) * len(BETS))

        code, out, err = run_cli(["migrate", "--status", "--json"], env)
        self.assertEqual(code, 1, err)
        status = json.loads(out)
        self.assertEqual((status["state"], status["pending"]), ("pending", pending), status)
        self.assertEqual(sorted(status["applied"]), sorted(applied_before))
        code, _, err = run_cli(["migrate"], env)
        self.assertEqual(code, 0, err)
        code, out, err = run_cli(["migrate", "--status", "--json"], env)
        self.assertEqual((code, json.loads(out)["state"]), (0, "current"), out + err)

        # The migration moved no money and lost no bet.
        self.assertEqual(self.balances(url), balances)
        self.assertEqual(self.bets(url), bets)
        assert_money_invariants(self, url)

        engine = Engine(env)
        try:
            engine.wait_ready(60)
            asyncio.run(self.serve(engine, url))
            # Market 200's bets, open across the upgrade, settled by this release.
            wait_until(lambda: self.rows(
                url, "SELECT 1 FROM settlement_progress WHERE market_id = 200 "
                     "AND applied_seq >= 1"), "market 200 never settled", 120)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        # Each account's market-200 stakes came back doubled; account 2 staked 1.00 on 300.
        on_200 = sum(cents(stake) for selection, _, stake in BETS if selection == 2001)
        for account, available, reserved, owed in self.balances(url):
            _, available0, reserved0, owed0 = next(b for b in balances if b[0] == account)
            new_stake = cents("1.00") if account == "2" else 0
            self.assertEqual((int(available), int(reserved), owed),
                             (int(available0) + 2 * on_200 - new_stake,
                              int(reserved0) - on_200 + new_stake, owed0), f"account {account}")
        assert_money_invariants(self, url)

    async def serve(self, engine, url):
        producer = self.token("producer", "feed-1")
        bettor = self.token("account", "2")
        async with websockets.client.connect(engine.ws_url("/v1/bets?token=" + bettor)) as ws:
            async def ask(message):
                await ws.send(json.dumps(message))
                while True:
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
                    if reply.get("id") == message["id"]:
                        return reply

            # The read model, which the earlier release did not have, holds its bets: market
            # 100's settled, market 200's open.
            placed = self.rows(url, "SELECT bet_id, market_id FROM bets WHERE account_id = 2")
            page = await ask({"type": "bets", "id": "r1", "limit": 50})
            self.assertEqual(page["type"], "bets", page)
            self.assertEqual(sorted([str(b["bet_id"]), str(b["market_id"])] for b in page["bets"]),
                             placed, page)
            for bet in page["bets"]:
                self.assertEqual(bet["status"], "settled" if bet["market_id"] == 100 else "open",
                                 bet)

            # A key the earlier release took replays its bet (while the fixture is younger
            # than the longest key retention: a fixture a year old has outlived its keys).
            age_s = float(self.rows(url, "SELECT extract(epoch FROM now() - max(placed_at)) "
                                         "FROM bets")[0][0])
            if age_s < KEY_RETENTION_S - 86400:
                selection, odds, stake = BETS[0]
                again = await ask({"type": "place", "id": "p0", "idempotency_key": "old-2-0",
                                   "selection_id": selection, "odds": odds, "stake": stake})
                self.assertEqual((again["type"], again.get("replayed")), ("placed", True),
                                 again)

            status, body = engine.post_json("/v1/feed", OTHER_WINS, producer)
            self.assertEqual(status, 200, body)
            status, body = engine.post_json("/v1/feed", NEW_MARKET, producer)
            self.assertEqual(status, 200, body)
            new = await ask({"type": "place", "id": "p1", "idempotency_key": "new-2-0",
                             "selection_id": 3001, "odds": "1.80", "stake": "1.00"})
            self.assertEqual(new["type"], "placed", new)


if __name__ == "__main__":
    unittest.main()
