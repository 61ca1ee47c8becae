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

Prints, per series and in all: false alarms per series of nights, blocks
found, and the seconds the detector took.

    .venv/bin/python benchmarks/blocks.py --nights 50 --trials 40 --block 4
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sentinel.results import changes
from sentinel.results.report.load import Inputs, load_history

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
    found = changes._of_series(("", "", "", ""), points, {}, {},  # noqa: SLF001
                               changes.PVALUE, changes.PERMUTATIONS, changes.MIN_SHIFT)
    return ([int(c.after.session) for c in found if not c.block],
            [int(c.after.session) for c in found if c.block])


def main() -> int:
    """Draw the series, judge them, print the counts."""
    args = _parser().parse_args()
    rng = np.random.default_rng(args.seed)
    totals = {"series": 0, "steps": 0, "blocks": 0, "found": 0}
    start = time.perf_counter()
    for key, values in sorted(_measured(args.db, args.unchanged).items()):
        steps = blocks = found = 0
        for _ in range(args.trials):
            series = list(rng.choice(values, args.nights))
            step, block = _named(series)
            steps += bool(step)
            blocks += bool(block)
            at = int(rng.integers(args.nights // 3, 2 * args.nights // 3 - args.block))
            blocky = [v * args.factor if at <= i < at + args.block else v
                      for i, v in enumerate(series)]
            _, edges = _named(blocky)
            found += edges == [at, at + args.block]
        totals["series"] += args.trials
        totals["steps"] += steps
        totals["blocks"] += blocks
        totals["found"] += found
        print(f"{key}: false steps {steps}/{args.trials}, false blocks {blocks}/{args.trials}, "
              f"blocks found {found}/{args.trials} (spread of the measured values "
              f"{np.std(np.log(values)):.1%})")
    seconds = time.perf_counter() - start
    print(f"all: false steps {totals['steps']}, false blocks {totals['blocks']} in "
          f"{totals['series']} series of {args.nights} unchanged nights; "
          f"{args.block}-night blocks x{args.factor:g} found "
          f"{totals['found']}/{totals['series']}; {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
