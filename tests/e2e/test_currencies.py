"""Currencies with their ISO 4217 minor units, end to end: a JPY account (no decimals) and a KWD
account (three) are funded, bet and are paid over the public protocol, every amount written with
exactly its currency's decimals; stakes and deposits with more decimals than the currency are
refused as invalid_request and move nothing (the stake's key is not even claimed). The replies
are validated against the contract files, and the money invariants checked at the end."""

import asyncio
import json

import websockets.client

from fixtures import HOME_WINS, MARKET
from harness import Engine, EngineTestCase, wait_until
from money import assert_money_invariants
from test_contract import Contract

BETS = "bets.schema.json"
# A market has no currency: its limits are minor units of each bet's currency (two decimals on
# the feed): 0.10 is 10 minor units, 10 JPY or 0.010 KWD.
LIMITED_MARKET = {**MARKET, "stake_min": "0.10", "stake_max": "1000000.00",
                  "liability_limit": "1000000.00"}


class CurrenciesTest(EngineTestCase):

    def test_jpy_and_kwd_bet_and_settle_in_their_own_decimals(self):
        contract = Contract()
        engine = Engine(self.env)
        try:
            engine.wait_ready()
            self.send_market(engine, LIMITED_MARKET)
            for account, currency in ((51, "JPY"), (52, "KWD")):
                status, body = engine.post_json("/v1/accounts",
                                                {"account_id": account, "currency": currency},
                                                self.admin)
                self.assertEqual(status, 201, body)
                self.assertEqual(body["available"], {"JPY": "0", "KWD": "0.000"}[currency], body)

            # Deposits: "1000" JPY is 1000 minor units, "10.500" KWD 10500.
            status, body = engine.post_json("/v1/accounts/51/deposits",
                                            {"amount": "1000", "key": "d1"}, self.admin)
            self.assertEqual((status, body["amount"], body["currency"]), (201, "1000", "JPY"), body)
            status, body = engine.post_json("/v1/accounts/52/deposits",
                                            {"amount": "10.500", "key": "d1"}, self.admin)
            self.assertEqual((status, body["amount"]), (201, "10.500"), body)
            # More decimals than the currency: refused, nothing moved.
            status, body = engine.post_json("/v1/accounts/51/deposits",
                                            {"amount": "10.5", "key": "d2"}, self.admin)
            self.assertEqual(status, 400, body)
            self.assertIn("too many decimal places for JPY (0)", json.dumps(body))
            status, body = engine.post_json("/v1/accounts/52/withdrawals",
                                            {"amount": "1.0005", "key": "w1"}, self.admin)
            self.assertEqual(status, 400, body)
            self.assertEqual(self.sql("SELECT account_id, available FROM accounts "
                                      "ORDER BY account_id"), [(51, 1000), (52, 10500)])

            async def scenario():
                jpy = await websockets.client.connect(
                    engine.ws_url("/v1/bets") + "?token=" + self.token("account", "51"))
                kwd = await websockets.client.connect(
                    engine.ws_url("/v1/bets") + "?token=" + self.token("account", "52"))

                async def ask(ws, message, in_schema=True):
                    if in_schema:
                        contract.check_message(BETS, "client_message", message)
                    else:
                        contract.check_refused(BETS, message)
                    await ws.send(json.dumps(message))
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 20))
                    contract.check_message(BETS, "server_message", reply)
                    return reply

                def place(key, stake):
                    return {"type": "place", "id": key, "idempotency_key": key,
                            "selection_id": 1001, "stake": stake, "odds": "2.50"}

                # "10.5" JPY: invalid_request, and its key stays free for a stake JPY allows.
                bad = await ask(jpy, place("j1", "10.5"))
                self.assertEqual((bad["type"], bad["code"], bad["message"]),
                                 ("error", "invalid_request",
                                  '"stake": too many decimal places for JPY (0)'), bad)
                self.assertEqual(self.sql("SELECT count(*) FROM idempotency_keys")[0][0], 0)
                placed = await ask(jpy, place("j1", "100"))
                self.assertEqual(placed["type"], "placed", placed)
                self.assertEqual(placed["bet"]["stake"], "100")
                self.assertEqual(placed["balance"], {"available": "900", "reserved": "100"})
                again = await ask(jpy, place("j1", "100.000"))
                self.assertEqual((again["type"], again["replayed"]), ("placed", True), again)
                # "1.0005" KWD: a fourth decimal, which no currency has.
                bad = await ask(kwd, place("k0", "1.0005"), in_schema=False)
                self.assertEqual((bad["type"], bad["code"]), ("error", "invalid_request"), bad)
                self.assertIn("too many decimal places", bad["message"])
                placed = await ask(kwd, place("k1", "10.5"))
                self.assertEqual(placed["type"], "placed", placed)
                self.assertEqual(placed["bet"]["stake"], "10.500")
                self.assertEqual(placed["balance"], {"available": "0.000", "reserved": "10.500"})
                # The market's limits in the bettor's currency: 10 to 100000000 yen.
                limit = await ask(jpy, place("j2", "100000001"))
                self.assertEqual((limit["type"], limit["code"]), ("rejected", "stake_limit"))
                self.assertEqual(limit["message"], "the stake must be between 10 and 100000000")

                # Home wins: 100 JPY at 2.50 pays 250, 10.500 KWD pays 26.250.
                status, body = engine.post_json("/v1/feed", HOME_WINS, self.producer)
                self.assertEqual(status, 200, body)
                for ws, payout in ((jpy, "250"), (kwd, "26.250")):
                    pushed = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    contract.check_message(BETS, "server_message", pushed)
                    self.assertEqual((pushed["type"], pushed["outcome"], pushed["payout"]),
                                     ("bet_settled", "won", payout), pushed)

                balance = await ask(jpy, {"type": "balance", "id": "b"})
                self.assertEqual((balance["available"], balance["reserved"], balance["currency"]),
                                 ("1150", "0", "JPY"))
                balance = await ask(kwd, {"type": "balance", "id": "b"})
                self.assertEqual((balance["available"], balance["reserved"]), ("26.250", "0.000"))
                for ws, stake, payout in ((jpy, "100", "250"), (kwd, "10.500", "26.250")):
                    for attempt in range(300):
                        page = await ask(ws, {"type": "bets", "id": f"s{attempt}",
                                              "status": "settled"})
                        if page["bets"]:
                            break
                        await asyncio.sleep(0.1)
                    self.assertEqual([(b["stake"], b["payout"]) for b in page["bets"]],
                                     [(stake, payout)], page)
                await jpy.close()
                await kwd.close()

            asyncio.run(scenario())

            # The operator's views, each amount in its currency's decimals.
            status, body = engine.get_json("/v1/accounts/51",
                                           {"Authorization": "Bearer " + self.admin})
            self.assertEqual((status, body["available"], body["owed"]), (200, "1150", "0"), body)

            def summary():
                status, body = engine.get_json("/v1/markets/100/summary",
                                               {"Authorization": "Bearer " + self.admin})
                self.assertEqual(status, 200, body)
                rows = {c["currency"]: c for c in body["currencies"]}
                return rows if rows.get("KWD", {}).get("settled_bets") == 1 and \
                    rows.get("JPY", {}).get("settled_bets") == 1 else None
            rows = wait_until(summary, "the market summary shows both settled bets")
            self.assertEqual((rows["JPY"]["stake"], rows["JPY"]["payout"]), ("100", "250"))
            self.assertEqual((rows["KWD"]["stake"], rows["KWD"]["payout"]), ("10.500", "26.250"))
            status, body = engine.post_json("/v1/reconcile", {}, self.admin)
            self.assertEqual(status, 200, body)
            self.assertEqual({c["currency"]: c["imbalance"] for c in body["currencies"]},
                             {"JPY": "0", "KWD": "0.000"}, body)

            # Nothing of the invalid requests was stored: two bets, the keys of the two bets and
            # of the stake_limit refusal, two deposits.
            self.assertEqual(self.sql("SELECT count(*) FROM bets")[0][0], 2)
            self.assertEqual(self.sql("SELECT account_id, idempotency_key FROM idempotency_keys "
                                      "ORDER BY 1, 2"), [(51, "j1"), (51, "j2"), (52, "k1")])
            self.assertEqual(self.sql("SELECT account_id, stake FROM bets ORDER BY account_id"),
                             [(51, 100), (52, 10500)])
            self.assertEqual(
                self.sql("SELECT count(*) FROM ledger_transfers WHERE entry_key LIKE 'deposit:%%' "
                         "OR entry_key LIKE 'withdrawal:%%'")[0][0], 2)
        finally:
            self.assertEqual(engine.stop(), 0, engine.log())
        assert_money_invariants(self, self.db_url)
