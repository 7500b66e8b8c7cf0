"""The gateway's own CPU floor: place requests the session refuses (an invalid stake), so no
database work, at a steady rate over 32 connections; prints the engine's CPU per request.
It is the least a placement can cost the engine over the same path (docs/benchmarks.md)."""

import json

from . import cluster, common, db, engine


def parse_args(argv=None):
    p = common.Parser("scripts/bench-gateway-floor", __doc__)
    p.add_argument("--rate", default="1500", help="requests/s")
    p.add_argument("--duration-s", default="8", help="seconds")
    return p.parse_args(argv)


def measure(a, work):
    """Runs the load against a fresh engine; returns (its figures, the engine's CPU s)."""
    pg = server = None
    try:
        pg = cluster.Cluster(durable=True)
        # The engine's role may not create tables in the cluster's `postgres` database
        # (PostgreSQL 15): it gets a database of its own, as docs/operations.md sets one up.
        db.psql(pg.admin_url, "create_database_for", variables={"name": "bench",
                                                               "owner": "fulltime"},
                what="could not create the database")
        env = engine.environment(work("state"), {"FULLTIME_DATABASE_URL": pg.url_of("bench"),
                                                 "FULLTIME_LOG_LEVEL": "info"})
        engine.migrate(env, work("migrate.log"))
        server = engine.Server(env, work("engine.log"))
        before = cluster.process_ticks(server.pid)
        # A stake of 0.001 has three decimals: refused as invalid_request before any actor.
        engine.load_generator(server.port, [
            "--connections", "32", "--accounts", "1000", "--selection", "1", "--stake", "0.001",
            "--odds", "2.00", "--duration-s", a.duration_s, "--rate", a.rate,
            "--key-prefix", "floor"], work("out.json"), work("err"), env).wait()
        after = cluster.process_ticks(server.pid)
        with open(work("out.json")) as f:
            return json.load(f), (after - before) / common.CLK_TCK
    finally:
        if server:
            server.stop()
        if pg:
            pg.stop()


def main(argv=None):
    common.line_buffered()
    a = parse_args(argv)
    common.build()
    work = common.WorkDir("fulltime-floor.")
    try:
        d, cpu = measure(a, work)
    finally:
        work.remove()
    n = d["replies_total"]
    print(f"gateway floor at {a.rate}/s: {n} replies, engine CPU {cpu:.2f} s, "
          f"{cpu / n * 1e6:.1f} us/request; outcomes {json.dumps(d['outcomes'])}; "
          f"p50 {d['latency_ms']['p50']:.2f} ms, p99 {d['latency_ms']['p99']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
