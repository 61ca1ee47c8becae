#!/usr/bin/env python3
"""The suite's own cost at site scale (run by hand): listing and planning time, generated cases.

On the 10-partition, 3-MPI fixture ``tests/config/big_site.py``, runs the
real ReFrame and prints, for the full matrix and for each mode, the wall
time of ``-l`` and the checks it lists per class; then, for each mode of
``--plan``, the wall time of ``sentinel plan`` of the whole site and the
jobs it plans::

    .venv/bin/python benchmarks/site_scale.py [--modes nightly,acceptance] [--plan nightly]
                                              [--repeat 3]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFRAME = str(Path(sys.executable).parent / "reframe")
BASE = ["-C", str(ROOT / "config" / "settings.py"), "-C", str(ROOT / "tests" / "config" /
        "big_site.py"), "--system", "big_site", "-c", str(ROOT / "checks")]


def _listing(mode: str | None, out: Path) -> tuple[float, collections.Counter]:
    args = [REFRAME, *BASE, *(["--mode", mode] if mode else []), "-l"]
    env = {**os.environ, "SENTINEL_OUTPUT": str(out)}
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    took = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"reframe failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took, collections.Counter(re.findall(r"^- (\w+) ", proc.stdout, re.MULTILINE))


def _plan(mode: str, out: Path) -> tuple[float, str]:
    args = [str(Path(REFRAME).parent / "sentinel"), "plan", "-C",
            str(ROOT / "tests" / "config" / "big_site.py"), "--system", "big_site",
            "--mode", mode, "--json"]
    env = {**os.environ, "SENTINEL_OUTPUT": str(out)}
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: a partition over its budget, said in the plan
        raise SystemExit(f"sentinel plan failed ({proc.returncode}): {proc.stderr[-2000:]}")
    plan = json.loads(proc.stdout)
    jobs = sum(p["jobs"] for p in plan["partitions"])
    return took, f"{jobs} jobs over {len(plan['partitions'])} partitions"


def main(argv: list[str]) -> int:
    """Print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", default="nightly,acceptance")
    p.add_argument("--plan", default="nightly", help="modes whose sentinel plan is timed "
                   "('' for none)")
    p.add_argument("--repeat", type=int, default=1, help="listings per row (median)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sentinel-scale-") as tmp:
        for mode in [None, *filter(None, args.modes.split(","))]:
            runs = [_listing(mode, Path(tmp)) for _ in range(args.repeat)]
            took, counts = statistics.median(r[0] for r in runs), runs[-1][1]
            detail = ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
            print(f"{mode or 'all':<11} -l {took:6.1f} s  {sum(counts.values()):5d} checks "
                  f"({detail})")
        for mode in filter(None, args.plan.split(",")):
            runs = [_plan(mode, Path(tmp)) for _ in range(args.repeat)]
            took = statistics.median(r[0] for r in runs)
            print(f"{mode:<11} plan {took:6.1f} s  {runs[-1][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
