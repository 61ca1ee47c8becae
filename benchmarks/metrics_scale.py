#!/usr/bin/env python3
"""The cost of ``sentinel metrics`` at site scale (run by hand): series count and time.

Reads a site written by ``benchmarks/report_scale.py --keep DIR`` (the
``tests/config/big_site.py`` nightly: its newest run report and its results
database of stored sessions) and times ``sentinel metrics`` on it,
``--repeat`` times. Prints the median wall time, the series in all and per
family, and the label values that grow with the site (test cases, nodes)::

    .venv/bin/python benchmarks/report_scale.py --sessions 30 --keep /tmp/site
    .venv/bin/python benchmarks/metrics_scale.py /tmp/site/site [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families


def _run(site: Path) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "sentinel.results.cli", "metrics",
           str(site / "reports" / "run-report-newest.json"), "--db",
           str(site / "var" / "results.db")]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1) or not proc.stdout:
        raise SystemExit(f"sentinel metrics failed (exit {proc.returncode}): "
                         f"{proc.stderr[-1500:]}")
    return took, proc.stdout


def main() -> None:
    """Print the time, the series and their families."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="a site directory of report_scale.py --keep")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    if not (args.site / "var" / "results.db").exists():
        raise SystemExit(f"{args.site}: no var/results.db (run report_scale.py --keep first)")
    runs = [_run(args.site) for _ in range(args.repeat)]
    text = runs[-1][1]
    per_family = Counter()
    cases = set()
    for family in text_string_to_metric_families(text):
        per_family[family.name] += len(family.samples)
        for s in family.samples:
            if "check" in s.labels:
                cases.add(tuple(s.labels.get(k, "") for k in (
                    "system", "partition", "environ", "check", "transport", "mapping",
                    "variant")))
    times = [t for t, _ in runs]
    print(f"sentinel metrics on {args.site}: median {statistics.median(times):.1f} s of "
          f"{args.repeat} (max {max(times):.1f} s), {len(text) / 1e6:.1f} MB of exposition")
    print(f"series: {sum(per_family.values())} in {len(per_family)} families, "
          f"{len(cases)} test cases")
    for name, count in per_family.most_common():
        print(f"  {name}: {count}")


if __name__ == "__main__":
    main()
