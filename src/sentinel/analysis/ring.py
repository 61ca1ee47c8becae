"""The ring's results as performance variables: the time of a lap per N and its line."""

from __future__ import annotations

import statistics

from sentinel.analysis.fits import linear_fit, median_coverage, median_interval
from sentinel.analysis.variables import LOWER, NEUTRAL, CheckSpec, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput

#: What RingCheck reports, per N of its series and for the whole series.
SPEC = CheckSpec(
    checks=("RingCheck",),
    figures="scaling",
    variables=(
        PerfVar("lap_N{n}", "us", LOWER, "microseconds per lap of the N-rank ring (median of "
                "the repetitions, the slowest rank's)", headline={"n": "2"}, followed={},
                scaling="n"),
        PerfVar("hop", "us", LOWER, "b of t = a + b N over the series: the cost of one hop",
                headline={}),
        PerfVar("lap_offset", "us", NEUTRAL, "a of t = a + b N: the lap time's fixed part"),
        PerfVar("lap_fit_r2", "1", NEUTRAL, "R^2 of t = a + b N"),
    ),
)


def lap_us(run: BenchOutput, stdout: str) -> tuple[float, tuple[float, float], float]:
    """Median time per lap of one launch's repetitions, its interval and that's coverage."""
    reps = [rec.number("lap_us") for rec in run.of("RING")]
    if not reps:
        raise SentinelError(f"{stdout}: the {run.of('CONFIG')[0].integer('ranks')}-rank "
                            "launch reported no SENTINEL_RING line")
    return statistics.median(reps), median_interval(reps), median_coverage(len(reps))


def values(runs: dict[int, BenchOutput], stdout: str) -> Values:
    """``lap_N<n>`` per launch; ``hop``, ``lap_offset``, ``lap_fit_r2`` over N >= 2.

    The line needs two launches of 2 ranks or more; with fewer, its
    variables are unresolved, saying why.
    """
    out = Values(SPEC)
    measured = {n: lap_us(run, stdout) for n, run in runs.items()}
    laps = {n: t for n, (t, _, _) in measured.items()}
    for n, (t, interval, coverage) in measured.items():
        out.put("lap_N{n}", t, interval, coverage, n=n)
    ring = {n: t for n, t in laps.items() if n >= 2}
    if len(ring) < 2:
        why = (f"the line t = a + b N needs launches of at least two ring sizes of 2 ranks "
               f"or more; this series has {sorted(ring) or 'none'}")
        out.unresolved.update({"hop": why, "lap_offset": why, "lap_fit_r2": why})
        return out
    fit = linear_fit(list(ring), list(ring.values()))
    # A hop or a fixed part at or below zero is no time: unresolved, with its bound.
    out.put("hop", fit.slope, fit.slope_interval)
    out.put("lap_offset", fit.intercept, fit.intercept_interval)
    out.put("lap_fit_r2", fit.r2)
    return out
