"""--distinct-cpus of the suite's benchmarks, built with each MPI and run directly.

Both ranks forced onto CPU 0 (Open MPI ``--cpu-set 0 --bind-to core``, MPICH
``-bind-to user:0,0``): the benchmark stops at start-up with one
SENTINEL_ERROR line and ``<program>: error: ...``; bound to a core each, it
runs to the end.
"""

import os
import shutil
import subprocess
import time

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import mpi_env, need_stack

pytestmark = pytest.mark.integration

STACKS = {
    "openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "-np", "2"],
                ["--cpu-set", "0", "--bind-to", "core"], ["--map-by", "core", "--bind-to", "core"]),
    "mpich": ("mpicc.mpich", ["mpiexec.mpich", "-np", "2"],
              ["-bind-to", "user:0,0"], ["-map-by", "core", "-bind-to", "core"]),
}
QUICK = {"pt2pt": ["--max-size", "1024", "--iterations", "10", "--repetitions", "2",
                   "--warmup", "1", "--windows", "2", "--window", "4"],
         "matching": ["--lengths", "10", "--messages", "1,4,8", "--iterations", "2",
                      "--repetitions", "2"]}


# The host as the benchmarks name it (SENTINEL_AFFINITY).
HOST = os.environ.get("SLURMD_NODENAME") or os.uname().nodename


@pytest.fixture(scope="module", params=sorted(STACKS))
def stack(request, tmp_path_factory):
    need_stack(request.param)
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 CPUs to bind two ranks to a core each")
    cc, launcher, shared, distinct = STACKS[request.param]
    src = tmp_path_factory.mktemp(request.param) / "bench"
    shutil.copytree(ROOT / "src" / "bench", src, ignore=shutil.ignore_patterns("build-*"))
    build = subprocess.run(["make", "-C", str(src), f"CC={cc}", "pt2pt", "matching",
                            "affinity"], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr  # -Wall -Wextra -Werror
    return src, launcher, shared, distinct


def run(stack, binding, bench, *args):
    src, launcher, _, _ = stack
    start = time.monotonic()
    p = subprocess.run([*launcher, *binding, str(src / bench / bench), *args],
                       capture_output=True, text=True, env=mpi_env(), timeout=120)
    return p, time.monotonic() - start


@pytest.mark.parametrize("bench", ["pt2pt", "matching", "affinity"])
def test_ranks_on_one_cpu_stop_before_measuring(stack, bench):
    p, wall = run(stack, stack[2], bench, *QUICK.get(bench, []), "--distinct-cpus")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stdout.splitlines() == [
        f"SENTINEL_ERROR bench={bench} what=shared_cpus host={HOST} "
        "ranks=0,1 cpus=0"]
    assert (f"{bench}: error: ranks 0 and 1 share CPU(s) 0 on host {HOST}; "
            "stopped before measuring") in p.stderr
    assert wall < 10  # the benchmark's part: ~0.1 s; Open MPI's mpirun exits ~2 s after a failure


@pytest.mark.parametrize("bench", ["pt2pt", "matching"])
def test_a_core_each_runs_to_the_end(stack, bench):
    p, _ = run(stack, stack[3], bench, *QUICK[bench], "--distinct-cpus")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == f"SENTINEL_DONE bench={bench}"


def test_without_the_option_shared_cpus_are_only_reported(stack):
    p, _ = run(stack, stack[2], "affinity")
    assert p.returncode == 0, p.stderr
    assert "SENTINEL_AFFINITY rank=1 host=" in p.stdout and p.stdout.count(" cpus=0\n") == 2


def test_option_is_documented_and_takes_no_value(stack):
    p, _ = run(stack, stack[3], "matching", "--help")
    assert "--distinct-cpus  before measuring, stop (exit 2)" in p.stderr
    p, _ = run(stack, stack[3], "affinity", "--distinct-cpus", "--bogus")
    assert "affinity: error: --bogus: missing value (or unknown option)" in p.stderr
