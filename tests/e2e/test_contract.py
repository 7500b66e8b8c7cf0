"""The wire contract, machine-readable and enforced: docs/contract/ holds a JSON Schema for every
WebSocket message (bets.schema.json, feed.schema.json) and an OpenAPI 3.1 file for every HTTP
route (openapi.json). One scenario drives every message type and every route through a real
engine, successes and refusals, and validates every message received, every message sent that
the engine accepts (and that every message it refuses is outside the client schema), and every
HTTP answer against them. The files cannot drift from the code: the test fails on a message or
status the files do not describe, on a message or documented status it never saw (responses
marked `x-not-exercised` say why they cannot be provoked cheaply), on a `$ref` that resolves to
nothing, and on a route the engine counts in /metrics that the OpenAPI file does not name."""

import asyncio
import http.client
import json
import os
import re
import unittest
import urllib.error
import urllib.parse
import urllib.request

import jsonschema
import websockets.client

from fixtures import HOME_WINS, MARKET, OTHER_MARKET
from harness import Engine, EngineTestCase, wait_until

CONTRACT_DIR = os.path.realpath(os.path.join(os.path.dirname(__file__), "../../docs/contract"))
FILES = ("bets.schema.json", "feed.schema.json", "openapi.json")
DIRECTIONS = ("client_message", "server_message")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
DEADLINE_S = 20


def file_uri(name):
    return "file://" + os.path.join(CONTRACT_DIR, name)


def load_contract():
    docs = {}
    for name in FILES:
        with open(os.path.join(CONTRACT_DIR, name)) as f:
            docs[name] = json.load(f)
    return docs


def walk_refs(node, at=""):
    """Yields (where, $ref value) for every $ref in a document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield at, value
            else:
                yield from walk_refs(value, f"{at}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk_refs(value, f"{at}/{i}")


def resolve_pointer(doc, pointer):
    """Returns the node at a JSON pointer ("" is the document); raises KeyError."""
    node = doc
    for part in pointer.lstrip("/").split("/") if pointer else []:
        part = urllib.parse.unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(pointer)
    return node


def dangling_refs(docs):
    """Every $ref of the contract files that resolves to nothing, as "file at: ref"."""
    bad = []
    for name, doc in docs.items():
        for at, ref in walk_refs(doc):
            target, _, pointer = ref.partition("#")
            target_doc = doc if not target else docs.get(target)
            try:
                if target_doc is None:
                    raise KeyError(target)
                resolve_pointer(target_doc, pointer)
            except (KeyError, IndexError, ValueError):
                bad.append(f"{name} {at}: {ref}")
    return bad


def structure_problems(openapi):
    """What a minimal OpenAPI 3.1 document lacks: version, info, paths, each operation's
    responses (three-digit statuses, each with a description)."""
    problems = []
    if not str(openapi.get("openapi", "")).startswith("3.1"):
        problems.append("openapi is not 3.1.x")
    if not {"title", "version"} <= set(openapi.get("info", {})):
        problems.append("info needs title and version")
    paths = openapi.get("paths") or {}
    if not paths:
        problems.append("no paths")
    schemes = set(openapi.get("components", {}).get("securitySchemes", {}))
    for path, item in paths.items():
        operations = {m: o for m, o in item.items() if m in METHODS}
        if not path.startswith("/") or not operations:
            problems.append(f"{path}: no operation")
        for method, operation in operations.items():
            responses = operation.get("responses") or {}
            if not responses:
                problems.append(f"{method} {path}: no responses")
            for status, response in responses.items():
                if not re.fullmatch(r"[1-5][0-9][0-9]", status) or "description" not in response:
                    problems.append(f"{method} {path} {status}: a status needs three digits and a description")
            for requirement in operation.get("security", []):
                problems += [f"{method} {path}: unknown security scheme {s}"
                             for s in requirement if s not in schemes]
            if "x-route" not in operation:
                problems.append(f"{method} {path}: no x-route (its route label in /metrics)")
    return problems


class Contract:
    """The contract files, their validators, and what traffic has matched so far."""

    def __init__(self):
        self.docs = load_contract()
        store = {file_uri(name): doc for name, doc in self.docs.items()}
        self.resolvers = {name: lambda name=name: jsonschema.RefResolver(
            file_uri(name), self.docs[name], store=dict(store)) for name in FILES}
        self.defs = {}  # (schema file, $defs name) -> validator
        self.entries = {}  # (schema file, direction) -> its oneOf entries' names
        for name in ("bets.schema.json", "feed.schema.json"):
            for direction in DIRECTIONS:
                names = [ref.split("/")[-1] for ref in
                         (e["$ref"] for e in self.docs[name]["$defs"][direction]["oneOf"])]
                self.entries[(name, direction)] = names
                for entry in names + [direction]:
                    self.defs[(name, entry)] = self.validator(name, {"$ref": "#/$defs/" + entry})
        self.seen_defs = set()
        self.seen_routes = set()

    def validator(self, name, schema):
        return jsonschema.Draft202012Validator(schema, resolver=self.resolvers[name]())

    def check_message(self, name, direction, message):
        """Validates a message against its direction's oneOf; records the entry it matched and
        returns its name."""
        errors = sorted(self.defs[(name, direction)].iter_errors(message), key=str)
        if errors:
            matched = [e for e in self.entries[(name, direction)]
                       if e.split("_")[0] == message.get("type")]
            detail = "; ".join(str(e.message) for e in errors[:3])
            for entry in matched:
                detail += "\n  as %s: %s" % (entry, "; ".join(
                    e.message for e in self.defs[(name, entry)].iter_errors(message)))
            raise AssertionError(f"{name} {direction} does not describe {message}: {detail}")
        matched = [e for e in self.entries[(name, direction)]
                   if self.defs[(name, e)].is_valid(message)]
        assert len(matched) == 1, (message, matched)
        self.seen_defs.add((name, matched[0]))
        return matched[0]

    def check_refused(self, name, message):
        """A message the engine refuses must be outside the client schema."""
        if isinstance(message, (dict, list, int, str)) and \
                self.defs[(name, "client_message")].is_valid(message):
            raise AssertionError(f"{name} describes {message!r}, which the engine refuses")

    def operation(self, method, path):
        """Returns (template, operation) for a request path; None when no path matches."""
        for template, item in self.docs["openapi.json"]["paths"].items():
            pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
            if re.fullmatch(pattern, path) and method.lower() in item:
                return template, item[method.lower()]
        return None

    def check_http(self, method, path, status, content_type, text, retry_after=None):
        """Validates one HTTP answer against the OpenAPI file; records (template, method,
        status). A path the file does not list gets the common error body. Every 503 must say
        when to retry."""
        if status == 503 and not (retry_after or "").isdigit():
            raise AssertionError(f"{method} {path} 503 without a Retry-After: {text[:300]}")
        found = self.operation(method, path)
        if found is None:
            self.validator("openapi.json", {"$ref": "#/components/schemas/error"}).validate(json.loads(text))
            return
        template, operation = found
        response = operation["responses"].get(str(status))
        if response is None:
            raise AssertionError(f"{method} {template} answered {status}, which openapi.json "
                                 f"does not document: {text[:300]}")
        self.seen_routes.add((template, method.lower(), str(status)))
        content = response.get("content") or {}
        if not content:
            return
        media = content_type.split(";")[0].strip()
        if media not in content:
            raise AssertionError(f"{method} {template} {status}: {content_type} is not {list(content)}")
        if media in ("application/json", "application/problem+json"):
            body = json.loads(text)
            errors = sorted(self.validator("openapi.json", content[media]["schema"]).iter_errors(body),
                            key=str)
            if errors:
                raise AssertionError(f"{method} {path} {status}: {body} does not match "
                                     f"openapi.json: " + "; ".join(e.message for e in errors[:3]))

    def unseen_defs(self):
        return sorted(f"{name} $defs/{entry}" for (name, direction), entries in self.entries.items()
                      for entry in entries if (name, entry) not in self.seen_defs)

    def unseen_routes(self):
        missing = []
        for template, item in self.docs["openapi.json"]["paths"].items():
            for method, operation in item.items():
                if method not in METHODS:
                    continue
                for status, response in operation["responses"].items():
                    if "x-not-exercised" not in response and \
                            (template, method, status) not in self.seen_routes:
                        missing.append(f"{method.upper()} {template} {status}")
        return sorted(missing)

    def documented(self, route, status):
        """Whether an operation labelled `route` (x-route) documents `status`."""
        return any(o.get("x-route") == route and str(status) in o["responses"]
                   for item in self.docs["openapi.json"]["paths"].values()
                   for m, o in item.items() if m in METHODS)


class ContractFilesTest(unittest.TestCase):
    """The files themselves: valid schemas, a minimal OpenAPI structure, no dangling $ref."""

    def test_files(self):
        docs = load_contract()
        for name in ("bets.schema.json", "feed.schema.json"):
            jsonschema.Draft202012Validator.check_schema(docs[name])
            for direction in DIRECTIONS:
                for entry in docs[name]["$defs"][direction]["oneOf"]:
                    self.assertIn("const", json.dumps(
                        resolve_pointer(docs[name], entry["$ref"][1:])["properties"]["type"]), entry)
        for schema in docs["openapi.json"]["components"]["schemas"].values():
            jsonschema.Draft202012Validator.check_schema(schema)
        self.assertEqual(structure_problems(docs["openapi.json"]), [])
        self.assertEqual(dangling_refs(docs), [])

    def test_a_dangling_ref_is_found(self):
        docs = load_contract()
        docs["openapi.json"]["paths"]["/healthz"]["get"]["responses"]["200"]["content"][
            "application/json"]["schema"] = {"$ref": "bets.schema.json#/$defs/no_such_message"}
        self.assertEqual(len(dangling_refs(docs)), 1)


class ContractTrafficTest(EngineTestCase):
    """Every message and route through one engine, validated against docs/contract/."""

    ENGINE_ENV = {"FULLTIME_SETTLEMENT_POLL_INTERVAL_MS": "100"}

    # HTTP, each answer validated and counted.
    def http(self, method, path, body=None, token=None, raw=None, headers=None, query_token=None):
        """Sends one request; returns (status, parsed JSON body or text)."""
        if query_token:
            path += ("&" if "?" in path else "?") + "token=" + query_token
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if body is not None and raw is None:
            self.contract_requests.append((method, path.split("?")[0], body))
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        if data is not None:
            h["Content-Type"] = "application/json"
        req = urllib.request.Request(self.engine.url(path), data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
                status, ctype, text = r.status, r.headers.get("Content-Type", ""), r.read().decode()
                retry_after = r.headers.get("Retry-After")
        except urllib.error.HTTPError as e:
            status, ctype, text = e.code, e.headers.get("Content-Type", ""), e.read().decode()
            retry_after = e.headers.get("Retry-After")
        self.contract.check_http(method, path.split("?")[0], status, ctype, text, retry_after)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def expect(self, status, method, path, body=None, **kw):
        got, answer = self.http(method, path, body, **kw)
        self.assertEqual(got, status, f"{method} {path} {body}: {answer}")
        return answer

    def refused(self, status, code, method, path, body=None, **kw):
        answer = self.expect(status, method, path, body, **kw)
        self.assertEqual(answer["code"], code, answer)
        return answer

    def upgrade(self, path, token=None):
        """A WebSocket upgrade by hand (a refused one has an HTTP body to validate); returns
        the status."""
        conn = http.client.HTTPConnection("127.0.0.1", self.engine.port, timeout=DEADLINE_S)
        headers = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                   "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
        if token:
            headers["Authorization"] = "Bearer " + token
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        text = r.read().decode() if r.status != 101 else ""
        self.contract.check_http("GET", path.split("?")[0], r.status, r.getheader("Content-Type", ""),
                                 text, r.getheader("Retry-After"))
        conn.close()
        return r.status

    def test_every_message_and_route(self):
        self.contract = Contract()
        self.contract_requests = []
        self.engine = Engine(self.env)
        try:
            self.engine.wait_ready()
            asyncio.run(self.scenario())
            self.operator_routes()
            self.counted_routes_are_documented()
        finally:
            self.assertEqual(self.engine.stop(), 0, self.engine.log())
        # Every body the test sent and the engine took (2xx) is a client message of the file.
        for method, path, body in self.contract_requests:
            if path == "/v1/feed":
                self.contract.check_message("feed.schema.json", "client_message", body)
        self.assertEqual(self.contract.unseen_defs(), [],
                         "messages of the schemas that no traffic exercised")
        self.assertEqual(self.contract.unseen_routes(), [],
                         "documented statuses that no request exercised")

    async def scenario(self):
        c = self.contract
        bets, feed = "bets.schema.json", "feed.schema.json"
        # Plain HTTP to the WebSocket endpoints, and upgrades without a valid token.
        self.refused(426, "upgrade_required", "GET", "/v1/bets")
        self.refused(405, "method_not_allowed", "GET", "/v1/feed")
        self.assertEqual(self.upgrade("/v1/bets?token=nonsense"), 401)
        self.assertEqual(self.upgrade("/v1/feed", token=self.token("account", "42")), 401)

        feed_ws = await self.connect("/v1/feed", self.producer)

        async def to_feed(message, expect=None):
            c.check_message(feed, "client_message", message)
            await feed_ws.send(json.dumps(message))
            reply = json.loads(await asyncio.wait_for(feed_ws.recv(), DEADLINE_S))
            entry = c.check_message(feed, "server_message", reply)
            if expect:
                self.assertEqual(entry, expect, reply)
            return reply

        async def feed_refuses(text, code):
            if not isinstance(text, str):
                if code == "invalid_request":
                    c.check_refused(feed, text)
                text = json.dumps(text)
            await feed_ws.send(text)
            reply = json.loads(await asyncio.wait_for(feed_ws.recv(), DEADLINE_S))
            self.assertEqual(c.check_message(feed, "server_message", reply), "error")
            self.assertEqual(reply["code"], code, reply)
            return reply

        # The catalog on the WebSocket: created, updated, odds, suspend, resume.
        ack = await to_feed({**MARKET, "id": "m1", "settle_deadline_at": "2030-05-01T22:00:00+02:00",
                             "stake_min": "0.10", "stake_max": "1000", "exposure_shards": 2},
                            "market_ack")
        self.assertTrue(ack["created"])
        self.assertFalse((await to_feed({**MARKET, "id": 7, "event_name": "Lyon - Nantes"}))["created"])
        await to_feed({"type": "market", "market_id": 300, "event_id": 30, "name": "Tight",
                       "liability_limit": "1.00", "selections": [
                           {"selection_id": 3001, "name": "Yes", "odds": "3.00"}]})
        await to_feed({**OTHER_MARKET, "stake_max": "5.00"})
        await to_feed({"type": "market", "market_id": 400, "event_id": 40, "name": "Closed soon",
                       "selections": [{"selection_id": 4001, "name": "A", "odds": "1.50"}]})
        await to_feed({"type": "odds", "id": "o1", "market_id": 100, "selection_id": 1001,
                       "odds": "2.50"}, "catalog_ack")
        await to_feed({"type": "suspend", "market_id": 400}, "catalog_ack")
        await to_feed({"type": "resume", "market_id": 400}, "catalog_ack")
        await to_feed({"type": "market", "market_id": 400, "event_id": 40, "name": "Closed soon",
                       "status": "closed", "selections": [{"selection_id": 4001, "name": "A",
                                                            "odds": "1.50"}]})
        # Feed refusals on the WebSocket.
        await feed_refuses("{not json", "invalid_json")
        await feed_refuses({"type": "colour", "id": "x"}, "invalid_request")
        await feed_refuses({"type": "odds", "market_id": 100, "selection_id": 1001}, "invalid_request")
        await feed_refuses({"type": "suspend", "market_id": 100, "extra": 1}, "invalid_request")
        await feed_refuses({"type": "odds", "market_id": 999, "selection_id": 1001, "odds": "2.00"},
                           "unknown_market")
        await feed_refuses({"type": "odds", "market_id": 100, "selection_id": 2001, "odds": "2.00"},
                           "unknown_selection")
        await feed_refuses({"type": "suspend", "market_id": 400}, "market_closed")
        await feed_refuses({"type": "market", "market_id": 100, "event_id": 11, "name": "x",
                            "selections": [{"selection_id": 1001, "name": "Home", "odds": "2.50"}]},
                           "conflict")

        # Accounts, funded over HTTP (validated there).
        for account in (42, 43):
            self.expect(201, "POST", "/v1/accounts", {"account_id": account, "currency": "EUR"},
                        token=self.admin)
        self.expect(201, "POST", "/v1/accounts/42/deposits", {"amount": "100", "key": "dep-42"},
                    token=self.admin)

        bettor = await self.connect("/v1/bets", self.token("account", "42"))
        pushes = []

        async def ask(message, expect):
            c.check_message(bets, "client_message", message)
            await bettor.send(json.dumps(message))
            while True:
                reply = json.loads(await asyncio.wait_for(bettor.recv(), DEADLINE_S))
                entry = c.check_message(bets, "server_message", reply)
                if entry == "bet_settled":
                    pushes.append(reply)
                    continue
                self.assertEqual(entry, expect, reply)
                return reply

        async def bets_refuses(message, code="invalid_request", binary=False, outside_schema=True):
            if binary:
                await bettor.send(message)
            else:
                if not isinstance(message, str):
                    if outside_schema:
                        c.check_refused(bets, message)
                    message = json.dumps(message)
                await bettor.send(message)
            reply = json.loads(await asyncio.wait_for(bettor.recv(), DEADLINE_S))
            self.assertEqual(c.check_message(bets, "server_message", reply), "error", reply)
            self.assertEqual(reply["code"], code, reply)

        place = {"type": "place", "id": "p1", "idempotency_key": "k1", "selection_id": 1001,
                 "stake": "10", "odds": "2.50"}
        placed = await ask(place, "placed")
        self.assertFalse(placed["replayed"])
        self.assertTrue((await ask({**place, "id": 2}, "placed"))["replayed"])
        await ask({**place, "id": "p2", "idempotency_key": "k2", "selection_id": 1002,
                   "odds": "3.00", "accept": "any", "account_id": 42}, "placed")
        # A refusal of each code cheap to provoke, each stored on its key (replayed false).
        for key, change, code in (
                ("r1", {"stake": "20"}, "idempotency_key_reused"),
                ("r2", {"selection_id": 9999}, "unknown_selection"),
                ("r3", {"odds": "2.40"}, "odds_changed"),
                ("r4", {"stake": "0.05"}, "stake_limit"),
                ("r5", {"selection_id": 3001, "stake": "1.00", "odds": "3.00"}, "liability_limit"),
                ("r6", {"selection_id": 4001, "odds": "1.50"}, "market_suspended"),
                ("r7", {"stake": "500"}, "insufficient_funds")):
            message = {**place, "id": key, **change}
            if code != "idempotency_key_reused":
                message["idempotency_key"] = key
            reply = await ask(message, "rejected")
            self.assertEqual(reply["code"], code, reply)
            self.assertEqual("replayed" in reply, code != "idempotency_key_reused", reply)
        balance = await ask({"type": "balance", "id": "b1"}, "balance_reply")
        self.assertEqual((balance["available"], balance["reserved"]), ("80.00", "20.00"))
        page = await ask({"type": "bets", "id": "l1", "status": "all", "limit": 1}, "bets_reply")
        self.assertIsNotNone(page["next_before"])
        await ask({"type": "bets", "id": "l2", "status": "open", "limit": 200,
                   "before": page["next_before"]}, "bets_reply")
        # Requests the engine cannot understand.
        await bets_refuses("[1,", "invalid_json")
        await bets_refuses({"type": "balance"})
        await bets_refuses({"type": "colour", "id": "c"})
        await bets_refuses({**place, "id": "m", "stake": 10})
        await bets_refuses({k: v for k, v in place.items() if k != "stake"})
        await bets_refuses({**place, "id": "u", "acept": "any"})
        # The schema cannot know the token's account: this one is valid there.
        await bets_refuses({**place, "id": "a", "account_id": 43}, outside_schema=False)
        await bets_refuses({"type": "bets", "id": "s", "status": "closed"})
        await bets_refuses(b"\x00binary", binary=True)
        # An account that does not exist (its token is valid).
        ghost = await self.connect("/v1/bets", self.token("account", "999"))
        await ghost.send(json.dumps({"type": "balance", "id": "g"}))
        reply = json.loads(await asyncio.wait_for(ghost.recv(), DEADLINE_S))
        self.assertEqual((c.check_message(bets, "server_message", reply), reply["code"]),
                         ("error", "invalid_request"), reply)
        await ghost.close()

        # Result events: stored, a duplicate, a conflict, the rollbacks; pushes to the bettor.
        self.assertFalse((await to_feed({**HOME_WINS, "id": "r1"}, "event_ack"))["duplicate"])
        self.assertTrue((await to_feed({**HOME_WINS, "id": "r1b"}, "event_ack"))["duplicate"])
        await feed_refuses({**HOME_WINS, "seq": 9}, "conflict")
        await feed_refuses({**HOME_WINS, "seq": 0}, "invalid_request")
        while len(pushes) < 2:
            m = json.loads(await asyncio.wait_for(bettor.recv(), 60))
            self.assertEqual(c.check_message(bets, "server_message", m), "bet_settled", m)
            pushes.append(m)
        self.assertEqual(sorted(p["outcome"] for p in pushes), ["lost", "won"])
        settled = await ask({"type": "bets", "id": "l3", "status": "settled"}, "bets_reply")
        self.assertEqual([b["status"] for b in settled["bets"]], ["settled", "settled"], settled)
        await to_feed({"type": "rollback_result", "market_id": 100, "seq": 2,
                       "event_key": "final-rollback"}, "event_ack")
        await to_feed({"type": "cancel", "market_id": 100, "seq": 3, "event_key": "final-cancel",
                       "start_time": "2020-01-01T00:00:00Z", "end_time": "2099-01-01T00:00:00.5+01:00"},
                      "event_ack")
        await to_feed({"type": "rollback_cancel", "market_id": 100, "seq": 4,
                       "event_key": "final-uncancel", "start_time": "2020-01-01T00:00:00Z"},
                      "event_ack")
        wait_until(lambda: self.sql("SELECT 1 FROM settlement_progress WHERE market_id = 100 "
                                    "AND applied_seq >= 4"), "market 100 applied its four events")
        # Rolled back twice: both bets are open again, once the read model has the rollbacks.
        # (Up to a minute: the projector trails further on a loaded machine.)
        for attempt in range(600):
            reopened = await ask({"type": "bets", "id": f"l4-{attempt}", "status": "open"},
                                 "bets_reply")
            if len(reopened["bets"]) == 2:
                break
            await asyncio.sleep(0.1)
        self.assertEqual(len(reopened["bets"]), 2, reopened)
        await bettor.close()
        await feed_ws.close()

    async def connect(self, path, token):
        ws = await websockets.client.connect(self.engine.ws_url(path) + "?token=" + token)
        self.contract.check_http("GET", path, 101, "", "")
        return ws

    def operator_routes(self):
        admin, producer = self.admin, self.producer
        # Liveness, readiness, metrics, the dashboard and diagnostics (either token form).
        self.expect(200, "GET", "/healthz")
        self.expect(200, "GET", "/readyz")
        self.assertIn("fulltime_http_requests_total", self.expect(200, "GET", "/metrics"))
        self.assertIn("<html", self.expect(200, "GET", "/dashboard", query_token=admin).lower())
        self.refused(401, "unauthorized", "GET", "/dashboard")
        self.expect(200, "GET", "/v1/diagnostics?since_ms=0", token=admin)
        self.refused(401, "unauthorized", "GET", "/v1/diagnostics", token=producer)
        self.refused(404, "not_found", "GET", "/v1/no-such-route")

        # POST /v1/feed: each status.
        self.assertEqual(self.expect(200, "POST", "/v1/feed", {"type": "suspend", "id": "s",
                                                               "market_id": 200}, token=producer),
                         {"type": "ack", "id": "s", "market_id": 200})
        self.expect(200, "POST", "/v1/feed", {"type": "resume", "market_id": 200}, query_token=producer)
        self.refused(400, "invalid_json", "POST", "/v1/feed", raw=b"{", token=producer)
        self.refused(400, "invalid_request", "POST", "/v1/feed", raw=b'{"type":"nope"}', token=producer)
        self.refused(404, "unknown_market", "POST", "/v1/feed", raw=json.dumps(
            {"type": "resume", "market_id": 998}).encode(), token=producer)
        self.refused(409, "market_closed", "POST", "/v1/feed", raw=json.dumps(
            {"type": "resume", "market_id": 400}).encode(), token=producer)
        self.refused(401, "unauthorized", "POST", "/v1/feed", raw=b"{}", token=admin)

        # The producer's view of a market's events.
        events = self.expect(200, "GET", "/v1/feed/markets/100/events", token=producer)
        self.assertEqual([e["seq"] for e in events["events"]], [4, 3, 2, 1])
        self.refused(400, "invalid_request", "GET", "/v1/feed/markets/x/events", token=producer)
        self.refused(401, "unauthorized", "GET", "/v1/feed/markets/100/events", token=admin)

        # Accounts.
        self.expect(200, "POST", "/v1/accounts", {"account_id": 42, "currency": "EUR"}, token=admin)
        self.refused(409, "account_exists", "POST", "/v1/accounts", raw=json.dumps(
            {"account_id": 42, "currency": "USD"}).encode(), token=admin)
        self.refused(400, "invalid_request", "POST", "/v1/accounts", raw=json.dumps(
            {"account_id": 44, "currency": "eur"}).encode(), token=admin)
        self.refused(400, "invalid_json", "POST", "/v1/accounts", raw=b"nope", token=admin)
        self.refused(401, "unauthorized", "POST", "/v1/accounts", raw=b"{}")
        self.expect(200, "GET", "/v1/accounts/42", token=admin)
        self.refused(404, "unknown_account", "GET", "/v1/accounts/999", token=admin)
        self.refused(400, "invalid_request", "GET", "/v1/accounts/abc", token=admin)
        self.refused(401, "unauthorized", "GET", "/v1/accounts/42", token=producer)
        for kind in ("deposits", "withdrawals"):
            path = f"/v1/accounts/42/{kind}"
            self.assertFalse(self.expect(201, "POST", path, {"amount": "5.00", "key": kind},
                                         token=admin)["replayed"])
            self.assertTrue(self.expect(200, "POST", path, {"amount": "5", "key": kind},
                                        token=admin)["replayed"])
            # The key as the Idempotency-Key header is the same key; a body naming another is
            # refused.
            self.assertTrue(self.expect(200, "POST", path, {"amount": "5.00"}, token=admin,
                                        headers={"Idempotency-Key": kind})["replayed"])
            self.refused(400, "invalid_request", "POST", path, {"amount": "5.00", "key": "other"},
                         token=admin, headers={"Idempotency-Key": kind})
            self.refused(409, "idempotency_key_reused", "POST", path, raw=json.dumps(
                {"amount": "6.00", "key": kind}).encode(), token=admin)
            self.refused(404, "unknown_account", "POST", f"/v1/accounts/999/{kind}",
                         raw=json.dumps({"amount": "1.00", "key": "x"}).encode(), token=admin)
            self.refused(400, "invalid_request", "POST", path, raw=json.dumps(
                {"amount": "1.001", "key": "y"}).encode(), token=admin)
            self.refused(400, "invalid_json", "POST", path, raw=b"[", token=admin)
            self.refused(401, "unauthorized", "POST", path, raw=b"{}", token="not-a-token")
        self.refused(409, "insufficient_funds", "POST", "/v1/accounts/43/withdrawals",
                     raw=json.dumps({"amount": "1.00", "key": "w"}).encode(), token=admin)
        # Currencies with other minor units: JPY has no decimals, KWD three (the amount
        # patterns allow 0, 2 or 3). More decimals than the account's currency is refused.
        for account, currency, amount, shown in ((45, "JPY", "1000", "1000"),
                                                  (46, "KWD", "10.5", "10.500")):
            self.expect(201, "POST", "/v1/accounts", {"account_id": account, "currency": currency},
                        token=admin)
            deposit = self.expect(201, "POST", f"/v1/accounts/{account}/deposits",
                                  {"amount": amount, "key": "minor"}, token=admin)
            self.assertEqual((deposit["amount"], deposit["currency"]), (shown, currency))
            self.assertEqual(self.expect(200, "GET", f"/v1/accounts/{account}",
                                         token=admin)["available"], shown)
        self.refused(400, "invalid_request", "POST", "/v1/accounts/45/deposits",
                     {"amount": "10.5", "key": "j"}, token=admin)

        # Markets: the summary and the operator's void.
        summary = self.expect(200, "GET", "/v1/markets/100/summary", token=admin)
        self.assertEqual(summary["market_id"], 100)
        self.refused(400, "invalid_request", "GET", "/v1/markets/0/summary", token=admin)
        self.refused(401, "unauthorized", "GET", "/v1/markets/100/summary", token=producer)
        self.refused(409, "nothing_to_void", "POST", "/v1/markets/300/void-overdue",
                     raw=b'{"force":true}', token=admin)
        self.refused(404, "unknown_market", "POST", "/v1/markets/998/void-overdue", token=admin)
        self.refused(400, "invalid_request", "POST", "/v1/markets/100/void-overdue",
                     raw=b'{"forse":true}', token=admin)
        self.refused(400, "invalid_json", "POST", "/v1/markets/100/void-overdue", raw=b"{",
                     token=admin)
        self.refused(401, "unauthorized", "POST", "/v1/markets/100/void-overdue", raw=b"{}")
        # Market 100's bets are open again after the rollbacks (the cancel's window is rolled
        # back): not overdue before its deadline, voided when forced, once per key.
        self.refused(409, "not_overdue", "POST", "/v1/markets/100/void-overdue", raw=b"{}",
                     token=admin)
        self.refused(409, "conflict", "POST", "/v1/markets/100/void-overdue", raw=json.dumps(
            {"key": HOME_WINS["event_key"], "force": True}).encode(), token=admin)
        first = self.expect(200, "POST", "/v1/markets/100/void-overdue", {"force": True, "key": "v1"},
                            token=admin)
        again = self.expect(200, "POST", "/v1/markets/100/void-overdue", {"force": True},
                            token=admin, headers={"Idempotency-Key": "v1"})
        self.assertEqual((first["duplicate"], again["duplicate"], again["seq"]),
                         (False, True, first["seq"]))

        # A hole in a market's feed (only seq 3 arrives) and the operator's close of it; the
        # void refuses to wait behind such a hole.
        self.expect(200, "POST", "/v1/feed", dict(MARKET, market_id=700, event_id=70,
                                                  selections=[{"selection_id": 7001,
                                                               "name": "Home", "odds": "2.00"}]),
                    token=producer)
        self.expect(200, "POST", "/v1/feed", {"type": "cancel", "market_id": 700, "seq": 3,
                                              "event_key": "gap-c3"}, token=producer)
        gap = "/v1/feed/markets/700/close-gap"
        self.refused(409, "not_a_gap", "POST", gap, {"from": 1, "through": 3}, token=admin)
        self.refused(404, "unknown_market", "POST", "/v1/feed/markets/998/close-gap",
                     {"from": 1, "through": 2}, token=admin)
        self.refused(400, "invalid_request", "POST", gap, raw=json.dumps(
            {"from": 2, "through": 1}).encode(), token=admin)
        self.refused(400, "invalid_json", "POST", gap, raw=b"{", token=admin)
        self.refused(401, "unauthorized", "POST", gap, raw=b"{}", token=producer)
        self.refused(409, "conflict", "POST", gap, raw=json.dumps(
            {"from": 1, "through": 2, "key": HOME_WINS["event_key"]}).encode(), token=admin)
        closed = self.expect(200, "POST", gap, {"from": 1, "through": 2, "key": "g1"},
                             token=admin)
        again = self.expect(200, "POST", gap, {"from": 1, "through": 2}, token=admin,
                            headers={"Idempotency-Key": "g1"})
        self.assertEqual((closed["duplicate"], again["duplicate"]), (False, True))

        # Reconciliation and incidents: a drift made by hand is found and listed.
        self.sql("UPDATE accounts SET available = available + 1 WHERE account_id = 43")
        run = self.expect(200, "POST", "/v1/reconcile", token=admin)
        self.assertGreaterEqual(run["drifts"], 1, run)
        self.refused(401, "unauthorized", "POST", "/v1/reconcile", raw=b"")
        incidents = self.expect(200, "GET", "/v1/incidents?status=all&kind=balance_drift"
                                "&account_id=43&limit=10", token=admin)["incidents"]
        self.assertEqual([i["subject"] for i in incidents], ["account:43:available"])
        self.refused(400, "invalid_request", "GET", "/v1/incidents?status=bogus", token=admin)
        self.refused(401, "unauthorized", "GET", "/v1/incidents", token=producer)

    def counted_routes_are_documented(self):
        """The engine's own count of answers per route label: each (route, status) is
        documented under that x-route, so a route renamed or added in the code fails here."""
        text = self.expect(200, "GET", "/metrics")
        counted = re.findall(r'^fulltime_http_requests_total\{route="([^"]+)",code="(\d+)"\}',
                             text, re.MULTILINE)
        self.assertTrue(counted)
        undocumented = sorted({f"{route} {code}" for route, code in counted
                               if route not in ("unmatched", "refused") and code != "405"
                               and not self.contract.documented(route, code)})
        self.assertEqual(undocumented, [])


if __name__ == "__main__":
    unittest.main()
