#!/usr/bin/env python3
r"""Fidelity of the suite's pt2pt against OSU and IMB on every local transport (by hand).

Builds src/bench/pt2pt with each MPI's wrapper, then runs, round after
round, every transport of every MPI found here (Open MPI, MPICH, Intel MPI:
``sentinel.site.detect``), two ranks bound to cores: the suite's pt2pt
(standard-mode latency and windowed bandwidth, the check's defaults),
OSU's osu_latency and osu_bw built with the same MPI, and for Intel MPI its
IMB-MPI1 PingPong. The transports' order is shuffled in each round and the
programs' order alternates, so that a drift of the host (this VM's
cache-line round trip went from 100 to 400 ns and back within minutes)
falls on both sides of every ratio alike.

Per transport and round, four ratios, pt2pt over the standard benchmark:
the 8 B latency and the peak bandwidth against OSU; the 8 B latency and
the peak ping-pong bandwidth (size over half round trip, the same
definition on both sides) against IMB PingPong. Per cell it prints the
median ratio over the rounds with the 95 % interval of that median (order
statistics, ``sentinel.analysis.fits.median_interval``), widened by the
standard benchmark's print resolution (OSU prints 0.01 us), and a verdict:
``within`` 5 % (the whole interval inside 0.95 .. 1.05), ``OUTSIDE`` (the
whole interval beyond it) or ``unresolved`` (it straddles a bound, or
fewer than 6 rounds ran: more rounds). Every round's values go to
``--json`` as they come, so an interrupted run keeps what it measured.

    SENTINEL_OSU_OPENMPI=/path/osu-openmpi SENTINEL_OSU_MPICH=/path/osu-mpich \
    SENTINEL_OSU_INTELMPI=/path/osu-intelmpi \
        .venv/bin/python benchmarks/fidelity.py --rounds 10 --json fidelity.json

OSU is not in any registry this project can reach: build it from its
release source with each MPI (prefix or build tree) and name it in
``SENTINEL_OSU_<FAMILY>`` or ``--osu FAMILY=DIR``; a family without one is
compared with IMB only (Intel MPI) or left out, and the table says so.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sentinel.analysis.fits import median_interval
from sentinel.analysis.pt2pt import curves
from sentinel.errors import SentinelError
from sentinel.mpi.mappings import launcher_settings
from sentinel.mpi.transports import lookup
from sentinel.parsers import imb, osu
from sentinel.parsers.sentinel_output import parse, require_complete
from sentinel.paths import bench_dir
from sentinel.site import detect
from sentinel.site.binaries import LAYOUTS

TOLERANCE = 0.05
#: Below 6 rounds the range of the ratios covers their median with less than
#: 95 % (1 - 2^(1-n)): no verdict but "unresolved".
MIN_ROUNDS = 6
#: The ratios of a cell: (key, what is compared).
RATIOS = (("osu_lat8", "8 B latency vs osu_latency"), ("osu_peak", "peak bw vs osu_bw"),
          ("imb_lat8", "8 B latency vs IMB PingPong"),
          ("imb_peak", "peak ping-pong bw vs IMB PingPong"))


@dataclass
class Cell:
    """One MPI transport and what runs on it."""

    family: str
    transport: str
    env: dict[str, str]
    launch: list[str]
    pt2pt: list[str]
    osu_dir: str | None
    imb: str | None
    rounds: list[dict[str, float]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """``family/transport``."""
        return f"{self.family}/{self.transport}"


def osu_program(osu_dir: str, program: str) -> str:
    """An OSU program below an install prefix or build tree."""
    for sub in LAYOUTS["osu"]:
        path = Path(osu_dir) / sub / program
        if path.is_file():
            return str(path)
    raise SentinelError(f"{program} not found below {osu_dir} (looked in "
                        f"{', '.join(LAYOUTS['osu'])})")


def run(cmd: list[str], env: dict[str, str]) -> str:
    """Run one launch; a failure is an error with the tail of its stderr."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    except subprocess.TimeoutExpired as err:
        raise SentinelError(f"{' '.join(cmd)} still ran after {err.timeout:.0f} s") from err
    if proc.returncode != 0:
        raise SentinelError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-800:]}")
    return proc.stdout


def _stack_env(stack: detect.MpiStack) -> dict[str, str]:
    env = {**os.environ, **stack.env_vars}
    env["PATH"] = f"{stack.launcher_dir}:{os.environ['PATH']}"
    if "LD_LIBRARY_PATH" in stack.env_vars:
        env["LD_LIBRARY_PATH"] = ":".join(filter(None, [stack.env_vars["LD_LIBRARY_PATH"],
                                                        os.environ.get("LD_LIBRARY_PATH")]))
    return env


def cells_of(family: str, stack: detect.MpiStack | None, osu_dir: str | None, build: Path,
             args: argparse.Namespace, pattern: re.Pattern) -> list[Cell]:
    """The cells of one MPI: its pt2pt built into ``build``, one per transport."""
    if stack is None:
        print(f"# {family}: not installed here, left out")
        return []
    imb_exe = shutil.which("IMB-MPI1", path=stack.launcher_dir) if family == "intelmpi" else None
    if osu_dir is None and imb_exe is None:
        print(f"# {family}: no OSU build (set SENTINEL_OSU_{family.upper()}), left out")
        return []
    src = build / family
    shutil.copytree(bench_dir(), src, ignore=shutil.ignore_patterns("build-*"))
    run(["make", "-s", "-C", str(src), f"CC={stack.cc}", "pt2pt"], _stack_env(stack))
    pt2pt = [str(src / "pt2pt" / "pt2pt"), "--metrics", "latency,bw", "--modes", "standard",
             "--max-size", str(args.max_size), "--repetitions", str(args.repetitions)]
    out = []
    for name in stack.transports:
        if not pattern.search(f"{family}/{name}"):
            continue
        transport = lookup(family, name)
        opts, place_env = launcher_settings(family, "core", "mpirun")
        env = {**_stack_env(stack), **transport.env, **place_env}
        if family == "openmpi":
            opts += [x for var in transport.env if not var.startswith("OMPI_")
                     for x in ("-x", var)]
        out.append(Cell(family, name, env, ["mpirun", "-np", "2", *opts], pt2pt, osu_dir,
                        imb_exe))
    return out


def _decimals(text: str, size: int, column: int) -> int:
    """Digits after the point in column ``column`` of the row of ``size`` bytes."""
    for line in text.splitlines():
        tokens = line.split()
        if len(tokens) > column and tokens[0] == str(size):
            return len(tokens[column].partition(".")[2])
    raise SentinelError(f"no row for {size} B in:\n{text[-400:]}")


def measure(cell: Cell, flip: bool) -> dict[str, float]:
    """One round on ``cell``: the raw values and the print resolution of each."""
    programs = ["pt2pt", "osu_latency", "osu_bw", "imb"]
    if flip:
        programs.reverse()
    values: dict[str, float] = {}
    for prog in programs:
        if prog == "pt2pt":
            out = parse(run([*cell.launch, *cell.pt2pt], cell.env), "pt2pt")
            require_complete(out, "pt2pt")
            table = curves(out)
            lat, bw = table[("latency", "standard")], table[("bw", "standard")]
            values["pt2pt_lat8"] = lat[8]
            values["pt2pt_peak"] = max(bw.values())
            values["pt2pt_pp_peak"] = max(s / t for s, t in lat.items() if s > 0)
        elif prog.startswith("osu") and cell.osu_dir:
            text = run([*cell.launch, osu_program(cell.osu_dir, prog)], cell.env)
            if prog == "osu_latency":
                values["osu_lat8"] = osu.parse(text, prog).column("Latency")[8]
                values["osu_lat8_quantum"] = 0.5 * 10.0 ** -_decimals(text, 8, 1)
            else:
                values["osu_peak"] = max(osu.parse(text, prog).column("Bandwidth").values())
        elif prog == "imb" and cell.imb:
            text = run([*cell.launch, cell.imb, "PingPong", "-msglog", "0:22"], cell.env)
            table = imb.parse(text, "IMB-MPI1").table("PingPong")
            times = table.column("t[usec]")
            values["imb_lat8"] = times[8]
            values["imb_lat8_quantum"] = 0.5 * 10.0 ** -_decimals(text, 8, 2)
            values["imb_pp_peak"] = max(s / t for s, t in times.items() if s > 0)
    return values


def ratios(values: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Each ratio of one round with its relative print resolution."""
    out = {}
    if "osu_lat8" in values:
        out["osu_lat8"] = (values["pt2pt_lat8"] / values["osu_lat8"],
                           values["osu_lat8_quantum"] / values["osu_lat8"])
        out["osu_peak"] = (values["pt2pt_peak"] / values["osu_peak"], 0.0)
    if "imb_lat8" in values:
        out["imb_lat8"] = (values["pt2pt_lat8"] / values["imb_lat8"],
                           values["imb_lat8_quantum"] / values["imb_lat8"])
        out["imb_peak"] = (values["pt2pt_pp_peak"] / values["imb_pp_peak"], 0.0)
    return out


def verdict(samples: list[float], resolution: float = 0.0,
            tolerance: float = TOLERANCE) -> tuple[float, float, float, str]:
    """(median, low, high, verdict) of one cell's per-round ratios.

    The interval is the median's (order statistics), widened by the relative
    print ``resolution`` of the standard benchmark's value; fewer than
    :data:`MIN_ROUNDS` rounds give no verdict.
    """
    if not samples:
        raise SentinelError("no rounds measured")
    lo, hi = median_interval(samples)
    lo, hi = lo * (1 - resolution), hi * (1 + resolution)
    if len(samples) < MIN_ROUNDS:
        word = "unresolved"
    elif 1 - tolerance <= lo and hi <= 1 + tolerance:
        word = "within"
    elif hi < 1 - tolerance or lo > 1 + tolerance:
        word = "OUTSIDE"
    else:
        word = "unresolved"
    return statistics.median(samples), lo, hi, word


def cell_verdicts(cell: Cell) -> dict[str, tuple[float, float, float, str]]:
    """Ratio key -> (median, low, high, verdict) over the cell's rounds."""
    out = {}
    for key, _ in RATIOS:
        per = [ratios(v)[key] for v in cell.rounds if key in ratios(v)]
        if per:
            out[key] = verdict([r for r, _ in per], max(q for _, q in per))
    return out


def table(cells: list[Cell]) -> list[str]:
    """The result table: a row per transport, a column per ratio."""
    lines = [f"{'MPI/transport':<22} {'rounds':>6}  " + "  ".join(
        f"{key:<32}" for key, _ in RATIOS)]
    for cell in cells:
        found = cell_verdicts(cell)
        cols = [f"{f'{m:.3f} [{lo:.3f}, {hi:.3f}] {w}' if w else '-':<32}"
                for m, lo, hi, w in (found.get(k, (0, 0, 0, "")) for k, _ in RATIOS)]
        lines.append(f"{cell.name:<22} {len(cell.rounds):>6}  " + "  ".join(cols))
    return lines


def medians(cells: list[Cell]) -> list[str]:
    """The raw medians behind the ratios (us, MB/s)."""
    keys = ("pt2pt_lat8", "osu_lat8", "imb_lat8", "pt2pt_peak", "osu_peak", "pt2pt_pp_peak",
            "imb_pp_peak")
    lines = [f"{'MPI/transport':<22} " + " ".join(f"{k:>13}" for k in keys)]
    for cell in cells:
        row = []
        for k in keys:
            vals = [v[k] for v in cell.rounds if k in v]
            row.append(f"{statistics.median(vals):13.4g}" if vals else f"{'-':>13}")
        lines.append(f"{cell.name:<22} " + " ".join(row))
    return lines


def _osu_dirs(given: list[str]) -> dict[str, str]:
    dirs = {f: os.environ[f"SENTINEL_OSU_{f.upper()}"] for f in ("openmpi", "mpich", "intelmpi")
            if os.environ.get(f"SENTINEL_OSU_{f.upper()}")}
    for item in given:
        family, sep, path = item.partition("=")
        if not sep or family not in ("openmpi", "mpich", "intelmpi"):
            raise SentinelError(f"--osu {item!r}: expected FAMILY=DIR, FAMILY one of "
                                "openmpi, mpich, intelmpi")
        dirs[family] = path
    return dirs


def fidelity(args: argparse.Namespace) -> int:
    """Build, run the rounds, print the tables; 0 when every cell is within."""
    dirs = _osu_dirs(args.osu)
    pattern = re.compile(args.transports)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        stacks = {s.family: s for s in detect.local_stacks() if s.name == s.family}
        cells = [c for f in args.families.split(",")
                 for c in cells_of(f, stacks.get(f), dirs.get(f), Path(tmp), args, pattern)]
        if not cells:
            raise SentinelError("nothing to compare: no MPI with an OSU build or IMB here")
        for r in range(args.rounds):
            order = cells[:]
            rng.shuffle(order)
            for cell in order:
                cell.rounds.append(measure(cell, flip=r % 2 == 1))
            if args.json:
                Path(args.json).write_text(json.dumps(
                    {c.name: c.rounds for c in cells}, indent=1))
            print(f"# round {r + 1} of {args.rounds} done", flush=True)
    print(f"# pt2pt / standard benchmark, median over rounds [95 % interval], verdict "
          f"against {TOLERANCE:.0%}")
    print("\n".join(table(cells)))
    print("\n# medians over the rounds: latency us, bandwidth MB/s")
    print("\n".join(medians(cells)))
    words = [w for c in cells for _, _, _, w in cell_verdicts(c).values()]
    return 0 if all(w == "within" for w in words) else 1


def main() -> int:
    """Parse the command line; errors are one line, exit 2."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="openmpi,mpich,intelmpi")
    ap.add_argument("--transports", default=".", help="regex over FAMILY/TRANSPORT")
    ap.add_argument("--osu", action="append", default=[], metavar="FAMILY=DIR",
                    help="OSU prefix or build tree (default: $SENTINEL_OSU_<FAMILY>)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--repetitions", type=int, default=10, help="pt2pt's (the check's 10)")
    ap.add_argument("--max-size", type=int, default=4194304,
                    help="pt2pt's largest size; OSU runs its own 0 to 4 MiB")
    ap.add_argument("--seed", type=int, default=0, help="of the transports' order")
    ap.add_argument("--json", help="every round's values, written after each round")
    args = ap.parse_args()
    try:
        return fidelity(args)
    except SentinelError as err:
        print(f"fidelity: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
