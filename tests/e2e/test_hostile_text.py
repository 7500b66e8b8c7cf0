"""End-to-end hostile text (docs/protocol.md, "Text"): text that no request can succeed
with, a NUL character (escaped as \\u0000 or a raw byte), bytes that are not UTF-8, a key twice in
one object, bytes after the JSON document, is refused where it is parsed with invalid_request or
invalid_json (400 over HTTP), never `internal` or a retryable 503; it writes nothing, logs no
error, and does not disturb the other accounts placing beside it. Money invariants after each."""

import asyncio
import json
from collections import Counter
import unittest
import urllib.error
import urllib.request

import websockets.client

from fixtures import MARKET
from harness import Engine, EngineTestCase
from money import assert_money_invariants

# One event loop and one placement actor: every account's placements share the actor, so a
# bad one would share its placement group with the good ones of another account.
ONE_ACTOR = {"FULLTIME_GATEWAY_IO_THREADS": "1", "FULLTIME_PLACEMENT_ACTORS": "1"}
REPLY_TIMEOUT_S = 30


def place(msg_id, key, **extra):
    return dict({"type": "place", "id": msg_id, "idempotency_key": key, "selection_id": 1001,
                 "stake": "1.00", "odds": "2.50"}, **extra)


def hostile_round(i):
    """One round of the hostile bettor's messages: [(frame text, expected code, echoed id)]."""
    raw_dup = (f'{{"type":"place","id":"h{i}-dup","idempotency_key":"dup-{i}",'
               f'"selection_id":1001,"stake":"0.10","stake":"5000.00","odds":"2.50"}}')
    return [
        (json.dumps(place(f"h{i}-nul", f"bad\x00{i}")), "invalid_request", f"h{i}-nul"),
        (json.dumps(place(f"h{i}-lead", f"\x00lead-{i}")), "invalid_request", f"h{i}-lead"),
        (json.dumps(place(f"h{i}-accept", f"acc-{i}", accept="any\x00")), "invalid_request",
         f"h{i}-accept"),
        # A NUL in the id itself: refused before there is an id to echo.
        (json.dumps(place(f"h{i}-id\x00", f"idnul-{i}")), "invalid_request", None),
        (raw_dup, "invalid_request", f"h{i}-dup"),
        # A raw NUL byte: nlohmann's lexer took it for the end of the input, and placed the bet.
        (json.dumps(place(f"h{i}-raw", f"raw-{i}")) + "\x00garbage", "invalid_json", None),
        (json.dumps(place(f"h{i}-trail", f"trail-{i}")) + " {}", "invalid_json", None),
    ]


class HostileTextTest(EngineTestCase):
    ENGINE_ENV = ONE_ACTOR

    def setUp(self):
        super().setUp()
        self.engine = Engine(self.env)
        self.addCleanup(self.engine.kill)
        self.engine.wait_ready()
        self.send_market(self.engine, MARKET)

    def stop_engine(self):
        self.assertEqual(self.engine.stop(), 0, self.engine.log())

    def assert_no_error_lines(self):
        errors = [line for line in self.engine.log().splitlines() if " error " in line]
        self.assertEqual(errors, [], "the engine logged errors for hostile text")

    def request(self, method, path, body, token, headers=None):
        """Sends `body` (bytes, sent as they are) with a bearer token; returns (status, parsed
        answer)."""
        h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        h.update(headers or {})
        req = urllib.request.Request(self.engine.url(path), data=body, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=REPLY_TIMEOUT_S) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        return status, json.loads(text)

    def assert_refused(self, answer, status, code, naming):
        got_status, problem = answer
        self.assertEqual((got_status, problem.get("code")), (status, code), problem)
        self.assertIn(naming, problem["detail"], problem)

    def test_bad_text_in_placements_never_touches_another_accounts_bets(self):
        good, hostile = 42, 41
        self.open_accounts(self.engine, [good, hostile], "1000.00")
        good_token, hostile_token = self.token("account", str(good)), self.token("account", str(hostile))
        rounds, connections, per_connection = 30, 4, 40
        url = self.engine.ws_url("/v1/bets?token=")

        async def good_bettor(c):
            # Pipelined, below gateway.inflight_per_connection_max (64), so that the actor's
            # groups fill with this account's bets while the hostile frames arrive.
            async with websockets.client.connect(url + good_token) as ws:
                for i in range(per_connection):
                    await ws.send(json.dumps(place(f"g{c}-{i}", f"good-{c}-{i}")))
                replies = {}
                while len(replies) < per_connection:
                    m = json.loads(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT_S))
                    replies[m["id"]] = m
                return replies

        async def hostile_bettor():
            frames = [f for i in range(rounds) for f in hostile_round(i)]
            async with websockets.client.connect(url + hostile_token) as ws:
                for text, _, _ in frames:
                    await ws.send(text)
                replies = [json.loads(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT_S))
                           for _ in frames]
                # The connection still serves: a good bet after all of that is placed.
                await ws.send(json.dumps(place("h-ok", "hostile-ok")))
                ok = json.loads(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT_S))
                return frames, replies, ok

        async def everyone():
            return await asyncio.gather(hostile_bettor(),
                                        *(good_bettor(c) for c in range(connections)))

        (frames, replies, ok), *goods = asyncio.run(everyone())

        good_kinds = Counter((r["type"], r.get("code")) for replies_of in goods
                             for r in replies_of.values())
        self.assertEqual(good_kinds, {("placed", None): connections * per_connection})
        expected = sorted(("error", code, str(msg_id)) for _, code, msg_id in frames)
        got = sorted((r["type"], str(r.get("code")), str(r.get("id"))) for r in replies)
        self.assertEqual(got, expected, Counter((r["type"], r.get("code")) for r in replies))
        for r in replies:
            self.assertNotIn("retry_after_ms", r, r)
        by_id = {r["id"]: r for r in replies if r["id"] is not None}
        self.assertEqual(by_id["h0-nul"]["message"],
                         '"idempotency_key" must not contain a NUL character')
        self.assertEqual(by_id["h0-dup"]["message"], 'the key "stake" appears twice in one object')
        self.assertEqual(ok["type"], "placed", ok)

        total = connections * per_connection
        self.assertEqual(self.sql("SELECT count(*) FROM bets WHERE account_id = %s", good)[0][0],
                         total)
        self.assertEqual(self.sql("SELECT idempotency_key FROM bets WHERE account_id = %s",
                                  hostile), [("hostile-ok",)])
        self.assertEqual(self.sql("SELECT count(*) FROM idempotency_keys WHERE account_id = %s",
                                  hostile)[0][0], 1)
        self.stop_engine()
        self.assert_no_error_lines()
        assert_money_invariants(self, self.db_url)

    def test_bad_text_on_the_operator_and_feed_paths_is_a_400(self):
        account = 42
        self.open_accounts(self.engine, [account], "100.00")
        admin, producer = self.admin, self.producer
        deposits = f"/v1/accounts/{account}/deposits"
        withdrawals = f"/v1/accounts/{account}/withdrawals"

        def body(document):
            return json.dumps(document).encode()

        # NUL in a key: the database layer refused it, answered as a retryable 503 before.
        for path in (deposits, withdrawals):
            self.assert_refused(self.request("POST", path, body({"amount": "1.00", "key": "d\x00"}),
                                             admin), 400, "invalid_request", '"key"')
        self.assert_refused(self.request("POST", deposits, body({"amount": "1.00"}), admin,
                                         {"Idempotency-Key": "\xff\xfe"}),
                            400, "invalid_request", "Idempotency-Key")
        self.assert_refused(self.request("POST", "/v1/markets/100/void-overdue",
                                         body({"key": "v\x00", "force": True}), admin),
                            400, "invalid_request", '"key"')
        self.assert_refused(self.request("POST", "/v1/markets/100/void-overdue", body({}), admin,
                                         {"Idempotency-Key": "v\xe9"}),
                            400, "invalid_request", "Idempotency-Key")
        # The last of two equal keys no longer wins: these moved 500.00 and created a JPY account.
        self.assert_refused(self.request("POST", deposits,
                                         b'{"amount":"1.00","amount":"500.00","key":"dup"}', admin),
                            400, "invalid_request", '"amount"')
        self.assert_refused(self.request("POST", "/v1/accounts",
                                         b'{"account_id":77,"currency":"EUR","currency":"JPY"}',
                                         admin), 400, "invalid_request", '"currency"')
        # One document per body: a raw NUL byte ended the input early, and this deposit was made.
        self.assert_refused(self.request("POST", deposits,
                                         body({"amount": "7.00", "key": "raw"}) + b"\x00garbage",
                                         admin), 400, "invalid_json", "NUL byte")
        self.assert_refused(self.request("POST", deposits,
                                         body({"amount": "7.00", "key": "trail"}) + b"{}", admin),
                            400, "invalid_json", "not valid JSON")

        # The feed over HTTP: names with a NUL, odds twice in one message.
        for market in (dict(MARKET, name="Final\x00"), dict(MARKET, event_name="Cup\x00"),
                       dict(MARKET, selections=[{"selection_id": 1001, "name": "Home\x00",
                                                 "odds": "2.50"}])):
            self.assert_refused(self.request("POST", "/v1/feed", body(market), producer),
                                400, "invalid_request", "NUL")
        self.assert_refused(self.request(
            "POST", "/v1/feed",
            b'{"type":"odds","market_id":100,"selection_id":1001,"odds":"2.50","odds":"9.00"}',
            producer), 400, "invalid_request", '"odds"')
        self.assert_refused(self.request("POST", "/v1/feed",
                                         body({"type": "result", "market_id": 100, "seq": 1,
                                               "event_key": "r\x00", "outcomes": [
                                                   {"selection_id": 1001, "result": "win"}]}),
                                         producer), 400, "invalid_request", "event_key")
        self.assert_refused(self.request("POST", "/v1/feed", body(MARKET) + b"\x00{}", producer),
                            400, "invalid_json", "NUL byte")

        # And on the feed's WebSocket.
        async def feed_ws():
            async with websockets.client.connect(
                    self.engine.ws_url("/v1/feed?token=" + producer)) as ws:
                answers = []
                # The id first: a refusal echoes the id when it was read before the bad text.
                for text in (json.dumps({"id": "f1", **MARKET, "name": "Final\x00"}),
                             json.dumps({"id": "f2", **MARKET}) + "\x00garbage",
                             '{"type":"suspend","id":"f3","market_id":100,"market_id":200}'):
                    await ws.send(text)
                    answers.append(json.loads(await asyncio.wait_for(ws.recv(), REPLY_TIMEOUT_S)))
                return answers

        named, raw, dup = asyncio.run(feed_ws())
        self.assertEqual((named["code"], named["id"]), ("invalid_request", "f1"), named)
        self.assertEqual((raw["code"], raw["id"]), ("invalid_json", None), raw)
        self.assertEqual((dup["code"], dup["id"]), ("invalid_request", "f3"), dup)

        # Nothing was written: the balance is the first deposit, the catalog is MARKET's.
        status, got = self.engine.get_json(f"/v1/accounts/{account}",
                                           {"Authorization": "Bearer " + admin})
        self.assertEqual((status, got["available"]), (200, "100.00"), got)
        self.assertEqual(self.sql("SELECT count(*) FROM accounts WHERE account_id = 77")[0][0], 0)
        self.assertEqual(self.sql("SELECT name FROM markets WHERE market_id = 100"),
                         [(MARKET["name"],)])
        self.assertEqual(self.sql("SELECT name, odds FROM selections WHERE selection_id = 1001"),
                         [("Home", 25000)])
        self.assertEqual(self.sql("SELECT status FROM markets WHERE market_id = 100"), [("open",)])
        self.assertEqual(self.sql("SELECT count(*) FROM result_events")[0][0], 0)
        self.stop_engine()
        self.assert_no_error_lines()
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    unittest.main()
