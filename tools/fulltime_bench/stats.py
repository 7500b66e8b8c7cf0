"""Percentiles, medians and CPU accounting, as the benchmarks have always computed them. Two
percentile conventions are in use and kept apart, so that a figure means what it meant before
its script became a module:

- `percentile_of_range`: the value at index int(q * (n - 1)) of the sorted values (the placement
  and reads benchmarks, pgbench's open loops);
- `percentile_of_count`: the value at index int(q * n), capped at the last (the settlement
  benchmark's windows and its control)."""

import statistics


def percentile_of_range(sorted_values, q, empty=0.0):
    """The value at index int(q * (n - 1)) of already sorted values; `empty` when there are
    none."""
    if not sorted_values:
        return empty
    return sorted_values[min(len(sorted_values) - 1, int(q * (len(sorted_values) - 1)))]


def percentile_of_count(values, q):
    """The value at index int(q * n) of the sorted values (capped at the last); None when there
    are none."""
    xs = sorted(values)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def median(values):
    """The median (the mean of the middle two for an even count); None when there are none."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def lower_median(values):
    """The middle value, the lower of the middle two for an even count (the history
    benchmark's, in whole milliseconds)."""
    xs = sorted(values)
    return xs[(len(xs) + 1) // 2 - 1]


def cores_used(ticks, seconds, hz):
    """Clock ticks used over `seconds` of wall time, in cores."""
    return ticks / hz / seconds


def us_per_op(ticks, ops, hz):
    """Clock ticks per operation, in microseconds (0 when nothing was done)."""
    return ticks / hz * 1e6 / ops if ops else 0.0


def count_by(items):
    """{item: how many times it comes}, in the order each first came."""
    out = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out
