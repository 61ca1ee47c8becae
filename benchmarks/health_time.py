#!/usr/bin/env python3
"""What the node-local health check costs on this host (run by hand): ``sentinel health``.

Slurm kills a ``HealthCheckProgram`` that runs past 60 s; the suite's
target is 30 s. Runs ``sentinel health --system local:cpu`` (the health
mode: a 64 B ping-pong over each transport, verified and judged, with the
host probe; the benchmarks built as part of it) ``--repeat`` times for one
transport of each MPI and for every transport offered, and prints the
median wall time of each and the test cases it judged::

    .venv/bin/python benchmarks/health_time.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

SELECTIONS = {
    "one transport (Open MPI ob1-vader)": ["-p", "openmpi", "-S",
                                          "transports=openmpi/ob1-vader"],
    "every transport of every MPI here": [],
}


def _run(selection: list[str]) -> tuple[float, str]:
    env = dict(os.environ)
    if os.geteuid() == 0:  # this host's measurement only, never a site's health check
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory(prefix="sentinel-health-") as out:
        env["SENTINEL_OUTPUT"] = out
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "health",
                               "--system", "local:cpu", "--node", "here", "--", *selection],
                              capture_output=True, text=True, env=env, timeout=600)
        took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"sentinel health failed (exit {proc.returncode}): "
                         f"{(proc.stdout + proc.stderr)[-1500:]}")
    cases = re.search(r"(\d+) test case\(s\)", proc.stdout)
    return took, cases.group(1) if cases else "?"


def main() -> None:
    """Print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    if repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    for label, selection in SELECTIONS.items():
        runs = [_run(selection) for _ in range(repeat)]
        times = [t for t, _ in runs]
        print(f"{label}: {runs[0][1]} test case(s), median {statistics.median(times):.1f} s "
              f"of {repeat} (max {max(times):.1f} s)", flush=True)


if __name__ == "__main__":
    main()
