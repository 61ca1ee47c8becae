#!/usr/bin/env python3
r"""Fidelity of the suite's pt2pt against OSU on the same transport (run by hand).

Builds src/bench/pt2pt with the MPI's wrapper, then alternates runs of
pt2pt (standard-mode latency, windowed bandwidth) and osu_latency / osu_bw
on the same transport and rank mapping, and prints the pt2pt/OSU ratio per
size: the median over --rounds alternating rounds. Target: within 5% at 8 B
and at the bandwidth peak.

    .venv/bin/python benchmarks/fidelity.py --mpi openmpi --transport ob1-vader \\
        --osu-dir /path/to/osu/prefix-or-build-tree [--rounds 3] [--max-size 4194304]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from sentinel.analysis.pt2pt import curves
from sentinel.errors import SentinelError
from sentinel.mpi.placement import launcher_settings
from sentinel.mpi.transports import lookup
from sentinel.parsers import osu
from sentinel.parsers.sentinel_output import parse, require_complete
from sentinel.paths import bench_dir, launchers_dir, repo_root
from sentinel.site import detect
from sentinel.site.binaries import LAYOUTS

TOLERANCE = 0.05


def stack_for(family: str) -> detect.MpiStack:
    """The detected MPI installation of ``family``."""
    found = {"openmpi": lambda: detect.openmpi(launchers_dir()),
             "mpich": lambda: detect.mpich(launchers_dir()),
             "intelmpi": lambda: detect.intelmpi(repo_root() / ".venv-impi")}[family]()
    if found is None:
        raise SentinelError(f"{family} is not installed here")
    return found


def osu_program(osu_dir: str, program: str) -> str:
    """An OSU program below an install prefix or build tree."""
    for sub in LAYOUTS["osu"]:
        path = Path(osu_dir) / sub / program
        if path.is_file():
            return str(path)
    raise SentinelError(f"{program} not found below {osu_dir}")


def run(cmd: list[str], env: dict[str, str]) -> str:
    """Run one launch; a failure is an error with the tail of its stderr."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise SentinelError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-800:]}")
    return proc.stdout


def ratio_table(ours: dict[int, list[float]], theirs: dict[int, list[float]]) -> list[tuple]:
    """(size, our median, OSU median, ratio) for every size both measured."""
    rows = []
    for size in sorted(set(ours) & set(theirs)):
        a, b = statistics.median(ours[size]), statistics.median(theirs[size])
        rows.append((size, a, b, a / b if b else float("nan")))
    return rows


def main() -> int:
    """Parse the command line; errors are one line, exit 2."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", required=True, choices=("openmpi", "mpich", "intelmpi"))
    ap.add_argument("--transport", required=True)
    ap.add_argument("--mapping", default="core")
    ap.add_argument("--osu-dir", required=True, help="OSU install prefix or build tree")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-size", type=int, default=4194304,
                    help="pt2pt's largest size; OSU always runs its own 0 to 4 MiB")
    args = ap.parse_args()
    try:
        return fidelity(args)
    except SentinelError as err:
        print(f"fidelity: error: {err}", file=sys.stderr)
        return 2


def fidelity(args: argparse.Namespace) -> int:
    """Build pt2pt, alternate it with OSU and report the ratios."""
    stack = stack_for(args.mpi)
    transport = lookup(args.mpi, args.transport)
    opts, place_env = launcher_settings(args.mpi, args.mapping, "mpirun")
    env = {**os.environ, **stack.env_vars, **transport.env, **place_env}
    env["PATH"] = f"{stack.launcher_dir}:{env['PATH']}"
    if "LD_LIBRARY_PATH" in stack.env_vars:
        env["LD_LIBRARY_PATH"] = f"{stack.env_vars['LD_LIBRARY_PATH']}:" \
                                 f"{os.environ.get('LD_LIBRARY_PATH', '')}"
    if args.mpi == "openmpi":
        opts += [x for var in transport.env if not var.startswith("OMPI_") for x in ("-x", var)]
    launch = ["mpirun", "-np", "2", *opts]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "bench"
        shutil.copytree(bench_dir(), src, ignore=shutil.ignore_patterns("build-*"))
        run(["make", "-s", "-C", str(src), f"CC={stack.cc}", "pt2pt"], env)
        pt2pt = [str(src / "pt2pt" / "pt2pt"), "--metrics", "latency,bw", "--modes", "standard",
                 "--max-size", str(args.max_size)]
        lat = {"ours": {}, "osu": {}}
        bw = {"ours": {}, "osu": {}}
        for _ in range(args.rounds):  # alternate to spread drift over both
            out = parse(run([*launch, *pt2pt], env), "pt2pt")
            require_complete(out, "pt2pt")
            table = curves(out)
            for s, v in table[("latency", "standard")].items():
                lat["ours"].setdefault(s, []).append(v)
            for s, v in table[("bw", "standard")].items():
                bw["ours"].setdefault(s, []).append(v)
            for prog, col, dest in (("osu_latency", "Latency", lat), ("osu_bw", "Bandwidth", bw)):
                # OSU's own range (0 to 4 MiB): OSU 5.x has no -m for these.
                text = run([*launch, osu_program(args.osu_dir, prog)], env)
                for s, v in osu.parse(text, prog).column(col).items():
                    dest["osu"].setdefault(s, []).append(v)
    return report(args, ratio_table(lat["ours"], lat["osu"]), ratio_table(bw["ours"], bw["osu"]))


def report(args: argparse.Namespace, lat: list[tuple], bw: list[tuple]) -> int:
    """Print the ratio table and the verdict; 0 when within the tolerance."""
    print(f"# {args.mpi} {args.transport} {args.mapping}: pt2pt / OSU, median of "
          f"{args.rounds} alternating rounds")
    print(f"{'bytes':>9} {'lat pt2pt':>10} {'lat OSU':>9} {'ratio':>6} "
          f"{'bw pt2pt':>10} {'bw OSU':>9} {'ratio':>6}")
    bw_by = {r[0]: r for r in bw}
    for size, a, b, r in lat:
        x = bw_by.get(size)
        tail = f"{x[1]:10.1f} {x[2]:9.1f} {x[3]:6.3f}" if x else ""
        print(f"{size:9d} {a:10.3f} {b:9.3f} {r:6.3f} {tail}")
    at8 = next(r for r in lat if r[0] == 8)[3]
    peak = max(r[1] for r in bw) / max(r[2] for r in bw)
    ok = abs(at8 - 1) <= TOLERANCE and abs(peak - 1) <= TOLERANCE
    osu8 = next(r for r in lat if r[0] == 8)[2]
    print(f"latency ratio at 8 B: {at8:.3f}; peak bandwidth ratio: {peak:.3f} -> "
          f"{'within' if ok else 'NOT within'} {TOLERANCE:.0%}")
    # OSU prints latency with two decimals: that rounding alone moves the 8 B ratio.
    print(f"OSU's 0.01 us print resolution is +/-{0.005 / osu8:.1%} of its 8 B latency")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
