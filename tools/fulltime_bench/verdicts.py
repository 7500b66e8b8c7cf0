"""Every performance target of the benchmarks, each a pure function of the measured figures
that returns a Verdict: met or not, the figure judged and the target it was judged against.
docs/benchmarks.md says where each target comes from."""

import collections

from . import stats

Verdict = collections.namedtuple("Verdict", "met value target")
Verdict.__doc__ = """`met`: whether the target is met; `value`: the figure judged (a ratio, a
latency, bytes); `target`: the bound it was held to."""


def at_least(value, target):
    return Verdict(value >= target, value, target)


def at_most(value, target):
    return Verdict(value <= target, value, target)


def word(verdict, met="met", not_met="NOT met"):
    """How a report says it ("met" / "NOT met" by default)."""
    return met if verdict.met else not_met


# --- placement (scripts/bench-placement) ----------------------------------------------------

# The engine's closed loop against the pgbench ceiling (one transaction per bet calling
# fulltime_place), at least this many times.
ENGINE_OVER_CEILING_MIN = 3.0
# The engine's own CPU per placement, microseconds, at most.
ENGINE_US_PER_PLACEMENT_MAX = 40
# The engine's p99 against the hand-written one-statement placement at the same fixed rate.
ONE_STATEMENT_P99_RATIO_MAX = 1.5


def placement_over_ceiling(engine_per_s, ceiling_tps):
    return at_least(engine_per_s / ceiling_tps, ENGINE_OVER_CEILING_MIN)


def placement_cpu(engine_us_per_placement):
    return at_most(engine_us_per_placement, ENGINE_US_PER_PLACEMENT_MAX)


def placement_open_loop_p99(engine_p99_ms, pgbench_p99_ms):
    """The engine's open-loop p99 no worse than pgbench's calling fulltime_place at the same
    rate."""
    return at_most(engine_p99_ms, pgbench_p99_ms)


def placement_one_statement_p99(engine_p99_ms, one_statement_p99_ms):
    """The engine's p99 over the one-statement placement's, at most 1.5; None when that p99
    is 0 (no figures)."""
    if not one_statement_p99_ms:
        return None
    return at_most(engine_p99_ms / one_statement_p99_ms, ONE_STATEMENT_P99_RATIO_MAX)


# --- settlement (scripts/bench-settlement and the scripts that run it) ----------------------

# Settled bets/s against the single transaction that settles the whole market: with the
# governor off at least as fast; with a placement p99 budget at least 0.3 of it.
THROUGHPUT_MIN_OFF = 1.0
THROUGHPUT_MIN_GOVERNED = 0.3
# With a budget, the placement p99 while settling over the p99 before, at most.
P99_RATIO_MAX_GOVERNED = 1.5
# WAL bytes per settled bet (settlement alone) at least 40 % under the 1,901 first measured.
WAL_FIRST_BYTES = 1901
WAL_TARGET_BYTES = WAL_FIRST_BYTES * 0.6


def settlement_throughput(ratio_to_baseline, governed):
    return at_least(ratio_to_baseline,
                    THROUGHPUT_MIN_GOVERNED if governed else THROUGHPUT_MIN_OFF)


def settlement_p99_governed(p99_ratio):
    return at_most(p99_ratio, P99_RATIO_MAX_GOVERNED)


def settlement_p99_against_control(p99_ratio, control_p99_ratio):
    """The engine's p99 ratio (while settling / before) no worse than the control's, the
    database alone doing the same steps at the same speed."""
    return at_most(p99_ratio, control_p99_ratio)


def settlement_wal(bytes_per_settled_bet):
    return at_most(bytes_per_settled_bet, WAL_TARGET_BYTES)


def wal_change_percent(bytes_per_settled_bet):
    """The change against the 1,901 bytes first measured, in percent."""
    return 100 * (bytes_per_settled_bet / WAL_FIRST_BYTES - 1)


def governor_off(run):
    """The governor-off targets of one bench-settlement JSON line: (throughput, p99), each a
    Verdict or None when the run has no such figure."""
    throughput = p99 = None
    if run.get("ratio_to_baseline") is not None:
        throughput = settlement_throughput(run["ratio_to_baseline"], governed=False)
    if run.get("p99_ratio") is not None and run.get("control_p99_ratio") is not None:
        p99 = settlement_p99_against_control(run["p99_ratio"], run["control_p99_ratio"])
    return throughput, p99


def governor_on(run):
    """The budget-on targets of one bench-settlement JSON line: (p99, throughput), or None
    when the run lacks either figure."""
    if run.get("ratio_to_baseline") is None or run.get("p99_ratio") is None:
        return None
    return (settlement_p99_governed(run["p99_ratio"]),
            settlement_throughput(run["ratio_to_baseline"], governed=True))


# --- settlement judged on medians (scripts/bench-settlement-repeat) -------------------------

def control_speed(run):
    """The control's settling speed over the engine's."""
    c, e = run.get("control_bets_per_s"), run.get("engine_bets_per_s")
    return c / e if c and e else None


def p99_gap(run):
    """The engine's p99 while settling less the control's during (ms)."""
    e, c = run.get("p99_settling_ms"), run.get("control_p99_during_ms")
    return e - c if e is not None and c is not None else None


# The figures of a run that the medians are taken of, by column name.
REPEAT_FIGURES = {
    "engine/base": lambda r: r.get("ratio_to_baseline"),
    "ctl/engine": control_speed,
    "eng before": lambda r: r.get("p99_before_ms"),
    "eng settling": lambda r: r.get("p99_settling_ms"),
    "ctl before": lambda r: r.get("control_p99_before_ms"),
    "ctl during": lambda r: r.get("control_p99_during_ms"),
    "eng ratio": lambda r: r.get("p99_ratio"),
    "ctl ratio": lambda r: r.get("control_p99_ratio"),
    "eng-ctl ms": p99_gap,
}


def repeat_medians(runs):
    """{column: the median of the runs that have the figure, or None}."""
    return {name: stats.median(get(r) for r in runs) for name, get in REPEAT_FIGURES.items()}


def repeat_judgement(runs):
    """The governor-off targets judged on the medians of several runs rather than on one (a
    run's p99 stands on the slowest 1 % of its window's placements, so one stall on either
    side decides a single run): settlement >= 1.0 x the single transaction (the median of the
    runs' ratios), and the engine's p99 ratio no worse than the control's (the medians of each
    side's ratios). Returns (medians, {"throughput", "p99"}: Verdict or None, how many runs met
    each on their own {"throughput", "p99", "gap"})."""
    medians = repeat_medians(runs)
    verdicts = {"throughput": None, "p99": None}
    if medians["engine/base"] is not None:
        verdicts["throughput"] = at_least(medians["engine/base"], THROUGHPUT_MIN_OFF)
    if medians["eng ratio"] is not None and medians["ctl ratio"] is not None:
        verdicts["p99"] = at_most(medians["eng ratio"], medians["ctl ratio"])
    each = {
        "throughput": sum(1 for r in runs if (r.get("ratio_to_baseline") or 0) >= 1.0),
        "p99": sum(1 for r in runs if r.get("p99_ratio") is not None
                   and r.get("control_p99_ratio") is not None
                   and r["p99_ratio"] <= r["control_p99_ratio"]),
        "gap": sum(1 for r in runs if p99_gap(r) is not None and p99_gap(r) <= 0),
    }
    return medians, verdicts, each


# --- reconciliation over closed history (scripts/bench-history) -----------------------------

# Ten times more closed history costs a reconciliation at most this much more.
HISTORY_RATIO_MAX = 1.5


def history_closed(ms_10x, ms_1x):
    return at_most(ms_10x / ms_1x, HISTORY_RATIO_MAX)
