"""The seeded model test: drives the real engine over its public interfaces with a random
sequence of operations drawn from a seed, and checks it against an independent model.

The model is plain arithmetic over what a client sent and was told; it shares no code with the
engine. It predicts every placement's outcome and every balance: deposits and withdrawals
(keyed, replayed, refused), placements (fresh keys, retries, key reuse with other parameters,
races of concurrent placements on one account), suspensions and odds changes, result events
with void and dead-heat factors, corrections, rollbacks, cancels with time windows and their
rollbacks, duplicate and out-of-order feed events, and SIGKILL + restart of the engine at random
moments (between operations, while a market settles, in the middle of a burst of placements),
and the operator's void of a market's open bets (`POST /v1/markets/{id}/void-overdue`).

After every operation, once the engine has applied every feed event the model knows it can
(events apply per market in seq order), the engine's balances and every bet's effect in force
must equal the model's, and the money invariants must hold in plain SQL (tests/e2e/money.py);
every tenth operation, and at the end, `fulltime audit` must find them too (a process and its
connection each time: it checks the same invariants, through the operator's tool).

Run one seed:      /usr/bin/python3 tests/e2e/model.py --seed 7 --ops 150
(with FULLTIME_TEST_DATABASE_URL set, as scripts/test and scripts/soak do). A failing seed
prints the command that replays it.

One thing is observed rather than predicted: how a bettor's money splits between `available`
and `owed`. When a correction takes back a payout the bettor already spent, the engine advances
the shortfall as debt per settlement batch, and which batch a bet falls in is the engine's
business. The model predicts available - owed (and reserved) exactly; its placement and
withdrawal predictions use the engine's available only after checking that split against it.
"""

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import time
import traceback
from datetime import datetime, timedelta, timezone

import psycopg
import websockets.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Engine, database_env, drop_database, run_cli  # noqa: E402
from money import audit_violations, sql_violations  # noqa: E402

SETTLE_TIMEOUT_S = 60


# --- Decimal strings <-> integers, exact ---------------------------------------------------------

def cents(text):
    whole, _, frac = text.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def money(c):
    return f"{c // 100}.{c % 100:02d}"


def odds_units(text):
    whole, _, frac = text.partition(".")
    return int(whole) * 10000 + int((frac + "0000")[:4])


def odds_text(u):
    return f"{u // 10000}.{u % 10000:04d}"


def factor_text(u):
    return f"{u // 10000}.{u % 10000:04d}"


def parse_time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def time_text(t):
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Mismatch(AssertionError):
    pass


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


# --- The model -----------------------------------------------------------------------------------

class Bet:
    def __init__(self, bet_id, account, market, selection, stake, odds, placed_at):
        self.bet_id, self.account, self.market = bet_id, account, market
        self.selection, self.stake, self.odds, self.placed_at = selection, stake, odds, placed_at
        self.version = 0        # latest version written (reversals keep their version)
        self.in_force = None    # None (open), ("settle", payout) or ("cancel", stake)


class Market:
    def __init__(self, market_id, selections, stake_min, stake_max):
        self.market_id = market_id
        self.selections = dict(selections)     # selection_id -> odds units
        self.stake_min, self.stake_max = stake_min, stake_max
        self.status = "open"
        self.next_seq = 1
        self.sent = {}           # seq -> event message (acknowledged as stored)
        self.applied_seq = 0     # the model's: highest contiguous seq applied
        self.effective = None    # outcomes of the result in force
        self.bets = []


class Model:
    def __init__(self):
        self.net = {}            # account -> available - owed
        self.reserved = {}
        self.deposits = {}       # (account, key) -> amount
        self.withdrawals = {}    # (account, key) -> amount (applied ones only)
        self.placements = {}     # (account, key) -> (params, reply summary)
        self.markets = {}
        self.bets = {}
        self.selection_market = {}

    # Payout in minor units: floor(S*v + [win] * S*(1-v)*d*O), factors and odds in 1/10000.
    @staticmethod
    def payout(bet, outcomes):
        win, vu, du = False, 0, 10000
        for o in outcomes:
            if o["selection_id"] == bet.selection:
                win, vu, du = o["win"], o["void_factor"], o["dead_heat_factor"]
        total = bet.stake * vu * 10**8
        if win:
            total += bet.stake * (10000 - vu) * du * bet.odds
        return total // 10**12

    def _settle(self, bet, outcomes):
        p = self.payout(bet, outcomes)
        bet.version += 1
        bet.in_force = ("settle", p)
        self.reserved[bet.account] -= bet.stake
        self.net[bet.account] += p

    def _reverse(self, bet):
        kind, amount = bet.in_force
        self.reserved[bet.account] += bet.stake
        self.net[bet.account] -= amount
        bet.in_force = None

    def _cancel(self, bet):
        bet.version += 1
        bet.in_force = ("cancel", bet.stake)
        self.reserved[bet.account] -= bet.stake
        self.net[bet.account] += bet.stake

    def apply_ready_events(self, market):
        while market.applied_seq + 1 in market.sent:
            ev = market.sent[market.applied_seq + 1]
            self.apply_event(market, ev)
            market.applied_seq += 1

    def apply_event(self, market, ev):
        kind = ev["type"]
        lo = parse_time(ev["start_time"]) if ev.get("start_time") else None
        hi = parse_time(ev["end_time"]) if ev.get("end_time") else None
        outcomes = None
        if kind == "result":
            outcomes = normalise_outcomes(ev["outcomes"])
        elif kind == "rollback_cancel":
            outcomes = market.effective
        for bet in sorted(market.bets, key=lambda b: b.bet_id):
            if kind in ("cancel", "rollback_cancel"):
                if (lo and bet.placed_at < lo) or (hi and bet.placed_at >= hi):
                    continue
            state = bet.in_force[0] if bet.in_force else None
            if kind == "result":
                if state == "cancel":
                    continue
                if state == "settle":
                    self._reverse(bet)
                self._settle(bet, outcomes)
            elif kind == "rollback_result":
                if state == "settle":
                    self._reverse(bet)
            elif kind == "cancel":
                if state == "cancel":
                    continue
                if state == "settle":
                    self._reverse(bet)
                self._cancel(bet)
            elif kind == "rollback_cancel":
                if state == "cancel":
                    self._reverse(bet)
                    if outcomes is not None:
                        self._settle(bet, outcomes)
            elif kind == "void_open":
                if state is None:
                    self._cancel(bet)
        if kind == "result":
            market.effective = outcomes
        elif kind == "rollback_result":
            market.effective = None


def normalise_outcomes(outcomes):
    out = []
    for o in outcomes:
        out.append({"selection_id": o["selection_id"], "win": o["result"] == "win",
                    "void_factor": odds_units(o.get("void_factor", "0")),
                    "dead_heat_factor": odds_units(o.get("dead_heat_factor", "1"))})
    return out


# --- The run -------------------------------------------------------------------------------------

class Run:
    """One seed: a scratch database, an engine, the model, and the operations."""

    def __init__(self, seed, ops, log=print, keep_db=False):
        self.seed, self.ops = seed, ops
        self.rng = random.Random(seed)
        self.log = log
        self.keep_db = keep_db
        self.model = Model()
        self.step = 0
        self.history = []
        self.kills = 0
        self.counts = {}
        self.next_market = 100
        self.next_selection = 1000
        self.key_serial = 0
        self.debt_seen = set()
        self.conn = None  # sql()'s session

    # Engine lifecycle ------------------------------------------------------------------------

    def start(self):
        batch = self.rng.choice([1, 2, 3, 5, 8, 50])
        self.db_name, self.db_url, self.env = database_env(
            {"FULLTIME_SETTLEMENT_BATCH_BETS_MAX": str(batch),
             "FULLTIME_SETTLEMENT_POLL_INTERVAL_MS": "100"}, migrated=True)
        self.note(f"seed {self.seed}: settlement batch size {batch}")
        self.admin = self.cli_token("admin", "model")
        self.producer = self.cli_token("producer", "model-feed")
        self.tokens = {}
        self.engine = Engine(self.env)
        self.engine.wait_ready()

    def stop(self):
        try:
            if self.engine:
                self.engine.stop(signal.SIGTERM)
        finally:
            self.engine = None
            if self.conn is not None:
                self.conn.close()
                self.conn = None
            if not self.keep_db:
                drop_database(self.db_name)

    def restart_after_kill(self):
        self.engine.stop(signal.SIGKILL)
        self.kills += 1
        self.engine = Engine(self.env)
        self.engine.wait_ready()

    def cli_token(self, *args):
        code, out, err = run_cli(["token", *args], self.env)
        expect(code == 0, f"fulltime token {args}: {err}")
        return out.strip()

    def bettor_token(self, account):
        if account not in self.tokens:
            self.tokens[account] = self.cli_token("account", str(account))
        return self.tokens[account]

    def note(self, text):
        self.history.append(f"[{self.step}] {text}")

    def sql(self, query, *args):
        # One session for the run's own reads (check() makes several per step); opened again
        # if it broke.
        if self.conn is None or self.conn.closed or self.conn.broken:
            self.conn = psycopg.connect(self.db_url, autocommit=True)
        cur = self.conn.execute(query, args)
        return cur.fetchall() if cur.description else []

    # Transports ------------------------------------------------------------------------------

    def post(self, path, body, token):
        for _ in range(50):
            status, reply = self.engine.post_json(path, body, token)
            if status != 503:
                return status, reply
            time.sleep(0.1)
        return status, reply

    def feed(self, message):
        return self.post("/v1/feed", message, self.producer)

    async def _place(self, account, requests, kill_after_s=None):
        """Sends each request on its own connection at once; returns the replies (None for a
        request whose reply did not come because the engine was killed)."""
        url = self.engine.ws_url("/v1/bets") + "?token=" + self.bettor_token(account)

        async def reply_to(ws, req):
            # A bettor with settled bets may get a pushed bet_settled before the reply: the
            # reply is the frame that echoes the request's id.
            while True:
                frame = json.loads(await ws.recv())
                if frame.get("id") == req["id"]:
                    return frame

        async def one(req):
            try:
                async with websockets.client.connect(url, open_timeout=10) as ws:
                    await ws.send(json.dumps(req))
                    return await asyncio.wait_for(reply_to(ws, req), 20)
            except (OSError, websockets.exceptions.WebSocketException, asyncio.TimeoutError):
                return None

        tasks = [asyncio.ensure_future(one(r)) for r in requests]
        if kill_after_s is not None:
            await asyncio.sleep(kill_after_s)
            self.engine.stop(signal.SIGKILL)
        return await asyncio.gather(*tasks)

    def place(self, account, requests, kill_after_s=None):
        replies = asyncio.run(self._place(account, requests, kill_after_s))
        if kill_after_s is not None:
            self.kills += 1
            self.engine = Engine(self.env)
            self.engine.wait_ready()
        # busy is not stored: the same key again is a fresh attempt. An unanswered request
        # (killed engine) is resolved the same way: its key tells what happened.
        for i, r in enumerate(replies):
            tries = 0
            while r is None or (r.get("type") == "rejected" and r.get("code") == "busy"):
                tries += 1
                expect(tries < 50, f"placement {requests[i]} never answered")
                time.sleep(0.05)
                r = asyncio.run(self._place(account, [requests[i]]))[0]
            replies[i] = r
        return replies

    # Observation -----------------------------------------------------------------------------

    def observed_available(self, account):
        """The engine's available, after checking that available - owed is the model's."""
        rows = self.sql("SELECT available, reserved, owed FROM accounts WHERE account_id = %s",
                        account)
        expect(rows, f"account {account} missing")
        available, reserved, owed = rows[0]
        expect(available - owed == self.model.net[account] and reserved == self.model.reserved[account],
               f"account {account}: engine available {available} owed {owed} reserved {reserved}, "
               f"model available-owed {self.model.net[account]} reserved {self.model.reserved[account]}")
        return available

    def wait_settled(self):
        """Waits until the engine applied, per market, exactly the events the model applied."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        want = {m.market_id: m.applied_seq for m in self.model.markets.values() if m.sent}
        while True:
            rows = dict(self.sql("SELECT market_id, applied_seq FROM settlement_progress "
                                 "WHERE current_seq IS NULL"))
            if all(rows.get(mid) == seq for mid, seq in want.items()):
                return
            expect(time.monotonic() < deadline,
                   f"settlement did not reach {want} in {SETTLE_TIMEOUT_S}s (engine: {rows})\n"
                   + self.engine.log()[-3000:])
            time.sleep(0.05)

    def check(self, audit=False):
        self.wait_settled()
        m = self.model
        rows = self.sql("SELECT account_id, available, reserved, owed FROM accounts ORDER BY 1")
        engine = {a: (av - ow, rs, av, ow) for a, av, rs, ow in rows}
        self.debt_seen |= {a for a, _, _, ow in rows if ow > 0}
        expect(set(engine) == set(m.net), f"accounts: engine {sorted(engine)} model {sorted(m.net)}")
        for a in m.net:
            net, rs, av, ow = engine[a]
            expect((net, rs) == (m.net[a], m.reserved[a]),
                   f"account {a}: engine available {av} owed {ow} reserved {rs}; model "
                   f"available-owed {m.net[a]} reserved {m.reserved[a]}")
        bets = self.sql("""
            SELECT b.bet_id, b.account_id, b.stake, b.odds, e.kind, e.version, e.payout,
                   (SELECT max(version) FROM bet_settlements x WHERE x.bet_id = b.bet_id)
            FROM bets b LEFT JOIN LATERAL (
                SELECT s.kind, s.version, s.payout FROM bet_settlements s
                WHERE s.bet_id = b.bet_id AND NOT s.reversal AND NOT EXISTS (
                    SELECT 1 FROM bet_settlements r
                    WHERE r.bet_id = s.bet_id AND r.version = s.version AND r.reversal)) e ON true
            ORDER BY b.bet_id""")
        expect(len(bets) == len(m.bets), f"bets: engine {len(bets)}, model {len(m.bets)}")
        for bet_id, account, stake, odds, kind, version, payout, last_version in bets:
            b = m.bets.get(bet_id)
            expect(b is not None, f"engine has bet {bet_id} the model does not know")
            expect((account, stake, odds) == (b.account, b.stake, b.odds),
                   f"bet {bet_id}: engine {(account, stake, odds)} model {(b.account, b.stake, b.odds)}")
            want = (b.in_force[0], b.in_force[1]) if b.in_force else (None, None)
            expect((kind, payout) == want and (last_version or 0) == b.version,
                   f"bet {bet_id}: engine in force {kind} payout {payout} version {last_version}; "
                   f"model {want} version {b.version}")
        problems = sql_violations(self.db_url, self.conn)
        expect(not problems, "money invariants: " + "; ".join(problems))
        if audit:
            problems = audit_violations(self.db_url)
            expect(not problems, "fulltime audit: " + "; ".join(problems))

    # Operations ------------------------------------------------------------------------------

    def new_key(self, prefix):
        self.key_serial += 1
        return f"{prefix}-{self.seed}-{self.key_serial}"

    def op_account(self):
        a = len(self.model.net) + 1
        status, body = self.post("/v1/accounts", {"account_id": a, "currency": "EUR"}, self.admin)
        expect(status in (200, 201), f"create account {a}: {status} {body}")
        self.model.net[a] = 0
        self.model.reserved[a] = 0
        self.note(f"account {a}")

    def op_market(self):
        mid = self.next_market
        self.next_market += 1
        sels = {}
        for _ in range(self.rng.choice([2, 2, 3])):
            sels[self.next_selection] = self.rng.choice([15000, 18500, 20000, 25500, 31000, 42000])
            self.next_selection += 1
        stake_max = self.rng.choice([5000, 20000, 100000])
        msg = {"type": "market", "market_id": mid, "event_id": 1, "name": f"model market {mid}",
               "status": "open", "stake_min": "0.10", "stake_max": money(stake_max),
               "selections": [{"selection_id": s, "name": f"sel {s}", "odds": odds_text(o)}
                              for s, o in sels.items()]}
        status, body = self.feed(msg)
        expect(status == 200 and body.get("created") is True, f"market {mid}: {status} {body}")
        self.model.markets[mid] = Market(mid, sels, 10, stake_max)
        for s in sels:
            self.model.selection_market[s] = mid
        self.note(f"market {mid} selections {sels} stake_max {stake_max}")

    def transfer(self, kind, account, amount, key):
        path = f"/v1/accounts/{account}/{kind}s"
        return self.post(path, {"amount": money(amount), "key": key}, self.admin)

    def op_deposit(self):
        m = self.model
        a = self.rng.choice(list(m.net))
        old = [k for k in m.deposits if k[0] == a]
        if old and self.rng.random() < 0.3:
            key = self.rng.choice(old)[1]
            amount = m.deposits[(a, key)]
            same = self.rng.random() < 0.6
            if not same:
                amount += self.rng.randint(1, 500)
            status, body = self.transfer("deposit", a, amount, key)
            if same:
                expect(status in (200, 201), f"deposit replay {a}/{key}: {status} {body}")
            else:
                expect(status == 409 and body.get("code") == "idempotency_key_reused",
                       f"deposit key reuse {a}/{key}: {status} {body}")
            self.note(f"deposit {a} {key} again ({'same' if same else 'other'} amount)")
            return
        key = self.new_key("dep")
        amount = self.rng.choice([500, 1000, 2500, 10000, 50000]) + self.rng.randint(0, 99)
        status, body = self.transfer("deposit", a, amount, key)
        expect(status in (200, 201), f"deposit {a} {amount}: {status} {body}")
        m.deposits[(a, key)] = amount
        m.net[a] += amount
        self.note(f"deposit {a} {money(amount)} key {key}")

    def op_withdrawal(self):
        m = self.model
        a = self.rng.choice(list(m.net))
        available = self.observed_available(a)
        old = [k for k in m.withdrawals if k[0] == a]
        if old and self.rng.random() < 0.25:
            key = self.rng.choice(old)[1]
            status, body = self.transfer("withdrawal", a, m.withdrawals[(a, key)], key)
            expect(status in (200, 201), f"withdrawal replay {a}/{key}: {status} {body}")
            self.note(f"withdrawal {a} {key} again")
            return
        key = self.new_key("wd")
        r = self.rng.random()
        if available > 0 and r < 0.25:
            amount = available              # drained: a later correction leaves a debt
        elif available > 0 and r < 0.7:
            amount = self.rng.randint(1, available)
        else:
            amount = available + self.rng.randint(1, 5000)
        status, body = self.transfer("withdrawal", a, amount, key)
        if amount <= available:
            expect(status in (200, 201), f"withdrawal {a} {amount} of {available}: {status} {body}")
            m.withdrawals[(a, key)] = amount
            m.net[a] -= amount
            self.note(f"withdrawal {a} {money(amount)}")
        else:
            expect(status == 409 and body.get("code") == "insufficient_funds",
                   f"withdrawal {a} {amount} above {available}: {status} {body}")
            self.note(f"withdrawal {a} {money(amount)} refused (available {money(available)})")

    def open_selections(self):
        return [s for s, mid in self.model.selection_market.items()
                if self.model.markets[mid].status == "open"]

    def placement_request(self, account, key=None):
        m = self.model
        r = self.rng.random()
        if r < 0.05:
            sel = 999999                                   # unknown selection
        elif r < 0.15 or not self.open_selections():
            sel = self.rng.choice(list(m.selection_market))  # maybe a suspended market
        else:
            sel = self.rng.choice(self.open_selections())
        current = m.markets[m.selection_market[sel]].selections[sel] if sel in m.selection_market else 20000
        accept = self.rng.choice(["exact", "exact", "better", "any"])
        odds = current if self.rng.random() < 0.8 else self.rng.choice([current - 500, current + 500])
        r = self.rng.random()
        if r < 0.05:
            stake = self.rng.choice([1, 9])                # below stake_min (0.10)
        elif r < 0.1:
            stake = 10**6                                  # above every stake_max
        else:
            stake = self.rng.choice([10, 100, 250, 1000, 2000, 4999])
        return {"type": "place", "id": self.new_key("req"),
                "idempotency_key": key or self.new_key("bet"), "selection_id": sel,
                "stake": money(stake), "odds": odds_text(odds), "accept": accept}

    def predict(self, account, req, available):
        """The model's answer to a placement: ("placed", odds) or ("rejected", code)."""
        m = self.model
        params = (req["selection_id"], cents(req["stake"]), odds_units(req["odds"]), req["accept"])
        known = m.placements.get((account, req["idempotency_key"]))
        if known:
            if known[0] != params:
                return ("key_reused", None)
            return ("replay", known[1])
        sel = req["selection_id"]
        if sel not in m.selection_market:
            return ("rejected", "unknown_selection")
        market = m.markets[m.selection_market[sel]]
        current = market.selections[sel]
        stake, odds = params[1], params[2]
        if market.status != "open":
            return ("rejected", "market_suspended")
        if (req["accept"] == "exact" and current != odds) or (req["accept"] == "better" and current < odds):
            return ("rejected", "odds_changed")
        if stake < market.stake_min or stake > market.stake_max:
            return ("rejected", "stake_limit")
        if available < stake:
            return ("rejected", "insufficient_funds")
        return ("placed", current)

    def record_placed(self, account, req, reply):
        m = self.model
        bet = reply["bet"]
        b = Bet(bet["bet_id"], account, bet["market_id"], bet["selection_id"], cents(bet["stake"]),
                odds_units(bet["odds"]), parse_time(bet["placed_at"]))
        expect(b.bet_id not in m.bets, f"bet id {b.bet_id} given twice")
        m.bets[b.bet_id] = b
        m.markets[b.market].bets.append(b)
        m.net[account] -= b.stake
        m.reserved[account] += b.stake

    def settle_reply(self, account, req, reply, prediction):
        """Checks one reply against the prediction and updates the model."""
        m = self.model
        params = (req["selection_id"], cents(req["stake"]), odds_units(req["odds"]), req["accept"])
        key = (account, req["idempotency_key"])
        kind, detail = prediction
        if kind == "key_reused":
            expect(reply["type"] == "rejected" and reply["code"] == "idempotency_key_reused",
                   f"key reuse {req}: {reply}")
            return
        if kind == "replay":
            stored = detail
            expect(reply.get("replayed") is True, f"replay of {req}: {reply}")
            if stored[0] == "placed":
                expect(reply["type"] == "placed" and reply["bet"]["bet_id"] == stored[1],
                       f"replay of {req}: {reply}, stored {stored}")
            else:
                expect(reply["type"] == "rejected" and reply["code"] == stored[1],
                       f"replay of {req}: {reply}, stored {stored}")
            return
        if kind == "placed":
            expect(reply["type"] == "placed" and reply.get("replayed") is False,
                   f"{req}: predicted placed at {detail}, got {reply}")
            expect(odds_units(reply["bet"]["odds"]) == detail and
                   m.selection_market[req["selection_id"]] == reply["bet"]["market_id"],
                   f"{req}: placed {reply['bet']}, predicted odds {detail}")
            self.record_placed(account, req, reply)
            m.placements[key] = (params, ("placed", reply["bet"]["bet_id"]))
            return
        expect(reply["type"] == "rejected" and reply["code"] == detail,
               f"{req}: predicted rejected {detail}, got {reply}")
        m.placements[key] = (params, ("rejected", detail))

    def op_place(self):
        m = self.model
        a = self.rng.choice(list(m.net))
        own = [k for k in m.placements if k[0] == a]
        r = self.rng.random()
        if own and r < 0.15:
            # A retry with the same key and parameters (maybe after a deposit that would now
            # cover a refused stake): the stored answer again.
            key = self.rng.choice(own)
            sel, stake, odds, accept = m.placements[key][0]
            req = {"type": "place", "id": self.new_key("req"), "idempotency_key": key[1],
                   "selection_id": sel, "stake": money(stake), "odds": odds_text(odds),
                   "accept": accept}
            what = "retry"
        elif own and r < 0.25:
            key = self.rng.choice(own)
            req = self.placement_request(a, key[1])
            what = "key reuse"
        else:
            req = self.placement_request(a)
            what = "new"
        before = (m.net[a], m.reserved[a])
        prediction = self.predict(a, req, self.observed_available(a))
        reply = self.place(a, [req])[0]
        self.settle_reply(a, req, reply, prediction)
        if prediction[0] != "placed":
            expect((m.net[a], m.reserved[a]) == before, "a refusal moved money in the model")
        self.note(f"place ({what}) {a} {req['idempotency_key']} sel {req['selection_id']} "
                  f"{req['stake']}@{req['odds']} {req['accept']}: {prediction}")

    def op_race(self, kill=False):
        """k placements of one stake on one account at once: exactly as many are placed as the
        money covers, whichever they are; with kill, the engine dies in the middle and every
        key is sent again after the restart."""
        m = self.model
        sels = self.open_selections()
        if not sels:
            return self.op_market()
        a = self.rng.choice(list(m.net))
        sel = self.rng.choice(sels)
        market = m.markets[m.selection_market[sel]]
        stake = self.rng.choice([100, 500, 1000])
        stake = min(stake, market.stake_max)
        k = self.rng.randint(3, 12)
        available = self.observed_available(a)
        reqs = [{"type": "place", "id": self.new_key("req"), "idempotency_key": self.new_key("race"),
                 "selection_id": sel, "stake": money(stake), "odds": odds_text(market.selections[sel]),
                 "accept": "exact"} for _ in range(k)]
        kill_after = self.rng.uniform(0.0, 0.05) if kill else None
        replies = self.place(a, reqs, kill_after)
        placed = [(q, r) for q, r in zip(reqs, replies) if r["type"] == "placed"]
        refused = [(q, r) for q, r in zip(reqs, replies) if r["type"] != "placed"]
        expect(len(placed) == min(k, available // stake),
               f"race of {k} x {stake} on {a} with {available}: {len(placed)} placed; replies {replies}")
        for q, r in refused:
            expect(r["type"] == "rejected" and r["code"] == "insufficient_funds",
                   f"race: {q} -> {r}")
            m.placements[(a, q["idempotency_key"])] = (
                (sel, stake, market.selections[sel], "exact"), ("rejected", "insufficient_funds"))
        for q, r in placed:
            expect(odds_units(r["bet"]["odds"]) == market.selections[sel], f"race: {r}")
            self.record_placed(a, q, r)
            m.placements[(a, q["idempotency_key"])] = (
                (sel, stake, market.selections[sel], "exact"), ("placed", r["bet"]["bet_id"]))
        self.note(f"race{' + kill' if kill else ''} {a}: {k} x {money(stake)} on {sel} with "
                  f"{money(available)}: {len(placed)} placed")

    def op_catalog(self):
        """Odds change, suspend or resume on a market that has no result event yet."""
        m = self.model
        quiet = [mk for mk in m.markets.values() if not mk.sent]
        if not quiet:
            return self.op_market()
        mk = self.rng.choice(quiet)
        r = self.rng.random()
        if r < 0.5:
            sel = self.rng.choice(list(mk.selections))
            new = max(10100, mk.selections[sel] + self.rng.choice([-2500, -500, 500, 2500]))
            status, body = self.feed({"type": "odds", "market_id": mk.market_id,
                                      "selection_id": sel, "odds": odds_text(new)})
            expect(status == 200, f"odds: {status} {body}")
            mk.selections[sel] = new
            self.note(f"odds {mk.market_id}/{sel} -> {odds_text(new)}")
        else:
            kind = "suspend" if mk.status == "open" else "resume"
            status, body = self.feed({"type": kind, "market_id": mk.market_id})
            expect(status == 200, f"{kind}: {status} {body}")
            mk.status = "suspended" if kind == "suspend" else "open"
            self.note(f"{kind} {mk.market_id}")

    def window(self, mk):
        """A placement-time window over the market's bets: bounds at bets' own times (so the
        model and the engine compare the same instants), each bound sometimes open."""
        times = sorted({b.placed_at for b in mk.bets})
        if not times or self.rng.random() < 0.3:
            return {}
        w = {}
        i = self.rng.randrange(len(times))
        j = self.rng.randrange(i, len(times) + 1)
        if self.rng.random() < 0.7:
            w["start_time"] = time_text(times[i])
        if j < len(times) and self.rng.random() < 0.7:
            w["end_time"] = time_text(times[j] if times[j] > times[i] else times[i] + timedelta(microseconds=1))
        return w

    def make_event(self, mk):
        seq = mk.next_seq
        mk.next_seq += 1
        kinds = ["result"] * 4 + ["rollback_result", "cancel", "cancel", "rollback_cancel"]
        kind = self.rng.choice(kinds)
        ev = {"type": kind, "market_id": mk.market_id, "seq": seq,
              "event_key": f"m{mk.market_id}-s{seq}-{kind}"}
        if kind == "result":
            sels = list(mk.selections)
            outcomes = []
            for s in sels:
                if self.rng.random() < 0.2:
                    continue                                # not named: loses
                o = {"selection_id": s, "result": self.rng.choice(["win", "lose"])}
                if self.rng.random() < 0.3:
                    o["void_factor"] = factor_text(self.rng.choice([0, 2500, 5000, 10000, 3333]))
                if o["result"] == "win" and self.rng.random() < 0.3:
                    o["dead_heat_factor"] = factor_text(self.rng.choice([5000, 3333, 2500, 10000]))
                outcomes.append(o)
            if not outcomes:
                outcomes = [{"selection_id": sels[0], "result": "win"}]
            ev["outcomes"] = outcomes
        elif kind in ("cancel", "rollback_cancel"):
            ev.update(self.window(mk))
        return ev

    def send_event(self, ev, expect_duplicate=False):
        status, body = self.feed(ev)
        expect(status == 200 and body.get("type") == "ack" and body.get("duplicate") is expect_duplicate,
               f"feed {ev}: {status} {body}")

    def op_feed(self):
        m = self.model
        live = [mk for mk in m.markets.values() if mk.bets]
        if not live:
            return self.op_place()
        mk = self.rng.choice(live)
        r = self.rng.random()
        resendable = [q for q, ev in mk.sent.items() if ev["type"] != "void_open"]
        if resendable and r < 0.15:
            seq = self.rng.choice(resendable)
            self.send_event(mk.sent[seq], expect_duplicate=True)
            self.note(f"feed duplicate {mk.market_id} seq {seq}")
            return
        if r < 0.35:
            # Out of order: seq n+1 first (it waits: a gap), then n.
            first, second = self.make_event(mk), self.make_event(mk)
            self.send_event(second)
            mk.sent[second["seq"]] = second
            mk.status = "suspended" if second["type"] in ("result", "cancel") else mk.status
            self.check()                                   # the gap holds seq n+1 back
            self.send_event(first)
            mk.sent[first["seq"]] = first
            if first["type"] in ("result", "cancel"):
                mk.status = "suspended"
            self.note(f"feed out of order {mk.market_id}: {second} then {first}")
        else:
            ev = self.make_event(mk)
            if ev["type"] in ("result", "rollback_result", "cancel") and self.rng.random() < 0.5:
                self.spend_winnings(mk)
            self.send_event(ev)
            mk.sent[ev["seq"]] = ev
            if ev["type"] in ("result", "cancel"):
                mk.status = "suspended"
            self.note(f"feed {ev}")
        m.apply_ready_events(mk)
        if self.rng.random() < 0.25:
            # The engine dies while the market settles; the restarted one finishes the job.
            time.sleep(self.rng.uniform(0, 0.05))
            self.restart_after_kill()
            self.note("SIGKILL while settling, restarted")

    def op_void_overdue(self):
        """The operator's void of a market's open bets (POST /v1/markets/{id}/void-overdue):
        before the deadline it is refused unless forced; forced, it is an event in the market's
        seq that voids the open bets only; the same key again is a duplicate."""
        m = self.model
        live = [mk for mk in m.markets.values() if mk.bets]
        if not live:
            return self.op_place()
        mk = self.rng.choice(live)
        path = f"/v1/markets/{mk.market_id}/void-overdue"
        open_bets = [b for b in mk.bets if b.in_force is None]
        if not open_bets:
            status, body = self.post(path, {"force": True, "key": self.new_key("void")}, self.admin)
            expect(status == 409 and body.get("code") == "nothing_to_void",
                   f"void-overdue of {mk.market_id} without open bets: {status} {body}")
            self.note(f"void-overdue {mk.market_id}: nothing_to_void")
            return
        if self.rng.random() < 0.3:
            status, body = self.post(path, {}, self.admin)
            expect(status == 409 and body.get("code") == "not_overdue",
                   f"void-overdue of {mk.market_id} before its deadline: {status} {body}")
            self.note(f"void-overdue {mk.market_id}: not_overdue")
            return
        key = self.new_key("void")
        status, body = self.post(path, {"force": True, "key": key}, self.admin)
        expect(status == 200 and body.get("duplicate") is False and body.get("seq") == mk.next_seq,
               f"void-overdue of {mk.market_id} (next seq {mk.next_seq}): {status} {body}")
        ev = {"type": "void_open", "market_id": mk.market_id, "seq": mk.next_seq, "event_key": key}
        mk.sent[mk.next_seq] = ev
        mk.next_seq += 1
        mk.status = "suspended"
        m.apply_ready_events(mk)
        status, body = self.post(path, {"force": True, "key": key}, self.admin)
        expect(status == 200 and body.get("duplicate") is True and body.get("seq") == ev["seq"],
               f"void-overdue again with key {key}: {status} {body}")
        self.note(f"void-overdue {mk.market_id} seq {ev['seq']}: {len(open_bets)} open bets")

    def spend_winnings(self, mk):
        """Bettors holding paid-out bets on the market withdraw everything before the
        correction comes: reversing their payouts then needs the house's advance (debt)."""
        m = self.model
        for a in sorted({b.account for b in mk.bets if b.in_force and b.in_force[0] == "settle"
                         and b.in_force[1] > 0}):
            available = self.observed_available(a)
            if available > 0:
                key = self.new_key("spend")
                status, body = self.transfer("withdrawal", a, available, key)
                expect(status in (200, 201), f"withdrawal of all {available} of {a}: {status} {body}")
                m.withdrawals[(a, key)] = available
                m.net[a] -= available
                self.note(f"withdrawal {a} {money(available)} (all, before a correction)")

    def op_kill(self):
        self.restart_after_kill()
        self.note("SIGKILL, restarted")

    def op_bad_input(self):
        """Malformed requests: an error, nothing stored, nothing moved."""
        m = self.model
        a = self.rng.choice(list(m.net))
        req = {"type": "place", "id": self.new_key("req"), "idempotency_key": self.new_key("bad"),
               "selection_id": self.rng.choice(list(m.selection_market)),
               "stake": self.rng.choice(["-1.00", "1.001", "abc", 5]), "odds": "2.00"}
        reply = self.place(a, [req])[0]
        expect(reply["type"] == "error" and reply["code"] == "invalid_request", f"{req}: {reply}")
        status, body = self.transfer("withdrawal", a, 0, self.new_key("wd0"))
        expect(status == 400, f"withdrawal of 0: {status} {body}")
        self.note(f"bad input on {a}")

    # The loop --------------------------------------------------------------------------------

    OPS = [("deposit", 14), ("withdrawal", 7), ("place", 30), ("race", 5), ("race_kill", 2),
           ("catalog", 6), ("market", 3), ("feed", 18), ("kill", 2), ("bad_input", 2),
           ("account", 1), ("void_overdue", 2)]

    def run(self):
        self.start()
        try:
            for _ in range(3):
                self.op_account()
            for _ in range(2):
                self.op_market()
            for a in list(self.model.net):
                self.step += 1
                key = self.new_key("dep")
                status, body = self.transfer("deposit", a, 20000, key)
                expect(status in (200, 201), f"deposit: {status} {body}")
                self.model.deposits[(a, key)] = 20000
                self.model.net[a] += 20000
            names = [n for n, _ in self.OPS]
            weights = [w for _, w in self.OPS]
            for self.step in range(1, self.ops + 1):
                op = self.rng.choices(names, weights)[0]
                self.counts[op] = self.counts.get(op, 0) + 1
                if op == "race_kill":
                    self.op_race(kill=True)
                else:
                    getattr(self, "op_" + op)()
                self.check(audit=self.step % 10 == 0)
            # The end: every market gets a final result so every bet settles, then all checks.
            for mk in self.model.markets.values():
                if mk.bets:
                    ev = {"type": "result", "market_id": mk.market_id, "seq": mk.next_seq,
                          "event_key": f"m{mk.market_id}-final",
                          "outcomes": [{"selection_id": list(mk.selections)[0], "result": "win"}]}
                    mk.next_seq += 1
                    self.send_event(ev)
                    mk.sent[ev["seq"]] = ev
                    self.model.apply_ready_events(mk)
            self.check(audit=True)
        finally:
            self.stop()
        return {"seed": self.seed, "ops": self.ops, "kills": self.kills,
                "bets": len(self.model.bets), "events": sum(len(m.sent) for m in self.model.markets.values()),
                "counts": self.counts, "accounts_in_debt": len(self.debt_seen),
                "event_kinds": self.event_kinds()}

    def event_kinds(self):
        kinds = {}
        for mk in self.model.markets.values():
            for ev in mk.sent.values():
                kinds[ev["type"]] = kinds.get(ev["type"], 0) + 1
        return kinds


def replay_command(seed, ops):
    return f"scripts/soak --seed {seed} --ops {ops}"


def run_seed(seed, ops, log=print):
    """Runs one seed; returns its summary, or raises with the seed and the replay command."""
    run = Run(seed, ops, log)
    try:
        return run.run()
    except Exception as e:
        tail = "\n".join(run.history[-25:])
        raise AssertionError(
            f"seed {seed} failed at operation {run.step}: {e}\n"
            f"replay: {replay_command(seed, ops)}\nlast operations:\n{tail}") from e


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, action="append", help="a seed (repeatable)")
    p.add_argument("--seeds", type=int, help="seeds 1..N (or --first..--first+N-1)")
    p.add_argument("--first", type=int, default=1)
    p.add_argument("--ops", type=int, default=150)
    args = p.parse_args()
    seeds = args.seed or list(range(args.first, args.first + (args.seeds or 1)))
    failed = []
    total_ops = total_kills = 0
    for s in seeds:
        t0 = time.monotonic()
        try:
            summary = run_seed(s, args.ops)
            total_ops += summary["ops"]
            total_kills += summary["kills"]
            print(f"seed {s}: PASS  {summary['ops']} operations, {summary['bets']} bets, "
                  f"{summary['events']} feed events {json.dumps(summary['event_kinds'], sort_keys=True)}, "
                  f"{summary['kills']} SIGKILLs, {summary['accounts_in_debt']} accounts in debt at some check, "
                  f"{time.monotonic() - t0:.0f} s  {json.dumps(summary['counts'], sort_keys=True)}",
                  flush=True)
        except AssertionError as e:
            failed.append(s)
            print(f"seed {s}: FAIL\n{e}", flush=True)
        except Exception:
            failed.append(s)
            print(f"seed {s}: ERROR\n{traceback.format_exc()}\nreplay: {replay_command(s, args.ops)}",
                  flush=True)
    print(f"{len(seeds) - len(failed)} of {len(seeds)} seeds passed; {total_ops} operations, "
          f"{total_kills} SIGKILLs in the passing seeds"
          + (f"; failing seeds: {' '.join(map(str, failed))}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
