"""The reads benchmark's client and measurements (fulltime_bench.reads): the setup (markets,
funded accounts, their bets over WebSocket, a result settling half), one measured run of
history reads against a running engine, one measured run of `fulltime bench-placement`. Each
run writes WORK/NAME.json and returns its figures."""

import asyncio
import collections
import json
import random
import resource
import subprocess
import sys
import time
import urllib.error
import urllib.request

import psycopg
import websockets.client

from . import cluster, common, db, metrics, stats

DEADLINE_S = 30
PAGE_LIMIT = 50
# After a page with more bets behind it, the share of requests that ask for the next page.
PAGE_SHARE = 0.5
# pg_stat_database gets a backend's counts within a second of its going idle (PostgreSQL 15).
STATS_FLUSH_S = 1.5
# Seconds of an idle engine measured before each run of reads.
IDLE_S = 3.0
SETUP_WINDOW = 4        # placements in flight per account during the setup
SETUP_SESSIONS = 32     # accounts placing at once during the setup
FUNDS = "1000000.00"
# Bet j of an account goes on SELECTIONS[j % 4]: half on market 100 (settled: 1001 wins, 1002
# loses), half on market 200 (left open; the placement runs of part 2 bet there).
SELECTIONS = ((1001, "2.50"), (2001, "2.00"), (1002, "3.10"), (2002, "1.80"))
MARKETS = [
    {"type": "market", "market_id": 100, "event_id": 10, "event_name": "bench final",
     "name": "settled", "status": "open", "stake_min": "0.10", "stake_max": "1000.00",
     "liability_limit": "100000000.00", "exposure_shards": 8,
     "selections": [{"selection_id": 1001, "name": "Home", "odds": "2.50"},
                    {"selection_id": 1002, "name": "Away", "odds": "3.10"}]},
    {"type": "market", "market_id": 200, "event_id": 20, "event_name": "bench other",
     "name": "open", "status": "open", "stake_min": "0.10", "stake_max": "1000.00",
     "liability_limit": "100000000.00", "exposure_shards": 8,
     "selections": [{"selection_id": 2001, "name": "Home", "odds": "2.00"},
                    {"selection_id": 2002, "name": "Away", "odds": "1.80"}]},
]
RESULT = {"type": "result", "market_id": 100, "seq": 1, "event_key": "bench-final-r1",
          "outcomes": [{"selection_id": 1001, "result": "win"},
                       {"selection_id": 1002, "result": "lose"}]}
STATS_NAMES = ("blks_hit", "blks_read", "tup_returned", "tup_fetched", "xact_commit",
               "xact_rollback")
PLACEMENT_COUNTERS = ("fulltime_placement_lock_timeouts_total", "fulltime_placement_retries_total",
                      "fulltime_placement_busy_total")


class Context:
    """What every part needs: the options, the work directory, the binary and its
    environment, the primary's and the standby's URLs and data directories, and the port of
    the engine running now."""

    def __init__(self, a, work, binary, env, db_url, standby):
        self.a, self.work, self.binary, self.env = a, work, binary, env
        self.db, self.standby_db = db_url, standby["url"]
        self.standby_name = standby["name"]
        self.primary_data, self.standby_data = standby["primary_data"], standby["data"]
        self.port = 0


def fail(message):
    common.die(message)


def http(c, method, path, body=None, token=None):
    """Returns (status, body text) of one request to the engine."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{c.port}{path}", data=data, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def must(answer, statuses, what):
    status, text = answer
    if status not in statuses:
        fail(f"{what}: HTTP {status}: {text}")


def cli_token(c, *args):
    p = subprocess.run([c.binary, "token", *args], env=c.env, capture_output=True, text=True)
    if p.returncode:
        fail(f"fulltime token {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout.strip()


def wait(probe, what, timeout_s):
    until = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > until:
            fail(f"{what} (waited {timeout_s} s)")
        time.sleep(0.1)


def ws_connect(c, token):
    # No permessage-deflate: the engine does not offer it, and a client that asks for it only
    # adds a header.
    return websockets.client.connect(f"ws://127.0.0.1:{c.port}/v1/bets?token={token}",
                                     compression=None, max_size=2 ** 24, ping_interval=None)


def scrape(c):
    with urllib.request.urlopen(f"http://127.0.0.1:{c.port}/metrics", timeout=10) as r:
        return r.read().decode()


# --- CPU from /proc ---------------------------------------------------------------------------

def cpu_sample(c, engine_pid):
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"t": time.monotonic(), "primary": cluster.data_dir_ticks(c.primary_data),
            "standby": cluster.data_dir_ticks(c.standby_data),
            "engine": cluster.process_ticks(engine_pid), "machine": cluster.machine_ticks(),
            "client": me.ru_utime + me.ru_stime,
            "children": children.ru_utime + children.ru_stime}


def cpu_delta(a, b):
    """Seconds of CPU between two samples; "client" is this process (the reads' client) and
    its ended children (bench-placement), "rest" what the machine used besides: other
    processes, and interrupt work charged to none (the loopback's)."""
    d = {k: (b[k] - a[k]) / common.CLK_TCK for k in ("primary", "standby", "engine", "machine")}
    d["client"] = (b["client"] - a["client"]) + (b["children"] - a["children"])
    d["rest"] = d["machine"] - d["primary"] - d["standby"] - d["engine"] - d["client"]
    d["wall"] = b["t"] - a["t"]
    return d


def cores(cpu, *who):
    """{"<who>_cores": the cores each of `who` used on average} of a cpu_delta."""
    return {f"{w}_cores": cpu[w] / cpu["wall"] for w in who}


def db_stats(conn):
    return dict(zip(STATS_NAMES, db.execute(conn, "reads_db_stats")[0]))


def wal_position(conn):
    return int(db.execute(conn, "wal_position")[0][0])


def stats_delta(a, b):
    d = {k: b[k] - a[k] for k in STATS_NAMES}
    d["blks"] = d["blks_hit"] + d["blks_read"]
    return d


def projector_updates(conn):
    """Row updates of the projector's horizon row and cursor row so far."""
    return int(db.execute(conn, "reads_projector_updates")[0][0])


def write(c, name, figures):
    with open(c.work(f"{name}.json"), "w") as f:
        json.dump(figures, f)


# --- setup ------------------------------------------------------------------------------------

async def place_setup_bets(c, tokens):
    gate = asyncio.Semaphore(SETUP_SESSIONS)
    outcomes = collections.Counter()
    bets = c.a.bets_per_account

    async def one(account):
        async with gate, ws_connect(c, tokens[account]) as ws:
            sent = done = 0

            async def send_next():
                nonlocal sent
                selection, odds = SELECTIONS[sent % len(SELECTIONS)]
                await ws.send(json.dumps({
                    "type": "place", "id": str(sent), "idempotency_key": f"seed-{account}-{sent}",
                    "selection_id": selection, "stake": "1.00", "odds": odds, "accept": "any"}))
                sent += 1

            while sent < min(SETUP_WINDOW, bets):
                await send_next()
            while done < bets:
                reply = json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))
                if "id" not in reply:
                    continue  # a push
                done += 1
                outcomes[reply.get("type", "?") + (" " + reply["code"] if "code" in reply else "")] += 1
                if sent < bets:
                    await send_next()

    await asyncio.gather(*(one(a) for a in tokens))
    return outcomes


def open_accounts(c):
    """The markets over the feed, the accounts opened and funded over the operator API;
    returns {account: its token}."""
    producer, admin = cli_token(c, "producer", "feed-1"), cli_token(c, "admin", "bench")
    for market in MARKETS:
        must(http(c, "POST", "/v1/feed", market, producer), (200,),
             f"market {market['market_id']}")
    tokens = {}
    for a in range(1, c.a.accounts + 1):
        must(http(c, "POST", "/v1/accounts", {"account_id": a, "currency": "EUR"}, admin),
             (200, 201), f"account {a}")
        must(http(c, "POST", f"/v1/accounts/{a}/deposits", {"amount": FUNDS, "key": f"seed-{a}"},
                  admin), (200, 201), f"deposit {a}")
        tokens[a] = cli_token(c, "account", str(a))
    with open(c.work("tokens.json"), "w") as f:
        json.dump(tokens, f)
    return producer, tokens


def setup(c):
    """Markets, funded accounts, their bets over WebSocket (32 accounts at a time, 4 in flight
    each), a result settling market 100; returns once the settlement is applied and the
    projector has caught up."""
    accounts, bets = c.a.accounts, c.a.bets_per_account
    producer, tokens = open_accounts(c)
    t0 = time.monotonic()
    outcomes = asyncio.run(place_setup_bets(c, tokens))
    place_s = time.monotonic() - t0
    if dict(outcomes) != {"placed": accounts * bets}:
        fail(f"the setup's placements: {dict(outcomes)}")
    t0 = time.monotonic()
    must(http(c, "POST", "/v1/feed", RESULT, producer), (200,), "the result")
    settled = accounts * sum(1 for j in range(bets) if SELECTIONS[j % len(SELECTIONS)][0] < 2000)
    wait(lambda: db.rows(c.db, "reads_result_applied"), "market 100's result never applied", 120)
    wait(lambda: db.row(c.db, "reads_settled_views")[0] == settled,
         f"bet_views never showed {settled} settled bets", 120)
    wait(lambda: db.rows(c.db, "projector_caught_up"), "the projector never caught up", 120)
    settle_s = time.monotonic() - t0
    counts = db.row(c.db, "reads_setup_counts")
    r = {"bets": counts[0], "bet_settlements": counts[1], "bet_views": counts[2],
         "settled": counts[3], "won": counts[4], "place_s": round(place_s, 1),
         "placements_per_s": round(accounts * bets / place_s), "settle_s": round(settle_s, 1)}
    if r["bets"] != accounts * bets or r["bet_views"] != accounts * bets or r["settled"] != settled:
        fail(f"the setup's data: {r}")
    write(c, "setup", r)
    print(f"setup: {r['bets']} bets placed in {place_s:.1f} s ({r['placements_per_s']}/s), "
          f"{r['settled']} settled and projected {settle_s:.1f} s after the result",
          file=sys.stderr)
    return r


# --- part 1: reads ----------------------------------------------------------------------------

class Bettor:
    """One bettor's session: its page walk goes on across the warm-up and the measured run."""

    def __init__(self, ws, account):
        self.ws, self.account = ws, account
        self.rng = random.Random(account)
        self.before = None
        self.n = 0


class Record:
    def __init__(self):
        self.latencies_ms = []
        self.errors = collections.Counter()
        self.bets = 0
        self.paged = 0


async def closed_loop(bettors, total, record):
    """Each bettor sends one `bets` request at a time until `total` were sent in all."""
    left = [total]

    async def run(b):
        while left[0] > 0:
            left[0] -= 1
            b.n += 1
            rid = str(b.n)
            request = {"type": "bets", "id": rid, "status": "all", "limit": PAGE_LIMIT}
            if b.before is not None:
                request["before"] = b.before
            t0 = time.perf_counter()
            await b.ws.send(json.dumps(request))
            while True:
                reply = json.loads(await asyncio.wait_for(b.ws.recv(), DEADLINE_S))
                if reply.get("id") == rid:
                    break
            ms = (time.perf_counter() - t0) * 1000
            ok = reply.get("type") == "bets"
            if record is not None:
                record.latencies_ms.append(ms)
                if ok:
                    record.bets += len(reply["bets"])
                    record.paged += "before" in request
                else:
                    record.errors[reply.get("code", reply.get("type", "?"))] += 1
            after = reply.get("next_before") if ok else None
            b.before = after if after is not None and b.rng.random() < PAGE_SHARE else None

    await asyncio.gather(*(run(b) for b in bettors))


def standby_fresh(text):
    staleness = metrics.gauge(text, "fulltime_standby_staleness_seconds")
    return metrics.gauge(text, "fulltime_standby_up") == 1.0 and staleness is not None \
        and 0 <= staleness < 1.0


async def read_run(c, tokens, engine_pid, primary, standby):
    """The sessions open, the warm-up, CHECKPOINT, IDLE_S with the sessions open and no reads
    (what the engine costs the primary by itself: its projector and its sampler), then the
    measured reads."""
    warmup = min(2000, max(c.a.connections * 10, c.a.reads // 10))
    bettors = []
    try:
        for a in range(1, c.a.connections + 1):
            bettors.append(Bettor(await ws_connect(c, tokens[str(a)]), a))
        await closed_loop(bettors, warmup, None)
        db.execute(primary, "checkpoint")
        await asyncio.sleep(STATS_FLUSH_S)
        idle0 = cpu_sample(c, engine_pid), db_stats(primary), wal_position(primary), \
            projector_updates(primary)
        await asyncio.sleep(IDLE_S)
        routes0 = metrics.reads_by_route(scrape(c))
        stats0 = db_stats(primary), db_stats(standby), wal_position(primary)
        cpu0 = cpu_sample(c, engine_pid)
        idle1 = cpu0, stats0[0], stats0[2], projector_updates(primary)
        record = Record()
        await closed_loop(bettors, c.a.reads, record)
        cpu1 = cpu_sample(c, engine_pid)
        routes1 = metrics.reads_by_route(scrape(c))
        await asyncio.sleep(STATS_FLUSH_S)
        stats1 = db_stats(primary), db_stats(standby), wal_position(primary)
    finally:
        for b in bettors:
            await b.ws.close()
    return warmup, record, cpu_delta(cpu0, cpu1), routes0, routes1, stats0, stats1, \
        idle_figures(idle0, idle1)


def idle_figures(idle0, idle1):
    """What the engine costs the primary and the standby while it serves no read."""
    cpu = cpu_delta(idle0[0], idle1[0])
    wall = cpu["wall"]
    return {"primary_idle_cores": cpu["primary"] / wall,
            "standby_idle_cores": cpu["standby"] / wall,
            "engine_idle_cores": cpu["engine"] / wall,
            "primary_idle_commits_per_s": (idle1[1]["xact_commit"] - idle0[1]["xact_commit"]) / wall,
            "primary_idle_wal_bytes_per_s": (idle1[2] - idle0[2]) / wall,
            "projector_idle_row_updates_per_s": (idle1[3] - idle0[3]) / wall}


def read_figures(cfg, warmup, rec, cpu, routes, p, s, wal, idle):
    lat = sorted(rec.latencies_ms)
    n = len(lat)
    on_standby = sum(v for k, v in routes.items() if k.startswith("standby/"))

    def per_k(seconds):  # CPU seconds -> ms per 1000 reads
        return seconds * 1e6 / n

    pick = stats.percentile_of_range
    r = {"config": cfg, "reads": n, "warmup_reads": warmup, "wall_s": round(cpu["wall"], 3),
         "reads_per_s": n / cpu["wall"], "latency_ms_p50": pick(lat, 0.50),
         "latency_ms_p99": pick(lat, 0.99), "latency_ms_max": lat[-1] if lat else 0.0,
         "errors": dict(rec.errors), "bets_per_read": rec.bets / n, "paged_share": rec.paged / n,
         "primary_cpu_ms_per_1000_reads": per_k(cpu["primary"]),
         "standby_cpu_ms_per_1000_reads": per_k(cpu["standby"]),
         "engine_cpu_ms_per_1000_reads": per_k(cpu["engine"]),
         "client_cpu_ms_per_1000_reads": per_k(cpu["client"]),
         **cores(cpu, "primary", "standby", "engine", "client", "rest", "machine"),
         "primary_blocks_per_read": p["blks"] / n, "primary_blocks_read_per_read": p["blks_read"] / n,
         "primary_tuples_returned_per_read": p["tup_returned"] / n,
         "primary_tuples_fetched_per_read": p["tup_fetched"] / n,
         "primary_commits_per_read": p["xact_commit"] / n, "primary_rollbacks": p["xact_rollback"],
         "standby_blocks_per_read": s["blks"] / n,
         "standby_tuples_returned_per_read": s["tup_returned"] / n,
         "primary_wal_bytes": wal, "primary_wal_bytes_per_s": wal / (cpu["wall"] + STATS_FLUSH_S),
         "routes": routes, "standby_share": on_standby / max(1, sum(routes.values())),
         **idle}
    # The primary's CPU for the reads alone: less what the engine costs it idle.
    r["primary_net_cpu_ms_per_1000_reads"] = per_k(
        max(0.0, cpu["primary"] - idle["primary_idle_cores"] * cpu["wall"]))
    return r


def reads(c, name, cfg, engine_pid):
    """One measured run of history reads against the running engine."""
    with open(c.work("tokens.json")) as f:
        tokens = json.load(f)
    if cfg == "c":
        # Until the engine's sampler dates the standby, every read goes to the primary (stale).
        wait(lambda: standby_fresh(scrape(c)), "the engine never dated its standby fresh", 60)
    with psycopg.connect(c.db, autocommit=True) as primary, \
            psycopg.connect(c.standby_db, autocommit=True) as standby:
        warmup, rec, cpu, routes0, routes1, stats0, stats1, idle = asyncio.run(
            read_run(c, tokens, engine_pid, primary, standby))
    routes = {k: int(routes1.get(k, 0) - routes0.get(k, 0)) for k in routes1}
    routes = {k: v for k, v in routes.items() if v}
    r = read_figures(cfg, warmup, rec, cpu, routes, stats_delta(stats0[0], stats1[0]),
                     stats_delta(stats0[1], stats1[1]), stats1[2] - stats0[2], idle)
    write(c, name, r)
    print(f"{name}: {r['reads_per_s']:.0f} reads/s, p50 {r['latency_ms_p50']:.2f} ms, "
          f"p99 {r['latency_ms_p99']:.2f} ms, primary {r['primary_cpu_ms_per_1000_reads']:.0f} "
          f"CPU ms/1000 reads, standby share {r['standby_share']:.3f}, routes {routes}",
          file=sys.stderr)
    return r


# --- part 2: placements -----------------------------------------------------------------------

def place_run(c, name, engine_pid):
    """`fulltime bench-placement` in a closed loop, with the primary's counts, WAL, CPU and
    the engine's placement counters around it; returns (its process, figures around it)."""
    a = c.a
    args = [c.binary, "bench-placement", "--port", str(c.port),
            "--connections", str(a.place_connections), "--inflight", str(a.place_inflight),
            "--accounts", str(a.accounts), "--first-account", "1",
            "--selections", "2001:1,2002:1", "--stakes", "1.00:1", "--odds", "2.00",
            "--repeat-ratio", "0", "--duration-s", a.place_duration_s,
            "--warmup-s", "1", "--key-prefix", name]
    with psycopg.connect(c.db, autocommit=True) as primary:
        sync = db.execute(primary, "reads_sync_state", name=c.standby_name)
        db.execute(primary, "checkpoint")
        time.sleep(STATS_FLUSH_S)
        stats0, wal0 = db_stats(primary), wal_position(primary)
        metrics0 = scrape(c)
        cpu0 = cpu_sample(c, engine_pid)
        p = subprocess.run(args, env=c.env, capture_output=True, text=True)
        cpu1 = cpu_sample(c, engine_pid)
        metrics1 = scrape(c)
        time.sleep(STATS_FLUSH_S)
        stats1, wal1 = db_stats(primary), wal_position(primary)
    around = dict(sync=sync[0][0] if sync else None, cpu=cpu_delta(cpu0, cpu1),
                  st=stats_delta(stats0, stats1), wal=wal1 - wal0, metrics=(metrics0, metrics1))
    return p, around


def place(c, name, cfg, engine_pid):
    """One measured run of `fulltime bench-placement` against the running engine."""
    p, x = place_run(c, name, engine_pid)
    try:
        g = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        fail(f"bench-placement ({name}) printed no figures (status {p.returncode}): {p.stderr}")
    cpu, st, (metrics0, metrics1) = x["cpu"], x["st"], x["metrics"]
    n = max(1, g["replies_total"])

    def per(seconds):  # CPU seconds -> us per placement
        return seconds * 1e6 / n

    r = {"config": cfg, "sync_state": x["sync"], "status": p.returncode,
         "placements_per_s": g["replies_per_s"], "latency_ms_p50": g["latency_ms"]["p50"],
         "latency_ms_p99": g["latency_ms"]["p99"], "latency_ms_p999": g["latency_ms"]["p999"],
         "replies_total": g["replies_total"], "errors": g["errors"], "outcomes": g["outcomes"],
         "primary_cpu_us_per_placement": per(cpu["primary"]),
         "standby_cpu_us_per_placement": per(cpu["standby"]),
         "engine_cpu_us_per_placement": per(cpu["engine"]),
         "generator_cpu_us_per_placement": per(cpu["client"]),
         **cores(cpu, "primary", "standby", "engine", "rest"),
         "primary_commits_per_placement": st["xact_commit"] / n,
         "primary_rollbacks": st["xact_rollback"],
         **{k[len("fulltime_placement_"):]: metrics.counter(metrics1, k) - metrics.counter(metrics0, k)
            for k in PLACEMENT_COUNTERS},
         "primary_wal_bytes_per_placement": x["wal"] / n}
    write(c, name, r)
    print(f"{name}: {r['placements_per_s']:.0f} placements/s, p50 {r['latency_ms_p50']:.2f} ms, "
          f"p99 {r['latency_ms_p99']:.2f} ms, {r['primary_commits_per_placement']:.3f} commits "
          f"per placement, {r['primary_rollbacks']} rollbacks, {r['lock_timeouts_total']:.0f} lock "
          f"timeouts, {r['retries_total']:.0f} retries, standby {r['sync_state']}",
          file=sys.stderr)
    return r
