"""Change points in the results history: when a performance variable shifted, and how much.

Fixed reference bands either miss a slow drift or cry wolf on a noisy
night; the people who run such histories at scale (MongoDB's performance
CI, Apache Otava) look for change points instead. This module runs
MongoDB's E-Divisive means (``signal-processing-algorithms``: energy
statistics, a permutation test for each split) over each performance
variable's values, one per stored session, oldest first.

Why that library and not Otava: Otava 0.8 pins numpy 2.2 and scipy below
1.17 and brings BigQuery, Postgres and Slack clients; MongoDB's package is
the algorithm alone.

By default the headline variables are looked at (those the report follows
night after night): a test reports dozens of variables, and each series
tested at p = 0.01 is one more chance of a false alarm.

For each change point: the session before and after it, the medians of
the segments on either side, the relative shift, its p-value, and whether
it is a regression or an improvement by the variable's declared direction.
The p-value is the permutation test's at the change point's discovery:
the largest energy statistic over every split of the windows between the
change points found before it, against the same over random orders of
those windows (E-Divisive's own test, redone to report its value). A
change point is reported when p <= ``pvalue``, each side holds at least
:data:`MIN_SEGMENT` sessions, and the medians differ by at least
``min_shift`` (relative): a shift smaller than that is no news to a site.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from signal_processing_algorithms.energy_statistics import energy_statistics as estats

from sentinel.analysis.variables import HIGHER, LOWER
from sentinel.results import provenance
from sentinel.results.report.load import Case

#: Fewer values than this on either side of a split is not a segment.
MIN_SEGMENT = 3

#: Default significance, permutations and smallest relative shift reported.
PVALUE = 0.01
PERMUTATIONS = 199
MIN_SHIFT = 0.10


@dataclass(frozen=True)
class Point:
    """One stored session's value of one variable."""

    session: str  # UUID
    time: float   # session start, unix seconds
    value: float
    #: What the result depended on (:attr:`Case.provenance`).
    provenance: Mapping[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Change:
    """A change point of one variable of one test, between two sessions."""

    where: str      # system:partition+environ
    test: str       # the test's display name
    variable: str
    unit: str
    before: Point   # the last session of the old level
    after: Point    # the first session of the new level
    old: float      # median of the segment before
    new: float      # median of the segment after
    pvalue: float
    verdict: str    # regression, improvement, or shift (no declared direction)
    #: What differs in the provenance of the test between the two sessions.
    provenance: tuple[str, ...] = ()
    #: The mode of the sessions compared (``nightly``; '' for unmarked ones).
    mode: str = ""
    #: For the two edges of a level that left and came back (a block of
    #: sessions): what the block was (``start of a block of 4 sessions,
    #: back on 2026-11-20``); '' for a step.
    block: str = ""

    @property
    def shift(self) -> float:
        """The relative change of the median, (new - old) / old."""
        return (self.new - self.old) / self.old if self.old else float("inf")


def series(history: list[tuple[dict, list[Case]]], headline_only: bool = True,
           only: set[tuple[str, str]] | None = None
           ) -> dict[tuple[str, str, str, str], list[Point]]:
    """Per (mode, where, test, variable): each stored session's value, oldest first.

    The mode (``--session-extras mode=...``) keeps apart sessions that ran
    the same test with other parameters (a quick run between nightly ones).
    ``only``: the (where, test) to follow (default: every one).
    """
    out: dict[tuple[str, str, str, str], list[Point]] = defaultdict(list)
    for info, cases in sorted(history, key=lambda s: s[0].get("time_start_unix") or 0):
        mode = str(info.get("mode") or "")
        for c in cases:
            if only is not None and (c.where, c.name) not in only:
                continue
            for var in c.variables.values():
                value = var.declared_value
                if value is not None and (var.followed or not headline_only):
                    out[(mode, c.where, c.name, var.name)].append(
                        Point(str(info.get("uuid") or ""), float(info.get("time_start_unix") or 0),
                              float(value), c.provenance))
    return out


def _verdict(better: str, old: float, new: float) -> str:
    if better == HIGHER:
        return "improvement" if new > old else "regression"
    if better == LOWER:
        return "improvement" if new < old else "regression"
    return "shift"


def _best_split(distances: np.ndarray, a: int, b: int) -> tuple[int, float] | None:
    """The split of ``a:b`` with the largest energy statistic, both sides segments."""
    if b - a < 2 * MIN_SEGMENT:
        return None
    stats = estats._calculate_t_stats(distances[a:b, a:b])  # noqa: SLF001
    allowed = stats[MIN_SEGMENT:b - a - MIN_SEGMENT + 1]
    i = int(np.argmax(allowed))
    return a + MIN_SEGMENT + i, float(allowed[i])


def _permuted_best(distances: np.ndarray, windows: list[int]) -> float:
    """The largest statistic over the windows, each window's values in a random order."""
    best = 0.0
    for a, b in zip(windows, windows[1:]):
        if b - a < 2 * MIN_SEGMENT:
            continue
        order = np.random.permutation(b - a) + a
        shuffled = distances[np.ix_(order, order)]
        best = max(best, _best_split(shuffled, 0, b - a)[1])  # type: ignore[index]
    return best


def _as_extreme(distances: np.ndarray, windows: list[int], tie: float, permutations: int,
                limit: float) -> int:
    """Of ``permutations`` random orders, how many did as well as ``tie``.

    The count stops once it passes ``limit``, the most that still leave the
    split significant: the answer is then "not significant" whatever the
    remaining orders do (a split with no change, most of them, is settled
    in a tenth of the orders). A significant split counts every order, so
    its p-value is the same as without the stop.
    """
    higher = 0
    for _ in range(permutations):
        higher += _permuted_best(distances, windows) >= tie
        if higher > limit:
            break
    return higher


def change_points(values: list[float], pvalue: float = PVALUE,
                  permutations: int = PERMUTATIONS, seed: int = 0) -> list[tuple[int, float]]:
    """Indices where a new level starts, with the p-value of each, in order.

    E-Divisive means: the best split of the windows between the change
    points found so far is a new change point when the permutation test
    (the same statistic over random orders of every window) gives
    p = (k + 1) / (permutations + 1) <= ``pvalue``, k the orders that did as
    well; the search ends at the first split that is not significant. Each
    change point keeps the p-value of its discovery. Re-testing it afterwards
    over the shorter window between its neighbours would drop real changes:
    a window of 5 + 5 sessions has no order more extreme than about 2 in
    C(10, 5), p ~ 0.01, however large the step. The loop is the library's
    (``e_divisive``), redone because that function returns neither the
    p-values nor a segment floor (:data:`MIN_SEGMENT`). The permutations
    draw from numpy's global generator (the library's choice), seeded here
    so that the same history always gives the same answer.
    """
    if len(values) < 2 * MIN_SEGMENT:
        return []
    np.random.seed(seed)
    distances = estats._get_distance_matrix(  # noqa: SLF001
        np.asarray(values, dtype=float).reshape(-1, 1))
    found: dict[int, float] = {}
    while True:
        windows = [0, *sorted(found), len(values)]
        splits = [s for s in (_best_split(distances, a, b)
                              for a, b in zip(windows, windows[1:])) if s is not None]
        if not splits:
            break
        index, observed = max(splits, key=lambda s: s[1])
        # An order as extreme as the observed one sums its distances in
        # another order: equal statistics differ in the last bits.
        tie = observed * (1 - 1e-9)
        higher = _as_extreme(distances, windows, tie, permutations,
                             pvalue * (permutations + 1) - 1)
        p = (higher + 1) / (permutations + 1)
        if p > pvalue:
            break
        found[index] = p
    return sorted(found.items())


#: A block: at least :data:`MIN_SEGMENT` sessions in a row, each at least this
#: many robust standard deviations off its window's median, on one side
#: (``benchmarks/blocks.py``: 2.0 found 368 of 400 measured-noise blocks, 3.0
#: 377, neither a false one in 400 unchanged series).
BLOCK_Z = 3.0
#: Permutations of a block's test: a block of 3 of 50 sessions is as extreme
#: in about 1 order of 450 (its values side by side), so 199 orders would
#: leave its p-value a coin toss around 0.01. The scan is only run on the
#: windows where such a run exists, so the finer test costs little.
BLOCK_PERMUTATIONS = 999


def _runs_off(z: np.ndarray) -> list[tuple[int, int, float]]:
    """Runs ``[i, j)`` beyond :data:`BLOCK_Z` on one side, each with its excess.

    A run is at least :data:`MIN_SEGMENT` values long, with as many of the
    window's values on either side of it.
    """
    out = []
    i, n = 0, len(z)
    while i < n:
        side = 1 if z[i] >= BLOCK_Z else -1 if z[i] <= -BLOCK_Z else 0
        j = i + 1
        while side and j < n and side * z[j] >= BLOCK_Z:
            j += 1
        if side and j - i >= MIN_SEGMENT and i >= MIN_SEGMENT and n - j >= MIN_SEGMENT:
            out.append((i, j, float(np.sum(np.abs(z[i:j])))))
        i = j
    return out


def _scan(z: np.ndarray) -> tuple[int, int, float] | None:
    """The run of :func:`_runs_off` with the largest excess."""
    return max(_runs_off(z), key=lambda r: r[2], default=None)


def blocks(values: list[float], pvalue: float = PVALUE,
           permutations: int = BLOCK_PERMUTATIONS,
           seed: int = 0) -> list[tuple[int, int, float]]:
    """A level that left and came back: ``(start, end, p)`` of the block, or [].

    E-Divisive splits a window in two; a block of a few sessions in the middle
    of a long window moves neither side's distribution enough to be a split,
    so a regression that came and went was never named. Here each value is
    scored on the logarithms against the window's median and robust spread
    (1.4826 MAD, which a block of a minority of the sessions cannot move);
    the statistic is the largest summed score of a run of at least
    :data:`MIN_SEGMENT` sessions each :data:`BLOCK_Z` or more off on one side,
    with sessions of the window's level before and after it, and its p-value
    is a permutation test's over the window's values in random orders (the
    same test E-Divisive's splits take).
    """
    x = np.asarray(values, dtype=float)
    if len(x) < 3 * MIN_SEGMENT or np.any(x <= 0):
        return []
    logs = np.log(x)
    spread = 1.4826 * float(np.median(np.abs(logs - np.median(logs))))
    if spread == 0:
        return []
    z = (logs - np.median(logs)) / spread
    found = _scan(z)
    if found is None:
        return []
    rng = np.random.default_rng(seed)
    tie = found[2] * (1 - 1e-9)
    higher = 0
    for _ in range(permutations):
        other = _scan(rng.permutation(z))
        higher += other is not None and other[2] >= tie
    p = (higher + 1) / (permutations + 1)
    return [(found[0], found[1], p)] if p <= pvalue else []


def find(history: list[tuple[dict, list[Case]]], pvalue: float = PVALUE,
         permutations: int = PERMUTATIONS, min_shift: float = MIN_SHIFT,
         headline_only: bool = True) -> list[Change]:
    """Every change point of every (headline) variable over the stored sessions, oldest first.

    The direction of each variable (higher or lower is better) is its
    declaration's (``Variable.decl``); a variable no check declares is a
    ``shift``.
    """
    directions: dict[str, str] = {}
    units: dict[str, str] = {}
    for _, cases in history:
        for c in cases:
            for var in c.variables.values():
                units.setdefault(var.name, var.decl.unit if var.decl else var.unit)
                if var.decl is not None:
                    directions.setdefault(var.name, var.decl.better)
    out = []
    for key, points in series(history, headline_only).items():
        out += of_series(key, points, directions, units, pvalue, permutations, min_shift)
    return sorted(out, key=lambda c: (c.after.time, c.where, c.test, c.variable))


def of_series(key: tuple[str, str, str, str], points: list[Point], directions: dict[str, str],
              units: dict[str, str], pvalue: float = PVALUE, permutations: int = PERMUTATIONS,
              min_shift: float = MIN_SHIFT) -> list[Change]:
    """The change points and blocks of one series: (mode, where, test, variable) -> points."""
    mode, where, test, name = key
    values = [p.value for p in points]
    # A segment's median lies between the series' extremes, so no shift can
    # exceed their ratio: a series flatter than min_shift is not tested.
    low, high = min(values), max(values)
    if low > 0 and high / low - 1 < min_shift:
        return []
    found = change_points(values, pvalue, permutations)
    bounds = [0, *(i for i, _ in found), len(values)]
    better = directions.get(name, "")
    out = []
    for k, (i, p) in enumerate(found):
        old = statistics.median(values[bounds[k]:i])
        new = statistics.median(values[i:bounds[k + 2]])
        change = _change(key, units, points, i, old, new, p, better)
        if abs(change.shift) >= min_shift:
            out.append(change)
    for a, b in zip(bounds, bounds[1:]):
        for i, j, p in blocks(values[a:b], pvalue, max(permutations, BLOCK_PERMUTATIONS)):
            out += _block(key, units, points[a:b], values[a:b], i, j, p, better, min_shift)
    return sorted(out, key=lambda c: c.after.time)


def _change(key: tuple[str, str, str, str], units: dict[str, str], points: list[Point],
            i: int, old: float, new: float, p: float, better: str, block: str = "") -> Change:
    """The change between ``points[i - 1]`` and ``points[i]``."""
    mode, where, test, name = key
    before, after = points[i - 1], points[i]
    return Change(where, test, name, units.get(name, ""), before, after, old, new, p,
                  _verdict(better, old, new),
                  tuple(provenance.diff(dict(before.provenance), dict(after.provenance))),
                  mode, block)


def _block(key: tuple[str, str, str, str], units: dict[str, str], points: list[Point],
           values: list[float], i: int, j: int, p: float, better: str,
           min_shift: float) -> list[Change]:
    """The two edges of the block ``[i, j)`` of a window: where it left, where it came back."""
    level = statistics.median(values[:i] + values[j:])
    inside = statistics.median(values[i:j])
    if level <= 0 or abs(inside / level - 1) < min_shift:
        return []
    back = time.strftime("%Y-%m-%d", time.gmtime(points[j].time))
    began = time.strftime("%Y-%m-%d", time.gmtime(points[i].time))
    n = j - i
    return [_change(key, units, points, i, level, inside, p, better,
                    f"start of a block of {n} sessions, back on {back}"),
            _change(key, units, points, j, inside, level, p, better,
                    f"end of a block of {n} sessions that began on {began}")]


def named_by(session: str, history: list[tuple[dict, list[Case]]], found: list[Change],
             pvalue: float = PVALUE, permutations: int = PERMUTATIONS,
             min_shift: float = MIN_SHIFT) -> list[Change]:
    """The change points of ``found`` that ``session``, the newest stored one, brought.

    A change point is named from the third session after the step on, so
    the newest session names steps of earlier nights: those the history
    without it did not name. Only the series with a change point are looked
    at again.
    """
    keys = {(c.mode, c.where, c.test, c.variable) for c in found}
    if not keys:
        return []
    units = {c.variable: c.unit for c in found}
    directions = {c.variable: _direction(c) for c in found}
    earlier = set()
    for key, points in series(history, only={(c.where, c.test) for c in found}).items():
        if key in keys and points[-1].session == session:
            earlier |= {(c.where, c.test, c.variable, c.after.session)
                        for c in of_series(key, points[:-1], directions, units, pvalue,
                                            permutations, min_shift)}
        elif key in keys:  # the newest session did not measure it: it named nothing here
            earlier |= {(c.where, c.test, c.variable, c.after.session) for c in found
                        if (c.mode, c.where, c.test, c.variable) == key}
    return [c for c in found if (c.where, c.test, c.variable, c.after.session) not in earlier]


def _direction(change: Change) -> str:
    """The declared direction a change's verdict came from ('' for a shift)."""
    if change.verdict == "shift":
        return ""
    worse = change.new < change.old if change.verdict == "regression" else change.new > change.old
    return HIGHER if worse else LOWER


def render(found: list[Change], history: list[tuple[dict, list[Case]]],
           pvalue: float) -> list[str]:
    """The lines ``sentinel changes`` (and the nightly mode's end) prints."""
    lines = [f"{len(history)} sessions, {len(found)} change points (E-Divisive means and "
             f"blocks, p <= {pvalue})"]
    for c in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(c.after.time))
        mode = f" ({c.mode} sessions)" if c.mode else ""
        lines.append(f"{when} session {c.after.session[:8]}{mode}: {c.where} {c.test} "
                     f"{c.variable}: "
                     f"{c.old:.4g} -> {c.new:.4g} {c.unit} ({c.shift:+.1%}, p = {c.pvalue:.3f}) "
                     f"{c.verdict}" + (f" ({c.block})" if c.block else ""))
        lines += [f"    provenance: {line}" for line in c.provenance]
    return lines
