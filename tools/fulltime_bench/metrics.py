"""Reading scrapes of the engine's /metrics (Prometheus text format), as the benchmarks save
them: one series' value, every series of a counter, histograms and the placement stages
between two scrapes. Pure functions of the scrapes' text."""

import re

# fulltime_placement_stage_seconds{stage}, in the order a placement passes them.
STAGES = ["parse", "handoff", "queue", "group", "database", "reply", "write", "total"]


def series(text):
    """{series: value text} of a scrape, a series being the name with its labels as printed
    (e.g. 'fulltime_settlement_steps_total{status="batch"}'); the last line wins."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and not line.startswith("#"):
            out[fields[0]] = fields[1]
    return out


def value(text, name, labels=None):
    """One series' value as printed, or "?" when the scrape has none."""
    key = f"{name}{{{labels}}}" if labels else name
    return series(text).get(key, "?")


def values(text, *names):
    """The values of these series, in order, "?" for a missing one."""
    found = series(text)
    return [found.get(n, "?") for n in names]


def gauge(text, name):
    """An unlabelled series as a number, or None."""
    m = re.search("^" + re.escape(name) + r" (\S+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else None


def counter(text, name):
    """The sum of every series of a counter (0 when absent)."""
    return sum(float(m.group(1)) for m in re.finditer(
        "^" + re.escape(name) + r"(?:\{[^}]*\})? (\S+)$", text, re.MULTILINE))


def reads_by_route(text):
    """fulltime_reads_total by "target/route"."""
    return {f"{m[1]}/{m[2]}": float(m[3]) for m in re.finditer(
        r'^fulltime_reads_total\{target="(\w+)",route="(\w+)"\} (\S+)$', text, re.MULTILINE)}


def _labels(text):
    return dict((k, v.strip('"')) for k, v in (x.split("=", 1) for x in text.split(",")))


def buckets(text, name, key_label=None):
    """A histogram's buckets: [(upper bound, cumulative count)], or with `key_label`
    {that label's value: [(upper bound, count)]}. +Inf is float("inf")."""
    prefix = name + "_bucket{"
    out = {}
    for line in text.splitlines():
        if not line.startswith(prefix):
            continue
        labels = _labels(line[line.index("{") + 1:line.index("}")])
        le = labels["le"]
        bound = float("inf") if le == "+Inf" else float(le)
        key = labels.get(key_label) if key_label else None
        out.setdefault(key, []).append((bound, float(line.rsplit(" ", 1)[1])))
    return out if key_label else out.get(None, [])


def bucket_quantile(before, after, q):
    """The q-quantile, in ms (a bucket's upper bound, so coarse), of the observations between
    two snapshots of one histogram's buckets, and their count: (ms or None, n). None when there
    were none; inf when it is past the top bucket."""
    earlier = dict(before)
    cumulative = sorted((le, n - earlier.get(le, 0.0)) for le, n in after)
    total = cumulative[-1][1] if cumulative else 0
    if total <= 0:
        return None, 0
    for le, n in cumulative:
        if n >= q * total:
            return le * 1000, int(total)
    return None, int(total)


def stages(before, after):
    """{stage: {"n", "p50_ms", "p99_ms"}} of the engine's placement stages
    (fulltime_placement_stage_seconds) observed between two scrapes' texts."""
    a = buckets(before, "fulltime_placement_stage_seconds", "stage")
    b = buckets(after, "fulltime_placement_stage_seconds", "stage")
    result = {}
    for stage, now in b.items():
        p50, n = bucket_quantile(a.get(stage, []), now, 0.5)
        if n <= 0:
            continue
        p99, _ = bucket_quantile(a.get(stage, []), now, 0.99)
        result[stage] = {"n": n, "p50_ms": _inf(p50), "p99_ms": _inf(p99)}
    return result


def _inf(v):
    return float("inf") if v is None else v


def stages_line(st):
    """"parse 0.01/0.1, handoff ..." in STAGES' order, or "n/a" when there were none."""
    parts = [f"{k} {st[k]['p50_ms']:g}/{st[k]['p99_ms']:g}" for k in STAGES if k in st]
    return ", ".join(parts) if parts else "n/a"
