"""A bet client for Fulltime's WebSocket protocol (docs/protocol.md), written as a client that is
not part of the engine would be: it knows only the wire contract.

What a careful client does, and this one does:
- every request carries an `id`, and replies are matched by it (they come in completion order);
- a placement carries an `idempotency_key` chosen before the first attempt, and `busy` or a lost
  connection is retried with the same key, so a retry can never place a second bet;
- the connection is opened again after it drops, with a growing pause, and what was in flight
  is sent again (a `place` with its key, reads as they are);
- pushed `bet_settled` messages are handed to the caller, who must treat them as idempotent by
  (bet_id, version): they are at least once;
- money and odds travel as decimal strings and are kept as `decimal.Decimal`, never floats.

Uses Python's standard library and `websockets` (Debian: python3-websockets)."""

import asyncio
import itertools
import json
import uuid

import websockets.client
import websockets.exceptions

# Pauses between reconnection attempts, then the last one again.
RECONNECT_DELAYS_S = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
# Pauses between retries of a request answered `busy`, then the last one again.
BUSY_DELAYS_S = (0.05, 0.1, 0.2, 0.5, 1.0)


class Refused(Exception):
    """The engine refused the request (a `rejected` reply or an `error`); `.reply` holds it."""

    def __init__(self, reply):
        super().__init__(f"{reply.get('code')}: {reply.get('message')}")
        self.reply = reply


class BetClient:
    """One bettor's connection to `/v1/bets`. Use as `async with BetClient(url, token) as c:`.

    `on_push(message)` is called for every `bet_settled`; by default they are queued on
    `pushes` (an asyncio.Queue). `on_connect(n)` is called after each connection is made (n = 1,
    2, ...): pushes reach connected clients only, so a client that reconnects reads what it
    may have missed with `bets`. `busy_retries` counts requests sent again after `busy`."""

    def __init__(self, url, token, on_push=None, on_connect=None, give_up_after_s=60.0):
        self.url = url
        self.token = token
        self.pushes = asyncio.Queue()
        self.on_push = on_push or self.pushes.put_nowait
        self.on_connect = on_connect
        self.give_up_after_s = give_up_after_s
        self.busy_retries = 0
        self._connections = 0
        self._ids = itertools.count(1)
        self._waiting = {}  # request id -> (message, future)
        self._ws = None
        self._connected = asyncio.Event()
        self._reader = None
        self._closing = False

    async def __aenter__(self):
        await self._connect()
        self._reader = asyncio.create_task(self._read_forever())
        return self

    async def __aexit__(self, *exc):
        self._closing = True
        if self._reader:
            self._reader.cancel()
        if self._ws:
            await self._ws.close()

    async def place(self, selection_id, stake, odds, idempotency_key=None, accept=None):
        """Places a bet; returns the `placed` reply (`replayed` true when the key had placed it
        already). `stake` and `odds` are decimal strings ("10.00", "2.50"). Retries `busy` and
        lost connections with the same key; raises Refused for a `rejected` reply."""
        message = {"type": "place", "idempotency_key": idempotency_key or str(uuid.uuid4()),
                   "selection_id": int(selection_id), "stake": str(stake), "odds": str(odds)}
        if accept:
            message["accept"] = accept
        reply = await self.request(message)
        if reply["type"] != "placed":
            raise Refused(reply)
        return reply

    async def balance(self):
        """Returns the `balance` reply: available, reserved, currency."""
        return await self.request({"type": "balance"})

    async def bets(self, status="all", page_size=50):
        """Yields the account's bets, newest first, page by page (`next_before`)."""
        before = None
        while True:
            message = {"type": "bets", "status": status, "limit": page_size}
            if before is not None:
                message["before"] = before
            reply = await self.request(message)
            for bet in reply["bets"]:
                yield bet
            before = reply.get("next_before")
            if before is None:
                return

    async def request(self, message):
        """Sends `message` with a fresh `id` and returns its reply. `busy` is retried (with the
        same message, so a placement keeps its key); an `error` raises Refused."""
        deadline = asyncio.get_running_loop().time() + self.give_up_after_s
        for attempt in itertools.count():
            reply = await self._send_and_wait(dict(message, id=f"r{next(self._ids)}"), deadline)
            if reply["type"] == "error":
                raise Refused(reply)
            if reply["type"] == "rejected" and reply.get("code") == "busy":
                self.busy_retries += 1
                # The engine's hint (retry_after_ms) is the least wait; back off beyond it.
                await asyncio.sleep(max(reply.get("retry_after_ms", 0) / 1000,
                                        BUSY_DELAYS_S[min(attempt, len(BUSY_DELAYS_S) - 1)]))
                continue
            return reply

    async def _send_and_wait(self, message, deadline):
        future = asyncio.get_running_loop().create_future()
        self._waiting[message["id"]] = (message, future)
        try:
            await self._send(message)
            remaining = deadline - asyncio.get_running_loop().time()
            return await asyncio.wait_for(future, max(remaining, 0.001))
        finally:
            self._waiting.pop(message["id"], None)

    async def _send(self, message):
        await self._connected.wait()
        try:
            await self._ws.send(json.dumps(message))
        except websockets.exceptions.ConnectionClosed:
            pass  # the reader reconnects and sends every waiting request again

    async def _connect(self):
        for attempt in itertools.count():
            try:
                # The token in a header, not the URL: URLs end up in proxies' logs.
                self._ws = await websockets.client.connect(
                    self.url, extra_headers={"Authorization": "Bearer " + self.token})
                self._connected.set()
                self._connections += 1
                if self.on_connect:
                    self.on_connect(self._connections)
                return
            except (OSError, websockets.exceptions.InvalidHandshake):
                if attempt >= len(RECONNECT_DELAYS_S) * 3:
                    raise
                await asyncio.sleep(RECONNECT_DELAYS_S[min(attempt, len(RECONNECT_DELAYS_S) - 1)])

    async def _read_forever(self):
        while not self._closing:
            try:
                async for frame in self._ws:
                    self._dispatch(json.loads(frame))
            except websockets.exceptions.ConnectionClosed:
                pass
            if self._closing:
                return
            # Lost: connect again and send what is still waiting. A placement resent with its
            # key either places its bet or replays the one placed before the loss.
            self._connected.clear()
            await self._connect()
            for message, future in list(self._waiting.values()):
                if not future.done():
                    await self._send(message)

    def _dispatch(self, message):
        if message.get("type") == "bet_settled":
            self.on_push(message)
            return
        waiting = self._waiting.get(message.get("id"))
        if waiting and not waiting[1].done():
            waiting[1].set_result(message)
