#!/usr/bin/env python3
r"""A level that left and came back: false blocks and found blocks over measured noise.

For each headline series of the unchanged sessions of a results database
(default: the captured ``tests/data/history/pt2pt-tcp-limited-from-21.db``,
its first 20 sessions, Pt2ptCheck over ob1-tcp and ob1-vader on this host),
``--trials`` series of ``--nights`` nights are drawn from that series' own
values (with replacement: the measured noise of that family, its drift
between sessions included, its order not), then judged by the change-point
detector (``sentinel.results.changes``: E-Divisive means and the block scan):

* unchanged: every change point or block named is a false alarm;
* with a block: ``--block`` nights from the middle third scaled by
  ``--factor`` (0.5: halved), the block is found when both its edges are
  named at the right nights.

Beside it, a maintained multiple change-point method judges the same
series: PELT (Killick, Fearnhead and Eckley, "Optimal detection of
changepoints with a linear computational cost", 2012; ``ruptures``, the
``bench`` extra: ``pip install -e .[bench]``), least squares on the
logarithms, at least ``MIN_SEGMENT`` nights a segment, the penalty
2 sigma^2 ln n with sigma the series' noise (the median absolute
difference of successive nights / (0.6745 sqrt 2)), and a boundary kept
only when the medians either side differ by ``MIN_SHIFT`` or more, as the
suite's detector requires. A block is found by it when both edges are
among its boundaries at the right nights.

The same series also take a step (every night from the block's start on
scaled by ``--factor``: found when named at its night) and a drift (scaled
gradually from there to ``--factor`` on the last night: found when a change
is named at or after its start).

Prints, per series and in all: false alarms per series of nights, blocks,
steps and drifts found, and the seconds each method took.

    .venv/bin/python benchmarks/blocks.py --nights 50 --trials 40 --block 4 [--factor 0.8]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sentinel.results import changes
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DB = ROOT / "tests" / "data" / "history" / "pt2pt-tcp-limited-from-21.db"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", type=Path, default=DEFAULT_DB, help="results database to draw from")
    p.add_argument("--unchanged", type=int, default=20,
                   help="its first sessions that are unchanged (default 20)")
    p.add_argument("--nights", type=int, default=50, help="nights per series (default 50)")
    p.add_argument("--trials", type=int, default=40, help="series per measured one (default 40)")
    p.add_argument("--block", type=int, default=4, help="nights of the block (default 4)")
    p.add_argument("--factor", type=float, default=0.5, help="the block's scale (default 0.5)")
    p.add_argument("--seed", type=int, default=1)
    return p


def _measured(db: Path, unchanged: int) -> dict[str, list[float]]:
    inputs = Inputs()
    load_history(db, inputs)
    if inputs.problems:
        raise SystemExit(f"{db}: {inputs.problems[0]}")
    history = inputs.history[:unchanged]
    return {f"{test.split(' %build')[0]} {name}": [p.value for p in points]
            for (_, _, test, name), points in changes.series(history).items()}


def _named(values: list[float]) -> tuple[list[int], list[int]]:
    """The nights where the detector names a step, and a block's edge, as a report would.

    Its defaults: p <= 0.01, and a shift of at least 10 %.
    """
    points = [changes.Point(str(i), float(i * 86400), v) for i, v in enumerate(values)]
    found = changes.of_series(("", "", "", ""), points, {}, {},
                              changes.PVALUE, changes.PERMUTATIONS, changes.MIN_SHIFT)
    return ([int(c.after.session) for c in found if not c.block],
            [int(c.after.session) for c in found if c.block])


def _pelt(values: list[float]) -> list[int]:
    """The nights where PELT starts a new segment (see the module's text)."""
    try:
        import ruptures
    except ImportError:
        raise SystemExit("benchmarks/blocks.py: PELT needs ruptures: pip install -e .[bench]") \
            from None
    logs = np.log(np.asarray(values, dtype=float))
    sigma = float(np.median(np.abs(np.diff(logs)))) / (0.6745 * np.sqrt(2)) or 1e-6
    cuts = ruptures.Pelt(model="l2", min_size=changes.MIN_SEGMENT, jump=1).fit(logs).predict(
        pen=2 * sigma ** 2 * np.log(len(logs)))[:-1]
    edges = [0, *cuts, len(values)]
    medians = [float(np.median(values[a:b])) for a, b in zip(edges, edges[1:])]
    return [cut for cut, old, new in zip(cuts, medians, medians[1:])
            if abs(new / old - 1) >= changes.MIN_SHIFT]


def _trial(rng: np.random.Generator, values: list[float], args: argparse.Namespace,
           clock: dict[str, float]) -> dict[str, int]:
    """One unchanged series and the same with a block, a step and a drift, by both methods.

    The step scales every night from ``at`` on by ``--factor``; the drift
    scales night ``at + i`` by ``factor^((i + 1) / (nights - at))``, reaching
    ``--factor`` on the last night. A step is found when a change is named
    at its night exactly; a drift when one is named at or after its start.
    """
    series = list(rng.choice(values, args.nights))
    at = int(rng.integers(args.nights // 3, 2 * args.nights // 3 - args.block))
    blocky = [v * args.factor if at <= i < at + args.block else v for i, v in enumerate(series)]
    stepped = [v * args.factor if i >= at else v for i, v in enumerate(series)]
    span = args.nights - at
    drifted = [v * args.factor ** ((i - at + 1) / span) if i >= at else v
               for i, v in enumerate(series)]
    start = time.perf_counter()
    step, block = _named(series)
    _, edges = _named(blocky)
    at_step = sum(_named(stepped), [])
    at_drift = sum(_named(drifted), [])
    clock["e-divisive"] += time.perf_counter() - start
    start = time.perf_counter()
    pelt, pelt_blocky = _pelt(series), _pelt(blocky)
    pelt_step, pelt_drift = _pelt(stepped), _pelt(drifted)
    clock["pelt"] += time.perf_counter() - start
    return {"steps": bool(step), "blocks": bool(block), "found": edges == [at, at + args.block],
            "step": at in at_step, "drift": any(i >= at for i in at_drift),
            "pelt_false": bool(pelt), "pelt_found": pelt_blocky == [at, at + args.block],
            "pelt_step": at in pelt_step, "pelt_drift": any(i >= at for i in pelt_drift)}


def main() -> int:
    """Draw the series, judge them, print the counts."""
    args = _parser().parse_args()
    rng = np.random.default_rng(args.seed)
    totals = {"series": 0, "steps": 0, "blocks": 0, "found": 0, "step": 0, "drift": 0,
              "pelt_false": 0, "pelt_found": 0, "pelt_step": 0, "pelt_drift": 0}
    clock = {"e-divisive": 0.0, "pelt": 0.0}
    for key, values in sorted(_measured(args.db, args.unchanged).items()):
        counts = {k: 0 for k in totals}
        for _ in range(args.trials):
            for k, v in _trial(rng, values, args, clock).items():
                counts[k] += v
        counts["series"] = args.trials
        for k in totals:
            totals[k] += counts[k]
        print(f"{key}: false steps {counts['steps']}/{args.trials}, false blocks "
              f"{counts['blocks']}/{args.trials}, blocks found {counts['found']}/{args.trials}; "
              f"PELT: false {counts['pelt_false']}/{args.trials}, found "
              f"{counts['pelt_found']}/{args.trials} (spread of the measured values "
              f"{np.std(np.log(values)):.1%})")
    n = totals["series"]
    print(f"all, E-Divisive and the block scan: false steps {totals['steps']}, false blocks "
          f"{totals['blocks']} in {n} series of {args.nights} unchanged nights; "
          f"{args.block}-night blocks x{args.factor:g} found {totals['found']}/{n}; steps "
          f"x{args.factor:g} named at their night {totals['step']}/{n}; drifts to "
          f"x{args.factor:g} named {totals['drift']}/{n}; {clock['e-divisive']:.1f} s")
    print(f"all, PELT: series with a false boundary {totals['pelt_false']}/{n}; blocks found "
          f"{totals['pelt_found']}/{n}; steps at their night {totals['pelt_step']}/{n}; "
          f"drifts named {totals['pelt_drift']}/{n}; {clock['pelt']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
