#!/usr/bin/env python3
r"""False-alarm rate of calibrated references on an unchanged system (run by hand).

Runs a selection ``--runs`` times and calibrates from them exactly as
``sentinel calibrate`` does (median, band from k * 1.4826 * MAD of ln(runs)),
then runs it ``--repeats`` more times unchanged and prints, per floor, how
many calibrated variables fell outside their band: the false alarms of a
nightly run without retries.

    .venv/bin/python benchmarks/false_alarms.py --partition local:cpu --repeats 10 \\
        --checks checks/pt2pt.py --variables 'latency_8B|bw_peak|bibw_peak' \\
        -- --mode quick -S Pt2ptCheck.modes=standard -n 'Pt2ptCheck.*mapping=core'
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.results import calibrate
from sentinel.results.cli import _run_selection


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--partition", required=True, help="system:partition")
    p.add_argument("--runs", type=int, default=5, help="calibration runs (default 5)")
    p.add_argument("--repeats", type=int, default=10, help="unchanged runs (default 10)")
    p.add_argument("--k", type=float, default=calibrate.DEFAULT_K)
    p.add_argument("--floors", default="0.10,0.20,0.30", help="floors to evaluate")
    p.add_argument("--variables", default="", help="regular expression of variables")
    p.add_argument("--checks", type=Path, action="append", default=None)
    p.add_argument("--config", type=Path, default=None)
    p.add_argument("selection", nargs=argparse.REMAINDER, help="after --: reframe options")
    return p


def _runs(args: argparse.Namespace, count: int) -> dict[calibrate.Key, calibrate.Series]:
    with tempfile.TemporaryDirectory(prefix="sentinel-false-alarms-") as tmp:
        args.runs = count
        return calibrate.collect(_run_selection(args, Path(tmp)))


def main() -> int:
    """Calibrate, repeat unchanged, print the out-of-band counts per floor."""
    args = _parser().parse_args()
    runs, repeats = args.runs, args.repeats
    try:
        base = _runs(args, runs)
        later = _runs(args, repeats)
    except SentinelError as err:
        print(f"false_alarms: {err}", file=sys.stderr)
        return 1
    for floor in (float(f) for f in args.floors.split(",")):
        refs, _ = calibrate.references(base, runs, args.k, floor, args.variables)
        alarms, total = [], 0
        for key, (median, lower, upper, _) in refs.items():
            for value in later.get(key, calibrate.Series("", [])).values:
                total += 1
                if not median * (1 + lower) <= value <= median * (1 + upper):
                    alarms.append(f"{key.variable} {'/'.join(key.index_values[2:])} "
                                  f"{value:g} vs {median:g} {100 * lower:+.0f}/"
                                  f"{100 * upper:+.0f} %")
        print(f"floor {floor:.2f}: {len(alarms)} of {total} values out of band "
              f"({100 * len(alarms) / max(total, 1):.1f} %) over {repeats} unchanged runs")
        for alarm in alarms:
            print(f"    {alarm}")
    spreads = [100 * calibrate.spread(s.values) for s in base.values() if min(s.values) > 0]
    print(f"calibration: {len(base)} variables, median spread (1.4826 MAD of ln) "
          f"{statistics.median(spreads):.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
