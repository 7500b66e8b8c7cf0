"""End-to-end tests of the gateway against hostile clients: connection slots shared
per source address and per account, a header deadline for half-sent requests, health checks
answered when every slot is taken, /readyz from a cached check, the descriptor limit raised (or
connections_max lowered) at start, strict HTTP framing against request smuggling, HEAD, and
unknown query parameters refused.

The HTTP probes use raw sockets: the clients in Python's standard library would not send a
malformed request, and a probe from another source address (127.0.0.2, ...: all of 127/8 is the
loopback) binds its socket there."""

import asyncio
import json
import re
import resource
import socket
import time
import unittest

import websockets.client
from websockets.exceptions import InvalidStatusCode

from harness import Engine, EngineTestCase, wait_until

ATTACKER = "127.0.0.1"


def connect(engine, source=ATTACKER, timeout_s=10):
    """A TCP connection to the engine from `source`."""
    return socket.create_connection(("127.0.0.1", engine.port), timeout=timeout_s,
                                    source_address=(source, 0))


def request(path, method="GET", headers=None, body=b"", close=True):
    """The bytes of a well-formed HTTP/1.1 request."""
    lines = [f"{method} {path} HTTP/1.1", "Host: e2e"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def read_all(sock):
    """Everything the peer sends until it closes; (bytes, whether it closed) when it goes
    quiet for the socket's timeout instead."""
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return b"".join(chunks), False
        except ConnectionResetError:
            return b"".join(chunks), True
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)


def parse_responses(data, head=False):
    """The HTTP responses in `data`, in order: [(status, {lower-case name: value}, body)].
    `head`: the first one answers a HEAD request and has no body whatever it says."""
    out = []
    while data:
        header, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            raise AssertionError(f"an incomplete response: {data!r}")
        lines = header.decode().split("\r\n")
        status = int(lines[0].split(" ")[1])
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        length = 0 if head and not out else int(fields.get("content-length", "0"))
        out.append((status, fields, rest[:length]))
        data = rest[length:]
    return out


def exchange(engine, data, source=ATTACKER, timeout_s=5):
    """Sends `data` on a new connection; returns (the responses, whether the engine closed the
    connection after them) without closing from this side first."""
    with connect(engine, source, timeout_s) as s:
        s.sendall(data)
        received, closed = read_all(s)
    return parse_responses(received), closed


def get(engine, path, source=ATTACKER, headers=None):
    """One GET from `source`: (status, headers, body text)."""
    responses, _ = exchange(engine, request(path, headers=headers), source)
    assert len(responses) == 1, responses
    status, fields, body = responses[0]
    return status, fields, body.decode()


def half_sent(engine, source=ATTACKER):
    """A connection whose request header never ends: what a slow-loris client holds."""
    s = connect(engine, source)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: e2e\r\nX-Slow: ")
    return s


def metric(text, name, labels=""):
    """The value of one series in /metrics text, or None."""
    m = re.search("^" + re.escape(name + labels) + r" (\S+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else None


def scrape(engine, source):
    """/metrics from `source`, or None while the engine refuses it (every slot taken)."""
    status, _, body = get(engine, "/metrics", source)
    return body if status == 200 else None


def refused_lines(engine):
    return [line for line in engine.lines if "refused " in line and "connection" in line]


class GatewayTestCase(EngineTestCase):
    def serve(self, preexec_fn=None, **settings):
        """A ready engine on this test's database with `settings`, gateway keys by their name
        (header_timeout_ms=300: FULLTIME_GATEWAY_HEADER_TIMEOUT_MS) and others by their whole
        path (database_pools_background_queue_max), stopped after the test."""
        env = dict(self.env)
        for key, value in settings.items():
            path = key if key.startswith("database_") else "gateway_" + key
            env["FULLTIME_" + path.upper()] = str(value)
        engine = Engine(env, preexec_fn=preexec_fn)
        self.addCleanup(engine.stop)
        engine.wait_ready()
        return engine


class StrictFramingTest(GatewayTestCase):
    """Framing that a proxy and the engine could read differently is refused with 400
    bad_request, and the connection is closed: what follows cannot be trusted to be the next
    request."""

    def setUp(self):
        super().setUp()
        self.engine = self.serve()

    def assert_refused(self, raw, why):
        responses, closed = exchange(self.engine, raw)
        self.assertEqual(len(responses), 1, f"{why}: {responses}")
        status, fields, body = responses[0]
        self.assertEqual(status, 400, f"{why}: {responses}")
        self.assertEqual(fields["content-type"], "application/problem+json")
        self.assertEqual(json.loads(body)["code"], "bad_request", why)
        self.assertTrue(closed, f"{why}: the connection stays open after the 400")

    def test_a_transfer_encoding_other_than_chunked_is_refused(self):
        # Before: xchunked was ignored, the request had no body, and its "body" was served as
        # the next request on the connection.
        smuggled = b"GET /healthz HTTP/1.1\r\nHost: e2e\r\n\r\n"
        self.assert_refused(b"POST /v1/feed HTTP/1.1\r\nHost: e2e\r\n"
                            b"Transfer-Encoding: xchunked\r\n\r\n" + smuggled, "xchunked")
        for encoding in (b"chunked, chunked", b"gzip, chunked", b"identity"):
            self.assert_refused(b"POST /v1/feed HTTP/1.1\r\nHost: e2e\r\nTransfer-Encoding: " +
                                encoding + b"\r\n\r\n0\r\n\r\n" + smuggled, encoding.decode())
        self.assert_refused(b"POST /v1/feed HTTP/1.1\r\nHost: e2e\r\nTransfer-Encoding: chunked\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "two Transfer-Encoding")
        self.assert_refused(b"POST /v1/feed HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"0\r\n\r\n", "Transfer-Encoding on HTTP/1.0")
        # Exactly "chunked" stays accepted: a chunked body reaches the route (401: no token).
        responses, _ = exchange(self.engine, b"POST /v1/feed HTTP/1.1\r\nHost: e2e\r\n"
                                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                b"2\r\n{}\r\n0\r\n\r\n")
        self.assertEqual([r[0] for r in responses], [401])

    def test_content_length_beside_transfer_encoding_is_refused(self):
        self.assert_refused(b"POST /v1/feed HTTP/1.1\r\nHost: e2e\r\nTransfer-Encoding: xchunked\r\n"
                            b"Content-Length: 5\r\n\r\nhello", "xchunked and Content-Length")
        self.assert_refused(b"POST /v1/feed HTTP/1.1\r\nHost: e2e\r\nContent-Length: 5\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "Content-Length first")
        self.assert_refused(b"POST /v1/feed HTTP/1.1\r\nHost: e2e\r\nTransfer-Encoding: chunked\r\n"
                            b"Content-Length: 5\r\n\r\n0\r\n\r\n", "Transfer-Encoding first")

    def test_http11_needs_exactly_one_host(self):
        self.assert_refused(b"GET /healthz HTTP/1.1\r\n\r\n", "no Host")
        self.assert_refused(b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "two Hosts")
        # HTTP/1.0 has no Host requirement.
        responses, _ = exchange(self.engine, b"GET /healthz HTTP/1.0\r\n\r\n")
        self.assertEqual([r[0] for r in responses], [200])

    def test_folded_headers_are_refused(self):
        self.assert_refused(b"GET /healthz HTTP/1.1\r\nHost: e2e\r\nX-Long: a\r\n b\r\n\r\n",
                            "a line folded with a space")
        self.assert_refused(b"GET /healthz HTTP/1.1\r\nHost: e2e\r\nX-Long: a\r\n\tb\r\n\r\n",
                            "a line folded with a tab")
        self.assert_refused(b"GET /healthz HTTP/1.1\r\n Host: e2e\r\n\r\n",
                            "whitespace before the first header")

    def test_head_is_answered_wherever_get_is(self):
        admin = {"Authorization": "Bearer " + self.admin}
        for path, headers in (("/healthz", {}), ("/readyz", {}), ("/metrics", {}),
                              ("/v1/incidents", admin)):
            with connect(self.engine) as s:
                # HEAD, then GET on the same connection: the GET's status line must follow the
                # HEAD's header at once, which holds only when HEAD sent no body.
                s.sendall(request(path, "HEAD", headers, close=False) +
                          request(path, "GET", headers))
                received, closed = read_all(s)
            self.assertTrue(closed)
            (head_status, head_fields, head_body), (get_status, get_fields, get_body) = \
                parse_responses(received, head=True)
            self.assertEqual(head_status, 200, path)
            self.assertEqual(head_body, b"", path)
            self.assertEqual(get_status, 200, path)
            self.assertEqual(head_fields["content-type"], get_fields["content-type"], path)
            if path != "/metrics":  # its length changes between two scrapes
                self.assertEqual(head_fields["content-length"], str(len(get_body)), path)
        # Allow names HEAD wherever it names GET.
        responses, _ = exchange(self.engine, request("/healthz", "POST"))
        status, fields, body = responses[0]
        self.assertEqual(status, 405, body)
        self.assertEqual(fields["allow"], "GET, HEAD")

    def test_unknown_query_parameters_are_refused_on_incidents(self):
        admin = {"Authorization": "Bearer " + self.admin}
        for query in ("foo=bar", "status=open&foo=bar", "status=open&status=all", "Status=open"):
            status, fields, body = get(self.engine, "/v1/incidents?" + query, headers=admin)
            self.assertEqual(status, 400, query)
            self.assertEqual(json.loads(body)["code"], "invalid_request", query)
        for query in ("", "?status=all&kind=balance_drift&account_id=42&limit=5"):
            status, _, body = get(self.engine, "/v1/incidents" + query, headers=admin)
            self.assertEqual(status, 200, body)
        # The token as a query parameter is the gateway's, not an unknown one.
        status, _, body = get(self.engine, "/v1/incidents?status=all&token=" + self.admin)
        self.assertEqual(status, 200, body)


class AdmissionTest(GatewayTestCase):
    """No one client takes the slots every other client needs."""

    def test_half_sent_requests_from_one_address_leave_others_served(self):
        # Held for the whole test: the share, not the header deadline, protects here.
        engine = self.serve(connections_max=150, connections_per_address_max=20,
                            header_timeout_ms=60000)
        attacker = [half_sent(engine) for _ in range(200)]
        self.addCleanup(lambda: [s.close() for s in attacker])

        def settled():
            text = scrape(engine, "127.0.0.2")
            if text is None:
                return None
            refused = metric(text, "fulltime_gateway_rejected_connections_total",
                             '{reason="address"}')
            # The attacker's 20, and this scrape.
            held = metric(text, "fulltime_gateway_open_connections")
            return text if (refused, held) == (180, 21) else None

        wait_until(settled, "the attacker's share not held, or the rest not refused")
        for source in ("127.0.0.2", "127.0.0.3"):
            self.assertEqual(get(engine, "/healthz", source)[0], 200)
            self.assertEqual(get(engine, "/readyz", source)[0], 200)
            status, _, body = get(engine, "/v1/incidents", source,
                                  {"Authorization": "Bearer " + self.admin})
            self.assertEqual(status, 200, body)
        # One more from the attacker is refused with 503 and Retry-After, once its refusals
        # under way (at most limits::refusals_per_address_max, each waiting a second for its
        # header; the others were closed without a word) have ended.
        responses = wait_until(lambda: exchange(engine, request("/v1/incidents"))[0],
                               "the attacker's address never got its 503")
        status, fields, body = responses[0]
        self.assertEqual(status, 503, body)
        self.assertEqual(json.loads(body)["code"], "unavailable")
        self.assertEqual(fields["retry-after"], "1")
        # 181 refusals, one log line (one per reason every ten seconds).
        self.assertLessEqual(len(refused_lines(engine)), 2, refused_lines(engine))

    def test_health_checks_are_answered_when_every_slot_is_taken(self):
        engine = self.serve(connections_max=30, connections_per_address_max=10,
                            header_timeout_ms=60000)
        held = [half_sent(engine, f"127.0.0.{10 + i // 10}") for i in range(30)]
        self.addCleanup(lambda: [s.close() for s in held])
        # Full once /metrics itself is refused.
        wait_until(lambda: scrape(engine, "127.0.0.20") is None, "the slots never filled")
        status, fields, body = get(engine, "/metrics", "127.0.0.20")
        self.assertEqual(status, 503)
        self.assertEqual(fields["retry-after"], "1")
        status, _, body = get(engine, "/healthz", "127.0.0.20")
        self.assertEqual((status, body), (200, '{"status":"ok"}'))
        self.assertEqual(get(engine, "/readyz", "127.0.0.21")[2], '{"status":"ready"}')
        responses, _ = exchange(engine, request("/healthz", "HEAD"), "127.0.0.22")
        self.assertEqual(responses[0][0], 200)

    def test_a_half_sent_request_is_dropped_at_the_header_deadline(self):
        engine = self.serve(header_timeout_ms=300, handshake_timeout_ms=30000)
        for start in (b"", b"GET /healthz HTTP/1.1\r\nHost: e2e\r\n"):
            with connect(engine, timeout_s=10) as s:
                s.sendall(start)
                started = time.monotonic()
                received, closed = read_all(s)
                elapsed = time.monotonic() - started
            self.assertTrue(closed, "the engine kept a half-sent request past its deadline")
            self.assertEqual(received, b"")
            self.assertLess(elapsed, 5, "closed at handshake_timeout_ms, not header_timeout_ms")
        # A whole request on a kept-alive connection is still served, and the next one too.
        with connect(engine) as s:
            s.sendall(request("/healthz", close=False) + request("/healthz"))
            received, closed = read_all(s)
        self.assertEqual([r[0] for r in parse_responses(received)], [200, 200])

    def test_one_account_gets_its_share_of_websocket_sessions(self):
        engine = self.serve(sessions_per_account_max=3)
        greedy, other = self.token("account", "42"), self.token("account", "43")

        async def scenario():
            url = engine.ws_url("/v1/bets?token=")
            held = [await websockets.client.connect(url + greedy) for _ in range(3)]
            refusals = []
            for _ in range(20):
                with self.assertRaises(InvalidStatusCode) as refused:
                    await websockets.client.connect(url + greedy)
                refusals.append(refused.exception)
            another = await websockets.client.connect(url + other)
            await another.close()
            # A session given back is a share free again.
            await held.pop().close()
            again = await asyncio.wait_for(retry_connect(url + greedy), 10)
            for ws in held + [again]:
                await ws.close()
            return refusals

        async def retry_connect(url):
            # The engine gives the share back when it has seen the close: retry until then.
            while True:
                try:
                    return await websockets.client.connect(url)
                except InvalidStatusCode as e:
                    if e.status_code != 503:
                        raise
                    await asyncio.sleep(0.05)

        refusals = asyncio.run(scenario())
        self.assertEqual({r.status_code for r in refusals}, {503})
        self.assertEqual({r.headers.get("Retry-After") for r in refusals}, {"1"})
        status, text = engine.get("/metrics")
        self.assertGreaterEqual(
            metric(text, "fulltime_gateway_rejected_connections_total", '{reason="account"}'), 20)
        self.assertLessEqual(len(refused_lines(engine)), 2, refused_lines(engine))


class ReadinessFloodTest(GatewayTestCase):
    def test_a_readyz_flood_leaves_deposits_and_the_log_alone(self):
        # A small background queue: before, /readyz took its connection from the background
        # pool, the one deposits use, and a flood filled the queue they wait in. The deposits
        # alone fit in it (two connections and sixteen waiting).
        engine = self.serve(database_pools_background_queue_max=16)
        accounts = list(range(1, 9))
        for a in accounts:
            status, body = engine.post_json("/v1/accounts", {"account_id": a, "currency": "EUR"},
                                            self.admin)
            self.assertIn(status, (200, 201), body)
        probe = request("/readyz")
        deposits = {a: request(f"/v1/accounts/{a}/deposits", "POST",
                               {"Authorization": "Bearer " + self.admin,
                                "Content-Type": "application/json"},
                               json.dumps({"amount": "1.00", "key": f"flood-{a}"}).encode())
                    for a in accounts}
        # Every connection first, then every request in one burst: fifty probes, a deposit, ...
        probes = [connect(engine) for _ in range(400)]
        depositors = {a: connect(engine) for a in accounts}
        for i, s in enumerate(probes):
            s.sendall(probe)
            if i % 50 == 49:
                a = accounts[i // 50]
                depositors[a].sendall(deposits[a])
        answers = []
        for s in probes + list(depositors.values()):
            received, closed = read_all(s)
            s.close()
            answers.append(parse_responses(received))
        probe_statuses = [r[0][0] for r in answers[:len(probes)]]
        deposit_answers = [(r[0][0], r[0][2]) for r in answers[len(probes):]]
        self.assertEqual(set(probe_statuses), {200})
        self.assertEqual([a for a in deposit_answers if a[0] not in (200, 201)], [])
        self.assertEqual([line for line in engine.lines if "readyz" in line], [])


def limited(soft, hard):
    """A preexec_fn that starts the engine with RLIMIT_NOFILE (soft, hard)."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def open_files_limits(engine):
    """(soft, hard) of the engine's "Max open files" in /proc/PID/limits."""
    with open(f"/proc/{engine.proc.pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError("no Max open files line")


class DescriptorLimitTest(GatewayTestCase):
    def test_a_low_soft_limit_is_raised_to_the_hard_one(self):
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or hard <= 512:
            self.skipTest(f"needs a finite hard descriptor limit above 512 (is {hard})")
        engine = self.serve(preexec_fn=limited(256, hard))
        self.assertEqual(open_files_limits(engine), (hard, hard))
        self.assertIn(f"descriptor limit raised from 256 to {hard}", engine.log())
        _, text = engine.get("/metrics")
        self.assertEqual(metric(text, "process_max_fds"), hard)
        self.assertEqual(metric(text, "fulltime_gateway_connections_max"), 10000)

    def test_a_hard_limit_below_connections_max_lowers_it(self):
        engine = self.serve(preexec_fn=limited(400, 400), header_timeout_ms=60000)
        _, text = engine.get("/metrics")
        lowered = int(metric(text, "fulltime_gateway_connections_max"))
        self.assertLess(lowered, 400)
        self.assertIn(f"serving at most {lowered} connections", engine.log())
        # More connections than the descriptor limit: each gets a slot or a refusal, never
        # EMFILE, and the health checks are still answered.
        held = [half_sent(engine) for _ in range(400)]
        self.addCleanup(lambda: [s.close() for s in held])
        wait_until(lambda: scrape(engine, "127.0.0.2") is None, "the slots never filled")
        self.assertEqual(get(engine, "/healthz", "127.0.0.2")[0], 200)
        self.assertEqual(get(engine, "/readyz", "127.0.0.3")[0], 200)
        self.assertNotIn("Too many open files", engine.log())
        self.assertLessEqual(len(refused_lines(engine)), 2, refused_lines(engine))


if __name__ == "__main__":
    unittest.main()
