"""Makes a database as an earlier release of the engine left it, for test_upgrade.py: that
release's binary (FULLTIME_BINARY) serves a night's business on a scratch database, then stops,
and the database is dumped (pg_dump, plain SQL, no owners or privileges: whoever restores it owns
it) to the gzip file given as the only argument. scripts/upgrade-fixture builds the release and
runs this; the files it makes are kept in tests/e2e/upgrade/.

The night: markets 100 (two selections) and 200 (one), accounts 1 to 6 with a deposit each,
four bets per account (two on each market), a withdrawal from account 1, and market 100's result,
settled. Market 200 stays open, so its bets are open when the newer release takes over.

Only the public interfaces are used, as the release documented them; nothing here may depend on
what a later release added (admin tokens without an operator name are asked for when the binary
refuses a named one)."""

import asyncio
import gzip
import json
import subprocess
import sys

import websockets.client

from fixtures import HOME_WINS, MARKET, OTHER_MARKET
from harness import (Engine, cli_token, database_env, drop_database, post_ok, run_cli,
                     wait_until)

ACCOUNTS = list(range(1, 7))
DEPOSIT = "1000.00"
WITHDRAWAL = "50.00"
BETS = [(1001, "2.50", "10.00"), (1002, "3.10", "4.20"), (2001, "2.00", "7.35"),
        (2001, "2.00", "0.65")]  # (selection, odds, stake), placed by each account in turn


def admin_token(env, operator):
    """An admin token naming `operator`; from a release before named admin tokens, the plain
    one it takes (only the fixture runs such a binary: the tests ask for names strictly)."""
    code, out, _ = run_cli(["token", "admin", operator], env)
    return out.strip() if code == 0 else cli_token(env, "admin")


async def place_bets(engine, tokens):
    for account, bettor in tokens.items():
        async with websockets.client.connect(engine.ws_url("/v1/bets?token=" + bettor)) as ws:
            for i, (selection, odds, stake) in enumerate(BETS):
                key = f"old-{account}-{i}"
                request = {"type": "place", "id": key, "idempotency_key": key,
                           "selection_id": selection, "odds": odds, "stake": stake}
                while True:
                    await ws.send(json.dumps(request))
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
                    if reply.get("code") != "busy":
                        break
                if reply["type"] != "placed":
                    raise AssertionError(f"{request} answered {reply}")


def night_before(engine, env, url):
    admin, producer = admin_token(env, "upgrade-fixture"), cli_token(env, "producer", "feed-1")
    post_ok(engine, "/v1/feed", MARKET, producer)
    post_ok(engine, "/v1/feed", OTHER_MARKET, producer)
    for a in ACCOUNTS:
        post_ok(engine, "/v1/accounts", {"account_id": a, "currency": "EUR"}, admin)
        post_ok(engine, f"/v1/accounts/{a}/deposits", {"amount": DEPOSIT, "key": f"dep-{a}"}, admin)
    asyncio.run(place_bets(engine, {a: cli_token(env, "account", str(a)) for a in ACCOUNTS}))
    post_ok(engine, "/v1/accounts/1/withdrawals", {"amount": WITHDRAWAL, "key": "wd-1"}, admin)
    post_ok(engine, "/v1/feed", HOME_WINS, producer)

    def settled():
        out = subprocess.run(["psql", "-X", "-A", "-t", "-d", url, "-c",
                              "SELECT (SELECT applied_seq FROM settlement_progress "
                              "        WHERE market_id = 100) >= 1 "
                              "   AND NOT EXISTS (SELECT FROM bets b WHERE market_id = 100 "
                              "       AND NOT EXISTS (SELECT FROM bet_settlements s "
                              "                       WHERE s.bet_id = b.bet_id))"],
                             capture_output=True, text=True, check=True).stdout.strip()
        return out == "t"

    wait_until(settled, "market 100 never settled", 120, 0.2)


def main(out_path):
    name, url, env = database_env()
    try:
        engine = Engine(env)
        try:
            engine.wait_ready(60)
            night_before(engine, env, url)
        finally:
            if engine.stop() != 0:
                raise AssertionError("the engine did not stop cleanly:\n" + engine.log())
        dump = subprocess.run(["pg_dump", "--no-owner", "--no-privileges", "--format=plain",
                               "-d", url], capture_output=True, check=True).stdout
        with gzip.open(out_path, "wb") as f:
            f.write(dump)
        print(f"{out_path}: {len(dump)} bytes of SQL")
    finally:
        drop_database(name)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: upgrade_fixture.py OUT.sql.gz")
    main(sys.argv[1])
