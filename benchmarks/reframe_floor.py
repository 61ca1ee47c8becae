#!/usr/bin/env python3
"""What ReFrame alone costs to list a site of the example big site's shape (run by hand).

Writes a trivial check (``--checks`` variants, each with an
environment-scoped build fixture, valid on every partition of
``tests/config/big_site.py`` in one environment: the shape of the suite's
checks there) and times ``reframe -l`` on it with the suite's
configuration, first with ReFrame as installed, then with the suite's
ReFrame patches (``sentinel.rfm.compat``) installed by the check file::

    .venv/bin/python benchmarks/reframe_floor.py [--checks 3650]

The figures say how much of the suite's listing time is ReFrame's per-test
work, which no change to the suite's own checks can remove.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFRAME = str(Path(sys.executable).parent / "reframe")

CHECK = '''
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, sanity_function
{patches}

class FloorBuild(rfm.CompileOnlyRegressionTest):
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    build_system = "SingleSource"
    sourcepath = "floor.c"


@rfm.simple_test
class FloorCheck(rfm.RunOnlyRegressionTest):
    variant = parameter(range({checks}))
    build = fixture(FloorBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["openmpi"]
    executable = "true"

    @sanity_function
    def ran(self):
        return sn.assert_true(True)
'''
PATCHES = "from sentinel.rfm import compat\ncompat.install()"


def _listing(check: Path, out: Path) -> tuple[float, int]:
    """Seconds of ``reframe -l`` on ``check``, and the checks it listed."""
    args = [REFRAME, "-C", str(ROOT / "config" / "settings.py"), "-C",
            str(ROOT / "tests" / "config" / "big_site.py"), "--system", "big_site",
            "-c", str(check), "-l"]
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "SENTINEL_OUTPUT": str(out)})
    took = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"reframe failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took, len(re.findall(r"^- FloorCheck", proc.stdout, re.MULTILINE))


def main(argv: list[str]) -> int:
    """Print the two listing times."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checks", type=int, default=3650)
    args = p.parse_args(argv)
    if args.checks < 1:
        p.error(f"--checks {args.checks}: give at least one")
    with tempfile.TemporaryDirectory(prefix="sentinel-floor-") as tmp:
        for label, patches in (("ReFrame as installed", ""),
                               ("with the suite's patches", PATCHES)):
            check = Path(tmp) / f"floor_{bool(patches):d}.py"
            check.write_text(CHECK.format(checks=args.checks, patches=patches))
            took, listed = _listing(check, Path(tmp))
            print(f"{label:<25} -l {took:6.1f} s  {listed} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
