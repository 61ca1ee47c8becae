"""Fits: the matching-time model and the queue-model inference.

Matching model (Song 2013): ``Diff(n) = ROT(n) - IOT(n) = c + legs * n(n-1)/2 * M``
where ``legs`` is the number of reversed legs per iteration. M is the slope of
a least-squares line of Diff against ``legs * n(n-1)/2`` over all batch sizes;
the intercept absorbs any constant offset between the two orders.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from sentinel.analysis.variables import Values, upper_bound
from sentinel.errors import SentinelError

#: A fit of M whose R^2 is below this does not follow n(n-1)/2: M is not
#: resolved by it, whatever its interval.
MIN_R2 = 0.5

#: |M| bounded below this is no per-message search cost. A list search
#: touches one queue entry per unsuccessful match; the cheapest measured here
#: is MPICH's over shared memory, 0.7 ns an entry: 0.1 ns is 7 times less.
NO_SEARCH_COST_NS = 0.1


@dataclass(frozen=True)
class MatchFit:
    """Least-squares fit of Diff against the number of unsuccessful matches."""

    m_us: float
    intercept_us: float
    r2: float
    stderr_us: float
    points: int

    @property
    def interval_us(self) -> tuple[float, float]:
        """The 95 % confidence interval of M (Student's t, points - 2 degrees)."""
        half = t_quantile(self.points - 2) * self.stderr_us
        return (self.m_us - half, self.m_us + half)

    @property
    def resolved(self) -> bool:
        """M is above zero beyond its interval, and the line explains the points."""
        return self.interval_us[0] > 0 and self.r2 >= MIN_R2

    @property
    def no_search_cost(self) -> bool:
        """M is bounded below :data:`NO_SEARCH_COST_NS`, and not clearly negative.

        An interval wholly below minus that bound means the reverse order was
        faster: another effect dominates, and says nothing of the queue.
        """
        hi = 1e3 * self.interval_us[1]
        return -NO_SEARCH_COST_NS < hi < NO_SEARCH_COST_NS

    @property
    def bound_ns(self) -> float:
        """The upper bound of an unresolved M (ns): its interval's top, or its width."""
        lo, hi = (1e3 * v for v in self.interval_us)
        return upper_bound(lo, hi)

    def describe(self, label: str) -> str:
        """``tag M = 0.72 ns (0.70 .. 0.74, R^2 0.99)`` or ``tag M < 0.02 ns (...)``."""
        lo, hi = (1e3 * v for v in self.interval_us)
        if self.resolved:
            return f"{label} M = {1e3 * self.m_us:.3g} ns ({lo:.3g} .. {hi:.3g}, R^2 {self.r2:.2f})"
        return f"{label} M < {self.bound_ns:.2g} ns ({lo:.3g} .. {hi:.3g}, R^2 {self.r2:.2f})"

    def unresolved_why(self) -> str:
        """Why M is unresolved, after its bound: ``< 0.02 ns: its interval ...``."""
        lo, hi = (1e3 * v for v in self.interval_us)
        if hi < 0:
            why = (f"its interval {lo:.3g} .. {hi:.3g} ns lies below 0: the reverse order "
                   "was faster, another effect hides the matching cost")
        elif lo <= 0:
            why = f"its interval {lo:.3g} .. {hi:.3g} ns includes 0"
        else:
            why = f"R^2 {self.r2:.2f} is below {MIN_R2}: Diff does not follow n(n-1)/2"
        return f"< {self.bound_ns:.2g} ns: {why} (fit over {self.points} batch sizes)"


def fit_matching(ns: Sequence[int], diffs_us: Sequence[float], legs: int) -> MatchFit:
    """Fit M (us per unsuccessful match) from Diff(n) over batch sizes ``ns``."""
    if len(ns) != len(diffs_us):
        raise SentinelError("fit_matching: batch sizes and Diff values differ in length")
    x = np.array([legs * n * (n - 1) / 2 for n in ns], dtype=float)
    y = np.asarray(diffs_us, dtype=float)
    if len(set(x.tolist())) < 3:
        raise SentinelError(
            f"fit_matching: need at least 3 distinct batch sizes, got {sorted(set(ns))}"
        )
    fit = _line(x, y)
    return MatchFit(float(fit.slope), float(fit.intercept), _r2(fit, y), float(fit.stderr),
                    len(x))


def _line(x: np.ndarray, y: np.ndarray):
    """Least-squares line (scipy's): slope, intercept, r, standard error of the slope."""
    from scipy import stats  # 0.6 s to import: paid by sanity, not by every listing

    with np.errstate(invalid="ignore", divide="ignore"):  # a constant y has no r
        return stats.linregress(x, y)


def _r2(fit, y: np.ndarray) -> float:
    """R^2 of a line; a constant y is explained exactly by a flat line."""
    if np.ptp(y) == 0:
        return 1.0 if fit.slope == 0 else 0.0
    return float(fit.rvalue) ** 2


#: The queue models :func:`queue_model` infers.
SHARED = "shared"
PER_COMMUNICATOR = "per-communicator"
NO_SEARCH_COST = "no per-message search cost"
INCONCLUSIVE = "inconclusive"


def queue_model(tag: MatchFit, comm: MatchFit | None) -> tuple[str, str]:
    """The matching-queue model of one queue, and the evidence for it.

    * ``shared``: the tag algorithm's M is resolved and the communicator
      algorithm's (one communicator per message) is at least half of it:
      all communicators' entries are searched together;
    * ``per-communicator``: the tag M is resolved, the communicator M's
      interval lies below a quarter of it: each communicator has its queue;
    * ``no per-message search cost``: the tag M is bounded below
      :data:`NO_SEARCH_COST_NS` and not clearly negative, and the
      communicator algorithm resolves no M above that either (hashed or
      bucketed queues; a search hidden behind a slow transport's own time
      looks the same: it costs nothing there);
    * ``inconclusive``: anything else, with the numbers that leave it open.
    """
    evidence = tag.describe("tag") + ("; " + comm.describe("comm") if comm else "")
    if tag.no_search_cost and (comm is None or comm.no_search_cost or not comm.resolved):
        return NO_SEARCH_COST, evidence
    if tag.resolved:
        if comm is None:
            return INCONCLUSIVE, evidence + "; communicators not measured"
        if comm.resolved and comm.m_us >= 0.5 * tag.m_us:
            return SHARED, evidence
        if comm.interval_us[1] < 0.25 * tag.m_us:
            return PER_COMMUNICATOR, evidence
        return INCONCLUSIVE, evidence
    return INCONCLUSIVE, evidence


@dataclass(frozen=True)
class HockneyFit:
    """``t(size) = lambda + size / b`` for a ping-pong curve (Banerjee 2022)."""

    #: Latency (us): the mean time of the 0-16 byte messages, because the
    #: fitted intercept is often negative.
    lambda_us: float
    #: Asymptotic bandwidth (MB/s) from the least-squares slope over all sizes.
    b_mbs: float
    #: The fitted intercept (us), for reference.
    intercept_us: float
    r2: float
    #: The range of the 0-16 byte sizes' times lambda is the mean of.
    lambda_interval_us: tuple[float, float] = (math.nan, math.nan)
    #: 95 % interval of b from the slope's; None when the slope's interval
    #: reaches zero (the sizes measured do not bound b from above).
    b_interval_mbs: tuple[float, float] | None = None


@dataclass(frozen=True)
class LineFit:
    """``y = intercept + slope x`` by least squares, and its R^2.

    With three points or more, the 95 % confidence intervals of the slope
    and the intercept (Student's t over the residuals); with two, the line
    is exact and says nothing of its own uncertainty (None).
    """

    slope: float
    intercept: float
    r2: float
    slope_interval: tuple[float, float] | None = None
    intercept_interval: tuple[float, float] | None = None


def linear_fit(x: list[float], y: list[float]) -> LineFit:
    """The least-squares line through the points (at least two distinct x)."""
    if len(set(x)) < 2:
        raise SentinelError(f"linear_fit: need two distinct x, got {sorted(set(x))}")
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    fit = _line(xs, ys)
    if len(xs) < 3:
        return LineFit(float(fit.slope), float(fit.intercept), _r2(fit, ys))
    t = t_quantile(len(xs) - 2)
    slope, intercept = float(fit.slope), float(fit.intercept)
    return LineFit(slope, intercept, _r2(fit, ys),
                   (slope - t * fit.stderr, slope + t * fit.stderr),
                   (intercept - t * fit.intercept_stderr, intercept + t * fit.intercept_stderr))


def hockney_fit(times_us: dict[int, float]) -> HockneyFit:
    """Fit ``t = lambda + size/b`` to half-round-trip times per size (bytes)."""
    small = [t for s, t in times_us.items() if s <= 16]
    if not small or len(times_us) < 3:
        raise SentinelError("hockney_fit: need the 0-16 byte sizes and at least 3 sizes, got "
                            f"{sorted(times_us)}")
    x = np.array(sorted(times_us), dtype=float)
    y = np.array([times_us[int(s)] for s in x])
    fit = _line(x, y)
    b = 1.0 / fit.slope if fit.slope > 0 else math.inf  # bytes/us == MB/s
    half = t_quantile(len(x) - 2) * fit.stderr
    lo_slope, hi_slope = fit.slope - half, fit.slope + half
    b_interval = (1.0 / hi_slope, 1.0 / lo_slope) if lo_slope > 0 else None
    return HockneyFit(float(np.mean(small)), float(b), float(fit.intercept), _r2(fit, y),
                      (float(min(small)), float(max(small))), b_interval)


def t_quantile(dof: int, coverage: float = 0.95) -> float:
    """Student's t quantile of a two-sided interval of ``coverage`` with ``dof`` degrees."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + coverage / 2, max(dof, 1)))


def median_interval(values: Sequence[float]) -> tuple[float, float]:
    """The distribution-free interval of the median (order statistics, >= 95 %).

    x(j) .. x(n+1-j) with j the largest rank with P(Binomial(n, 1/2) < j) <=
    0.025; below 9 values the range, which covers the median with
    probability 1 - 2^(1-n). The same rule as the C benchmarks'
    ``sb_median_interval``.
    """
    from scipy import stats

    ordered = sorted(values)
    n = len(ordered)
    j = 1
    while j < (n + 1) // 2 and stats.binom.cdf(j, n, 0.5) <= 0.025:
        j += 1
    return (float(ordered[j - 1]), float(ordered[n - j]))


def median_coverage(n: int) -> float:
    """The coverage of :func:`median_interval` over ``n`` values, exactly.

    ``P(x(j) <= median <= x(n+1-j)) = 1 - 2 P(Binomial(n, 1/2) <= j - 1)``
    for any continuous distribution: ``1 - 2^(1-n)`` for the range (3
    values: 75 %, 5: 93.75 %, 6 or more: at least 95 %).
    """
    from scipy import stats

    if n < 2:
        return 0.0
    j = 1
    while j < (n + 1) // 2 and stats.binom.cdf(j, n, 0.5) <= 0.025:
        j += 1
    return float(1 - 2 * stats.binom.cdf(j - 1, n, 0.5))


def median_of(runs: Sequence[Values]) -> Values:
    """Each value the median over repeated launches, within :func:`median_interval`.

    The interval's coverage is :func:`median_coverage` of the launches (the
    range of 3: 75 %). A name unresolved in any launch stays unresolved with
    that launch's reason; a name some launch did not report is unresolved,
    saying how many did. One launch: its values, without intervals.
    """
    if not runs:
        raise SentinelError("median_of: no launches to take the median of")
    out = Values(runs[0].spec)
    names = {n for run in runs for n in (*run, *run.unresolved)}
    for name in sorted(names):
        why = next((run.unresolved[name] for run in runs if name in run.unresolved), "")
        got = [run[name][0] for run in runs if name in run]
        if why or len(got) < len(runs):
            out.unresolve(name, why or f"reported by {len(got)} of {len(runs)} launches")
            continue
        var = out.spec.lookup(name)
        if var is None:
            raise SentinelError(f"median_of: {out.spec.name} declares no variable {name!r}")
        many = len(got) > 1
        out.record(var, name, statistics.median(got), median_interval(got) if many else None,
                   median_coverage(len(got)))
    return out


def switch_points(times_us: dict[int, float], fit: HockneyFit, factor: float = 3.0) -> list[int]:
    """Sizes where the latency curve steps up (protocol switches, e.g. eager -> rendezvous).

    A step at size s_i is a rise from the previous size larger than ``factor``
    times what the fitted bandwidth explains and than half the latency.
    """
    sizes = sorted(times_us)
    out = []
    for prev, cur in zip(sizes, sizes[1:]):
        rise = times_us[cur] - times_us[prev]
        expected = (cur - prev) / fit.b_mbs if math.isfinite(fit.b_mbs) else 0.0
        if rise > factor * expected and rise > 0.5 * fit.lambda_us:
            out.append(cur)
    return out
