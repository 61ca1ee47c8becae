#!/usr/bin/env python3
"""What every ReFrame start costs on this host (run by hand): detection and a small listing.

The ``local`` system detects this host's MPI stacks at configuration load
(``sentinel.site.detect.local_stacks``), or reuses a detection of the last
ten minutes (``sentinel.site.detect_cache``); the test suite starts ReFrame
some hundreds of times. Prints the median wall time of the detection alone
and of a one-file listing, detecting each time and from the cache::

    .venv/bin/python benchmarks/startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFRAME = str(Path(sys.executable).parent / "reframe")
LISTING = [REFRAME, "-C", str(ROOT / "config" / "settings.py"), "-c",
           str(ROOT / "checks" / "pt2pt.py"), "--system", "local:cpu", "--mode", "quick",
           "-n", "Pt2ptCheck.*transport=(ob1-tcp|ob1-vader).*mapping=core", "-l"]
DETECTION = [sys.executable, "-c", "from sentinel.site import detect; detect.local_stacks()"]


def _median_wall(cmd: list[str], repeat: int, cache: str = "off") -> float:
    env = {**os.environ, "SENTINEL_DETECT_CACHE": cache}
    took = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, timeout=300, env=env)
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def main() -> None:
    """Print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    if repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    detection = _median_wall(DETECTION, repeat)
    listing = _median_wall(LISTING, repeat)
    with tempfile.TemporaryDirectory(prefix="sentinel-detect-") as cache:
        _median_wall(LISTING, 1, cache)  # the detection the others reuse
        cached = _median_wall(LISTING, repeat, cache)
    print(f"detection of the local stacks (python start included): {detection:.2f} s")
    print(f"one-file listing on local:cpu: {listing:.2f} s "
          f"({detection / listing:.0%} of it detection)")
    print(f"the same listing from a detection of the last ten minutes: {cached:.2f} s")


if __name__ == "__main__":
    main()
