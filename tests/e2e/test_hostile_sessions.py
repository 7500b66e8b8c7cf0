"""Hostile WebSocket clients: a client that asks for large replies and never reads
them costs the engine a bounded number of bytes and is closed with 1008, and the memory comes
back after; a session does not outlive its token."""

import asyncio
import base64
import json
import os
import socket
import struct
import threading

import websockets.client

import fixtures
from harness import Engine, EngineTestCase, wait_until
from money import assert_money_invariants

ACCOUNT = 42
BYSTANDER = 43
BETS = 200          # a `bets` page of limit 200 is then full
KEY_CHARS = 200     # long keys make each bet's JSON about 450 bytes, a page about 90 KB
ATTACKERS = 4
REQUESTS = 1000     # each attacker's burst: all in flight at once, every reply a full page
MIB = 1 << 20
# The sanitizer build (cmake --preset dev): ASan keeps freed memory in its quarantine, so RSS
# says nothing about the engine's own bounds there.
SANITIZED = os.environ.get("FULLTIME_TEST_SANITIZED") == "1"


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for " + str(pid))


def metric(engine, name):
    _, text = engine.get("/metrics")
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def masked_frame(opcode, payload):
    """One client-to-server frame (clients must mask, RFC 6455 5.3); `payload` under 126
    bytes."""
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return struct.pack("!BB", 0x80 | opcode, 0x80 | len(payload)) + mask + masked


class NonReader:
    """A WebSocket client that sends REQUESTS `bets` requests at once and never reads its
    replies: a tiny receive buffer, the upgrade's response read and nothing after. It then
    pings every 50 ms, to learn when the engine has closed the connection (a send fails)."""

    def __init__(self, port, token):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /v1/bets?token={token} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(1)
            if not chunk:
                raise AssertionError("upgrade refused: " + response.decode(errors="replace"))
            response += chunk
        if not response.startswith(b"HTTP/1.1 101"):
            raise AssertionError("upgrade refused: " + response.decode(errors="replace"))
        self.sent = 0
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._flood, daemon=True)
        self.thread.start()

    def _flood(self):
        try:
            for i in range(REQUESTS):
                self.sock.sendall(masked_frame(0x1, json.dumps(
                    {"type": "bets", "id": f"b{i}", "limit": BETS}).encode()))
                self.sent += 1
            while True:
                self.sock.sendall(masked_frame(0x9, b"alive?"))
                self.closed.wait(0.05)
        except OSError:
            # The engine closed the connection: the send fails once it is gone.
            pass
        finally:
            self.closed.set()
            self.sock.close()


class SlowConsumerTest(EngineTestCase):
    ENGINE_ENV = {
        # The close handshake of a client that never reads ends at this deadline.
        "FULLTIME_GATEWAY_HANDSHAKE_TIMEOUT_MS": "2000",
        # Every request of a burst runs: none is answered with a small `busy`.
        "FULLTIME_GATEWAY_INFLIGHT_PER_CONNECTION_MAX": str(REQUESTS + 24),
        # ... and waits for a read connection as long as it takes, so that every reply is a
        # full page, never a short `unavailable`.
        "FULLTIME_DATABASE_POOLS_READ_WAIT_MS_MAX": "120000",
    }

    def place_many(self, engine, token, count, prefix):
        async def place():
            async with websockets.client.connect(engine.ws_url("/v1/bets?token=" + token)) as ws:
                placed = 0
                for start in range(0, count, 50):
                    batch = range(start, min(count, start + 50))
                    for i in batch:
                        key = (prefix + str(i)).ljust(KEY_CHARS, "x")
                        await ws.send(json.dumps({
                            "type": "place", "id": f"p{i}", "idempotency_key": key,
                            "selection_id": 1001, "stake": "1.00", "odds": "2.50"}))
                    for _ in batch:
                        reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
                        self.assertEqual(reply["type"], "placed", reply)
                        placed += 1
                return placed
        return asyncio.run(place())

    def test_a_client_that_never_reads_costs_a_bounded_number_of_bytes(self):
        engine = Engine(self.env)
        self.addCleanup(engine.kill)
        engine.wait_ready()
        self.send_market(engine, fixtures.MARKET)
        self.open_accounts(engine, [ACCOUNT, BYSTANDER], "1000.00")
        token = self.token("account", str(ACCOUNT))
        bystander = self.token("account", str(BYSTANDER))
        self.assertEqual(self.place_many(engine, token, BETS, "page-"), BETS)

        pid = engine.proc.pid
        before = rss_bytes(pid)
        peak = [before]
        sampling = threading.Event()
        self.addCleanup(sampling.set)

        def sample():
            while not sampling.wait(0.02):
                peak[0] = max(peak[0], rss_bytes(pid))
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        attackers = [NonReader(engine.port, token) for _ in range(ATTACKERS)]
        # Meanwhile a bettor who reads gets every reply.
        self.assertEqual(self.place_many(engine, bystander, 20, "bystander-"), 20)
        for a in attackers:
            self.assertTrue(a.closed.wait(120), "the engine never closed a client that does not "
                            "read\n" + engine.log())
        wait_until(lambda: metric(engine, "fulltime_ws_slow_consumers_total") >= ATTACKERS,
                   "slow consumers not counted:\n" + engine.log())
        wait_until(lambda: metric(engine, "fulltime_ws_queued_bytes") == 0,
                   "queued bytes not released")
        sampling.set()
        sampler.join()
        print(f"\nslow consumers: RSS before {before / MIB:.1f} MiB, peak {peak[0] / MIB:.1f} MiB")
        self.assertIn("client does not read its messages", engine.log())
        status, _ = engine.get("/healthz")
        self.assertEqual(status, 200)
        assert_money_invariants(self, self.db_url)
        if SANITIZED:
            return
        # After the close, the memory goes back to the system (the sessions trim the heap).
        after = wait_until(lambda: (lambda r: r if r - before < 24 * MIB else None)(rss_bytes(pid)),
                           "memory not returned after the slow consumers closed: "
                           f"{rss_bytes(pid) // MIB} MiB against {before // MIB} MiB before",
                           timeout_s=30)
        growth = peak[0] - before
        print(f"slow consumers: RSS after {after / MIB:.1f} MiB")
        # Each holds at most gateway.write_queue_bytes_max (1 MiB) queued, plus the replies
        # being built: far below the 90 MB each (1,000 pages) a queue bounded only in messages
        # (4,096 of them) let one hold.
        self.assertLess(growth, 48 * MIB, f"RSS grew by {growth // MIB} MiB for {ATTACKERS} "
                        "clients that do not read")


class TokenExpiryTest(EngineTestCase):
    def test_a_session_closes_when_its_token_expires(self):
        engine = Engine(self.env)
        self.addCleanup(engine.kill)
        engine.wait_ready()
        self.send_market(engine, fixtures.MARKET)
        self.open_accounts(engine, [ACCOUNT], "100.00")
        token = self.token("account", str(ACCOUNT), "--ttl", "3")

        async def scenario():
            async with websockets.client.connect(engine.ws_url("/v1/bets?token=" + token),
                                                 ping_interval=0.5) as ws:
                await ws.send(json.dumps({"type": "place", "id": "p1", "idempotency_key": "k1",
                                          "selection_id": 1001, "stake": "1.00",
                                          "odds": "2.50"}))
                placed = json.loads(await asyncio.wait_for(ws.recv(), 10))
                # Pings every half second keep the connection live; only the expiry ends it.
                await asyncio.wait_for(ws.wait_closed(), 30)
                return placed, ws.close_code, ws.close_reason
        placed, code, reason = asyncio.run(scenario())
        self.assertEqual(placed["type"], "placed", placed)
        self.assertEqual((code, reason), (4001, "token expired"))
        wait_until(lambda: metric(engine, "fulltime_ws_sessions_expired_total") == 1,
                   "expired session not counted")
        assert_money_invariants(self, self.db_url)


if __name__ == "__main__":
    import unittest
    unittest.main()
