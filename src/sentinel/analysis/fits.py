"""Fits: the matching-time model and the queue-model inference.

Matching model (Song 2013): ``Diff(n) = ROT(n) - IOT(n) = c + legs * n(n-1)/2 * M``
where ``legs`` is the number of reversed legs per iteration. M is the slope of
a least-squares line of Diff against ``legs * n(n-1)/2`` over all batch sizes;
the intercept absorbs any constant offset between the two orders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from sentinel.errors import SentinelError

#: A fitted slope counts as a real effect when it exceeds this many standard errors.
SIGNIFICANCE = 3.0


@dataclass(frozen=True)
class MatchFit:
    """Least-squares fit of Diff against the number of unsuccessful matches."""

    m_us: float
    intercept_us: float
    r2: float
    stderr_us: float
    points: int

    @property
    def significant(self) -> bool:
        """True when M is positive and clearly above its standard error."""
        return self.m_us > 0 and self.m_us > SIGNIFICANCE * self.stderr_us


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


def queue_model(tag: MatchFit, comm: MatchFit) -> str:
    """Infer whether the library keeps one matching queue for all communicators.

    Returns ``shared``, ``per-communicator`` or ``inconclusive``.

    With one queue per communicator the communicator algorithm's Diff is flat
    (its M is near zero); with one shared queue it grows like the tag
    algorithm's. Undecidable when the tag algorithm shows no matching cost.
    """
    if not tag.significant:
        return "inconclusive"
    ratio = comm.m_us / tag.m_us
    if comm.significant and ratio >= 0.5:
        return "shared"
    if ratio < 0.25:
        return "per-communicator"
    return "inconclusive"


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


@dataclass(frozen=True)
class LineFit:
    """``y = intercept + slope x`` by least squares, and its R^2."""

    slope: float
    intercept: float
    r2: float


def linear_fit(x: list[float], y: list[float]) -> LineFit:
    """The least-squares line through the points (at least two distinct x)."""
    if len(set(x)) < 2:
        raise SentinelError(f"linear_fit: need two distinct x, got {sorted(set(x))}")
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    fit = _line(xs, ys)
    return LineFit(float(fit.slope), float(fit.intercept), _r2(fit, ys))


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
    return HockneyFit(float(np.mean(small)), float(b), float(fit.intercept), _r2(fit, y))


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
