#!/usr/bin/env python3
r"""What pt2pt's payload verification costs a sweep (run by hand).

Builds ``src/bench/pt2pt`` with this host's Open MPI and MPICH wrappers
(``mpicc.openmpi``, ``mpicc.mpich``) in a temporary directory, then runs the
ping-pong sweep (standard mode, 0 B to ``--max-size``, two ranks on CPUs 0
and 1 over the MPI's shared-memory transport) without and with
``--verify N``, alternating, ``--repeats`` times each, and prints the median
wall time of each and the verified sweep's extra time.

    .venv/bin/python benchmarks/verify_cost.py --repeats 5 --verify 10
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Each MPI: its wrapper, its launcher and options (two ranks, one a core),
#: and the environment selecting its shared-memory transport.
MPIS = {
    "openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "-np", "2", "--bind-to", "core"],
                {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader"}),
    "mpich": ("mpicc.mpich", ["mpiexec.mpich", "-n", "2", "-bind-to", "core"],
              {"UCX_TLS": "sm,self"}),
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="sweeps each way (default 5)")
    p.add_argument("--verify", type=int, default=10,
                   help="verified messages a size and direction (default 10, the nightly's)")
    p.add_argument("--max-size", type=int, default=4194304, help="largest size (default 4 MiB)")
    p.add_argument("--mpi", choices=sorted(MPIS), action="append",
                   help="the MPIs (default: each whose wrapper is installed)")
    return p


def _build(cc: str, where: Path) -> Path:
    src = where / "bench"
    shutil.copytree(ROOT / "src" / "bench", src, ignore=shutil.ignore_patterns("build-*"))
    subprocess.run(["make", "-C", str(src), f"CC={cc}", "pt2pt"], check=True,
                   capture_output=True)
    return src / "pt2pt" / "pt2pt"


def _sweep(launch: list[str], env: dict[str, str], program: Path, max_size: int,
           verify: int) -> float:
    """Wall seconds of one sweep; a failed run stops the benchmark with its output."""
    cmd = [*launch, str(program), "--modes", "standard", "--max-size", str(max_size),
           "--verify", str(verify)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    took = time.perf_counter() - start
    if proc.returncode != 0 or "SENTINEL_DONE" not in proc.stdout:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    if verify and " errors=0" not in proc.stdout:
        raise SystemExit(f"{' '.join(cmd)}: no intact verification line")
    return took


def main() -> None:
    """Measure and print each MPI's sweep without and with verification."""
    args = _parser().parse_args()
    chosen = args.mpi or [m for m, (cc, _, _) in MPIS.items() if shutil.which(cc)]
    env = {**os.environ}
    if os.geteuid() == 0:  # a test machine: never in a site config
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    print(f"pt2pt standard sweep 0 B .. {args.max_size} B, two ranks, {args.repeats} runs each")
    for mpi in chosen:
        cc, launch, transport = MPIS[mpi]
        with tempfile.TemporaryDirectory() as tmp:
            program = _build(cc, Path(tmp))
            times: dict[int, list[float]] = {0: [], args.verify: []}
            for _ in range(args.repeats):
                for verify in times:
                    times[verify].append(_sweep(launch, {**env, **transport}, program,
                                                args.max_size, verify))
        plain, checked = (statistics.median(times[v]) for v in (0, args.verify))
        print(f"{mpi}: {plain:.2f} s without, {checked:.2f} s with --verify {args.verify} "
              f"(+{checked - plain:.2f} s, {100 * (checked - plain) / plain:+.1f} %; ranges "
              f"{min(times[0]):.2f}-{max(times[0]):.2f} and "
              f"{min(times[args.verify]):.2f}-{max(times[args.verify]):.2f} s)")


if __name__ == "__main__":
    main()
