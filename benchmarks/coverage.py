#!/usr/bin/env python3
r"""Stated against measured coverage of the intervals, per family, over repeated real runs.

Runs a selection ``--runs`` times with the real ReFrame (or reads the run
reports given with ``--reports``). For every variable of every test case
that carries an interval in most runs, the level is the median of its
values over the runs; an interval covers when it holds that level. Per
family (check) and stated coverage (95 %, or the coverage a run reports in
``interval_coverage``: the range of 3 repetitions, 75 %), prints how many
intervals there were and what fraction covered.

A run's interval is of that run's own repetitions: it says where the run's
median lies, not where the level of the next run will be. Where runs drift
(this VM moves by tens of per cent over minutes), measured falls below
stated, and that gap is the figure this benchmark is for.

    .venv/bin/python benchmarks/coverage.py --runs 10 -- --mode quick -p openmpi \
        -n '(Pt2ptCheck|MatchingCheck|RingCheck|JacobiCheck).*transport=ob1-vader'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from sentinel.analysis.variables import COVERAGE

ROOT = Path(__file__).resolve().parents[1]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10, help="runs of the selection (default 10)")
    p.add_argument("--reports", type=Path, nargs="+", default=[],
                   help="read these run reports instead of running")
    p.add_argument("--keep", type=Path, default=None, help="keep the runs' outputs here")
    p.add_argument("selection", nargs=argparse.REMAINDER,
                   help="after --: reframe options selecting the checks")
    return p


def _run(selection: list[str], out: Path) -> Path:
    """One run of the selection under ``out``; its run report."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SENTINEL_OUTPUT": str(out)}
    if os.geteuid() == 0:  # this project's test machines only
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    reframe = str(Path(sys.executable).parent / "reframe")
    subprocess.run([reframe, "-C", str(ROOT / "config" / "settings.py"), "-c",
                    str(ROOT / "checks"), *selection, "-r"], cwd=out, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600)
    reports = sorted((out / "reports").glob("run-report-*.json"))
    if not reports:
        raise SystemExit(f"the run under {out} wrote no run report")
    return reports[-1]


def _samples(reports: list[Path]) -> dict[tuple[str, str], list[tuple[float, list, float]]]:
    """(test, variable) -> [(value, interval, stated coverage)] over the runs."""
    out: dict[tuple[str, str], list[tuple[float, list, float]]] = defaultdict(list)
    for path in reports:
        report = json.loads(path.read_text())
        for tc in report["runs"][-1]["testcases"]:
            intervals = tc.get("intervals") or {}
            stated = tc.get("interval_coverage") or {}
            for key, entry in (tc.get("perfvalues") or {}).items():
                name = key.split(":")[-1]
                if name in intervals and entry[0] is not None:
                    out[(tc["name"], name)].append((float(entry[0]), intervals[name],
                                                    float(stated.get(name, COVERAGE))))
    return out


def main() -> int:
    """Run (or read), then print stated against measured per family."""
    args = _parser().parse_args()
    selection = [a for a in args.selection if a != "--"]
    reports = list(args.reports)
    if not reports:
        base = args.keep or Path(tempfile.mkdtemp(prefix="sentinel-coverage-"))
        for i in range(args.runs):
            reports.append(_run(selection, base / f"run{i}"))
            print(f"run {i + 1}/{args.runs}: {reports[-1]}", file=sys.stderr, flush=True)
    tally: dict[tuple[str, float], list[int]] = defaultdict(lambda: [0, 0])
    for (test, name), samples in _samples(reports).items():
        if len(samples) < max(3, (2 * len(reports)) // 3):
            continue
        level = statistics.median(v for v, _, _ in samples)
        family = "host probe" if name.startswith("host_") else test.split()[0]
        for _, (lo, hi), stated in samples:
            cell = tally[(family, round(stated, 4))]
            cell[0] += 1
            cell[1] += lo <= level <= hi
    print(f"{len(reports)} runs; an interval covers when it holds the median of the runs")
    print(f"{'family':24} {'stated':>8} {'measured':>9} {'intervals':>10}")
    for (family, stated), (n, hit) in sorted(tally.items()):
        print(f"{family:24} {stated:8.1%} {hit / n:9.1%} {n:10d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
