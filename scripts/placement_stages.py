"""The engine's placement stages (fulltime_placement_stage_seconds{stage}) between two saved
scrapes of /metrics: per stage the count and the p50/p99 in ms (bucket upper bounds, so
coarse). Shared by scripts/bench-placement and scripts/bench-settlement, which put this
directory on PYTHONPATH."""

ORDER = ["parse", "handoff", "queue", "group", "database", "reply", "write", "total"]


def _buckets(path):
    out = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines:
        if not line.startswith("fulltime_placement_stage_seconds_bucket{"):
            continue
        labels, value = line[line.index("{") + 1:line.index("}")], float(line.rsplit(" ", 1)[1])
        kv = dict(x.split("=", 1) for x in labels.split(","))
        stage, le = kv["stage"].strip('"'), kv["le"].strip('"')
        out.setdefault(stage, []).append((float("inf") if le == "+Inf" else float(le), value))
    return out


def stages(before_path, after_path):
    """{stage: {"n", "p50_ms", "p99_ms"}} of the observations between the two scrapes."""
    a, b = _buckets(before_path), _buckets(after_path)
    result = {}
    for stage, buckets in b.items():
        before = dict(a.get(stage, []))
        cum = [(le, v - before.get(le, 0.0)) for le, v in sorted(buckets)]
        total = cum[-1][1] if cum else 0
        if total <= 0:
            continue

        def q(p):
            for le, v in cum:
                if v >= p * total:
                    return le * 1000
            return float("inf")
        result[stage] = {"n": int(total), "p50_ms": q(0.5), "p99_ms": q(0.99)}
    return result


def line(st):
    """"parse 0.01/0.1, handoff ..." in ORDER, or "n/a" when there were none."""
    parts = [f"{k} {st[k]['p50_ms']:g}/{st[k]['p99_ms']:g}" for k in ORDER if k in st]
    return ", ".join(parts) if parts else "n/a"
