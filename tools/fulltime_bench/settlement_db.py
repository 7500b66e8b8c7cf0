"""The settlement benchmark's runs on the database alone (fulltime_bench.settlement): the seed,
the WAL run (1b), the single-transaction baseline (2) and the control (2b). Each leaves its
figures in run.f."""

import json
import time

from . import cluster, common, db, pgbench, wal_split
import money  # noqa: E402  (tests/e2e, which common puts on the path)

# The seed's fixed shape. Selection ids: market 1 has 11 (wins) and 12 (loses); the placement
# load uses 21 on market 2 and 31 on market 3.
SHARDS = 8
SEL_WIN, SEL_LOSE = 11, 12
PLACEMENT_CONNS = 8  # per market (two load generators)
RESULT = json.dumps({"outcomes": [{"selection_id": SEL_WIN, "win": True, "void_factor": 0,
                                   "dead_heat_factor": 10000}]}, separators=(",", ":"))


def elapsed(t0, t1=None):
    """Seconds between two times, as the logs print them ("%.3f")."""
    return f"{(t1 or time.time()) - t0:.3f}"


def wal_mark(url):
    """(LSN, bets placed on markets 2 and 3) of one database (the LSN is the cluster's)."""
    return tuple(db.row(url, "wal_mark"))


def wal_per_bet(run, mark0, mark1, before=None):
    """WAL bytes between two marks per settled bet; with a "before" pair of marks, less the
    placements' WAL. Returns (bytes per settled bet, placement bytes per placed bet, bets
    placed meanwhile) as text."""
    b0, b1 = before or ((None, None), (None, None))
    got = db.row(run.pg.url, "wal_per_bet", bets=run.a.bets, lsn0=mark0[0], lsn1=mark1[0],
                 n0=mark0[1], n1=mark1[1], before_lsn0=b0[0], before_lsn1=b1[0],
                 before_n0=b0[1], before_n1=b1[1])
    return tuple(str(x) for x in got)


def project_all(run, url, what):
    """The read model brought up to date on `url` (sql/project_all.sql); `what` on failure."""
    db.psql(url, "project_all", settings={"proj.rows": run.projector_rows}, what=what)


def record_result(url, what):
    """Stores market 1's result with the SQL function; ends the run when it is not."""
    found = db.row(url, "settlement_record_result", result=RESULT)
    if not found or found[0] != "stored":
        common.die(f"{what}: the result was not stored")


def settled(url):
    """Market 1's settlement rows: "rows settled-bets payout-mismatches other-markets"."""
    return " ".join(str(x) for x in db.row(url, "settlement_rows", sel_win=SEL_WIN))


def invariants(url):
    """The money invariants' violations on url, one line each (none when the books are right):
    the e2e tests' own SQL checks (tests/e2e/money.py), which hold no engine code."""
    return money.sql_violations(url)


def seed(run):
    a = run.a
    common.log(f"seeding {a.accounts} funded accounts and {a.bets} open bets on market 1")
    t0 = time.time()
    db.psql(run.url, "settlement_seed", what="seeding failed", variables=dict(
        accounts=a.accounts, bets=a.bets, shards=SHARDS, sel_win=SEL_WIN, sel_lose=SEL_LOSE))
    common.log(f"seeded in {elapsed(t0)} s")
    # The seed's outbox rows (one per open bet): the engine's push loop purges them once its
    # consumers have read them.
    run.f["seed_outbox_last"] = db.row(run.url, "outbox_last")[0]


def wal_run(run):
    """1b: a clone settles market 1 with fulltime_settle_step at the engine's batch size, back
    to back from one psql session, after a CHECKPOINT and with nothing else running on the
    cluster: the WAL between the two LSNs is settlement's alone (no subtraction), the figure
    to hold. Then the read model's share: the projector's pages that apply the settlement."""
    bets = run.a.bets
    common.log(f"WAL: settling a clone with batches of {run.batch} and nothing else running")
    url = run.clone("b0", vacuum="vacuum")
    record_result(url, "WAL run")
    # The read model catches up with the seed's placements first, so that what it does after
    # the settlement is the settlement's share alone.
    project_all(run, url, "WAL run: projecting the seed failed")
    db.checkpoint(url)
    wal0, t0 = wal_mark(url), time.time()
    db.psql(url, "settle_steps", settings={"wal.batch": run.batch},
            what="WAL run: settling failed")
    wal_s = elapsed(t0)
    wal1 = wal_mark(url)
    rows = settled(url)
    only = wal_per_bet(run, wal0, wal1)[0]
    size = db.row(run.pg.url, "wal_size", lsn0=wal0[0], lsn1=wal1[0])[0]
    common.log(f"WAL: settled in {wal_s} s, {only} bytes per settled bet ({size} for {bets} "
               f"bets; settlement rows, settled bets, payout mismatches, other markets: {rows})")
    if rows != f"{bets} {bets} 0 0":
        common.die(f"WAL run: market 1 was not settled as expected: {rows}")
    if run.a.wal_split:
        rc = wal_split.split(url, f"{run.pg.dir}/data", wal0[0], wal1[0], bets)
        if rc:
            raise SystemExit(rc)
    # The read model's share of a settlement: the projector's pages that apply it, which the
    # engine runs beside its steps (and the control beside its own, unless
    # --control-without-read-model).
    t0 = time.time()
    project_all(run, url, "WAL run: projecting the settlement failed")
    proj_s = elapsed(t0)
    proj_b = wal_per_bet(run, wal1, wal_mark(url))[0]
    proj_us = f"{float(proj_s) * 1e6 / bets:.1f}"
    common.log(f"read model: projected the settlement in {proj_s} s ({proj_us} us and {proj_b} "
               "WAL bytes per settled bet)")
    run.drop("b0")
    run.f.update(wal_only_b=only, wal_s=wal_s, proj_b=proj_b, proj_us=proj_us, proj_s=proj_s)


def baseline_step(url):
    """One fulltime_settle_step with a batch larger than the market, timed by psql: (status,
    its bets, ms)."""
    out = db.psql(url, "settlement_baseline_step", tuples=True, separator=" ",
                  what="baseline: the step failed").splitlines()
    row = next((line for line in out if not line.startswith("Tim")), "")
    ms = next((line.split()[1] for line in out if line.startswith("Time: ")), "")
    fields = row.split(" ")
    return fields[0], (fields[1] if len(fields) > 1 else ""), ms


def baseline(run):
    """2: one transaction settles the whole market."""
    common.log("baseline: cloning the seeded database")
    url = run.clone("b1")
    record_result(url, "baseline")
    common.log(f"baseline: settling {run.a.bets} bets in one transaction")
    wal0 = wal_mark(url)
    ms, batch_bets, steps, status = None, None, "", None
    for _ in range(50):
        status, bets, took = baseline_step(url)
        steps += " " + status
        if status == "batch":
            if ms is not None:
                common.die("baseline: a second batch; the market should fit in one")
            ms, batch_bets = took, bets
        elif status == "finished":
            break
        elif status not in ("started", "fenced"):
            common.die(f"baseline: unexpected step status '{status}'")
    if ms is None or status != "finished":
        common.die(f"baseline did not finish: steps{steps}")
    run.f.update(baseline_ms=ms, base_wal_b=wal_per_bet(run, wal0, wal_mark(url))[0],
                 baseline_inv=invariants(url), baseline_settled=settled(url))
    run.drop("b1")
    common.log(f"baseline: {batch_bets} bets in {ms} ms (steps:{steps})")


# --- 2b. The control: the engine's batches without the engine ---------------------------------
# A second clone settles market 1 with the same steps the engine runs (fulltime_settle_step with
# the same batch size, one transaction each, back to back from one psql session per lane) while
# pgbench places on markets 2 and 3 at the same open-loop rate, with the same accounts and
# connections as the engine's load. Its p99 before and during settlement is the database's own
# answer to "what does settling at this speed cost a placement", with no engine in between.

def control_duration_s(run):
    """How long the control's pgbench runs: its "before" window and room for the settlement (4
    times the baseline's, stretched by the duty and by --control-rate, plus 15 s)."""
    a = run.a
    duty = float(a.duty_percent or 100)
    s = float(run.f["baseline_ms"]) / 1000 * 4 * 100 / duty
    rate = float(a.control_rate)
    if rate > 0 and a.bets / rate * 1.5 > s:
        s = a.bets / rate * 1.5
    return a.before_s + int(s + 15)


def start_control_projector(run, url):
    """The read model's projector beside the control (sql/control_projector.sql): from the
    start when the engine runs one, so that the two "before" windows do the same work; beside
    the steps or yielding to them as the engine's does."""
    rest = (run.projector_ms if run.projector_ms > 0 else 50) / 1000
    return db.psql_background(url, "control_projector", run.work("ctl-project.out"), settings={
        "proj.rows": run.projector_rows, "proj.rest": f"{rest:.3f}",
        "proj.through": run.control_read_model, "proj.yield": f"{run.yield_ms / 1000:.3f}"})


def control_steps(run, url, lane, out_name):
    """Starts the market's steps (lane -1) or one lane's batches, paced as the engine paces,
    their output in OUT_NAME; returns the psql process."""
    a = run.a
    return db.psql_background(url, "control_steps", run.work(out_name), settings={
        "ctl.batch": run.batch, "ctl.duty": a.duty_percent or 100, "ctl.rate": a.control_rate,
        "ctl.lanes": run.lanes, "ctl.lane": lane})


def read(path):
    with open(path) as f:
        return f.read()


def settle_in_lanes(run, url):
    """The control's settlement: the market's steps, which start the event in the engine's
    lanes; then every lane's batches at once; then the market's steps again to finish it."""
    out = run.work("ctl-settle.out")
    if control_steps(run, url, -1, "ctl-settle.out").wait():
        common.die(f"control: settling failed: {read(out)}")
    if "last lanes" in read(out):
        lanes = [control_steps(run, url, lane, f"ctl-lane-{lane}.out")
                 for lane in range(run.lanes)]
        for lane, p in enumerate(lanes):
            if p.wait():
                common.die(f"control: lane {lane} failed: "
                           f"{read(run.work(f'ctl-lane-{lane}.out'))}")
            with open(out, "a") as f:
                f.write(read(run.work(f"ctl-lane-{lane}.out")))
        if control_steps(run, url, -1, "ctl-finish.out").wait():
            common.die(f"control: finishing failed: {read(run.work('ctl-finish.out'))}")
        with open(out, "a") as f:
            f.write(read(run.work("ctl-finish.out")))
    if "last finished" not in read(out):
        common.die(f"control: not finished: {read(out)}")


def control_setup(run):
    """The control's clone, its read model caught up with the seed when it will project, and
    its placement function."""
    common.log("control: cloning the seeded database")
    url = run.clone("b2")
    if run.control_read_model == "1" or run.projector_ms > 0:
        # The read model caught up with the seed first, as the engine's is before its window.
        project_all(run, url, "control: projecting the seed failed")
        db.checkpoint(url)
    db.psql(url, "control_place_function", what="control: creating ctl_place failed")
    return url


def control(run):
    a = run.a
    url = control_setup(run)
    projects = run.control_read_model == "1" or run.projector_ms > 0
    total_s = control_duration_s(run)
    projector = start_control_projector(run, url) if projects else None
    common.log(f"control: pgbench placements at {a.placement_rate}/s for {total_s}s; settling "
               f"after {a.before_s}s")
    load = pgbench.start(pgbench.command(url, db.path("control_place.pgbench"),
                                         2 * PLACEMENT_CONNS, total_s, rate=a.placement_rate,
                                         log=True),
                         run.work("ctl-log"), run.work("ctl-pgbench.out"))
    wal0 = wal_mark(url)
    time.sleep(a.before_s)
    record_result(url, "control")
    wal1 = wal_mark(url)
    # pgbench's own CPU beside the machine's, over the control's settlement: the rest of the
    # machine's busy time is PostgreSQL's (the lanes' psql clients wait on their statements).
    cpu0 = (cluster.machine_ticks(), cluster.pids_ticks([load.pid]))
    t0 = time.time()
    settle_in_lanes(run, url)
    if projector and projector.wait():
        common.die(f"control: projecting failed: {read(run.work('ctl-project.out'))}")
    t1 = time.time()
    cpu1 = (cluster.machine_ticks(), cluster.pids_ticks([load.pid]))
    wal = wal_per_bet(run, wal1, wal_mark(url), (wal0, wal1))
    if load.wait():
        common.die(f"control: pgbench failed: {read(run.work('ctl-pgbench.out'))}")
    run.f.update(ctl_t0=t0, ctl_t1=t1, ctl_cpu=(cpu0, cpu1), ctl_wal=wal,
                 ctl_settled=settled(url), ctl_rows=pgbench.transactions(run.work("ctl-log")))
    run.drop("b2")
    common.log(f"control: settled in {elapsed(t0, t1)} s "
               f"({read(run.work('ctl-settle.out')).replace(chr(10), ' ')})")
