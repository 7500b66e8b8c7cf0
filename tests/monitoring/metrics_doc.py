"""Reads the metric reference, docs/metrics.md: one table row per metric family, whose first
cell is the name in backquotes and whose "when" column says when the engine exports it."""

import os
import re

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "metrics.md")
ROW = re.compile(r"^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|\s*(counter|gauge|histogram)\s*\|")
# Names PromQL may use that are no family of the engine: Prometheus' own, and the series a
# histogram family expands to.
PROMETHEUS_OWN = {"up", "scrape_duration_seconds"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def families(path=DOC):
    """Returns {name: (type, when)} for every row of the reference tables."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line)
            if not m:
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if m.group(1) in out:
                raise AssertionError(f"{m.group(1)} is listed twice in {path}")
            out[m.group(1)] = (m.group(2), cells[4])
    return out


def family_of(series, known):
    """The family a sample or PromQL name belongs to: `x_bucket` of histogram `x` is `x`."""
    if series in known:
        return series
    for suffix in HISTOGRAM_SUFFIXES:
        base = series[: -len(suffix)]
        if series.endswith(suffix) and known.get(base, ("",))[0] == "histogram":
            return base
    return series


def promql_metric_names(expr):
    """The metric names an expression reads: identifiers followed by `{` or standing alone,
    minus PromQL's functions, keywords and label names (those inside braces or by/without)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)   # no words from label values
    expr = re.sub(r"\{[^}]*\}", "{}", expr)             # nor label names in selectors
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)              # nor durations
    names = set()
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", expr):
        if m.group(2):  # a function call
            continue
        word = m.group(1)
        if word in {"and", "or", "unless", "bool", "offset", "le", "inf", "nan"}:
            continue
        names.add(word)
    return names
