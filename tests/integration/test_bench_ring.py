"""The ring benchmark built with each MPI's wrapper and run directly, 1 to 4 ranks."""

import re
import subprocess
import time

import pytest

from sentinel.parsers.jobend import job_end_causes
from tests.conftest import ROOT
from tests.integration.conftest import BENCH_STACKS, build_bench, mpi_env

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module", params=sorted(BENCH_STACKS))
def bench(request, tmp_path_factory):
    launcher, exe = build_bench(request.param, "ring", tmp_path_factory.mktemp(request.param))
    # 3 and 4 ranks on this host's 2 cores: Open MPI refuses unless told
    extra = ["--oversubscribe"] if request.param == "openmpi" else []
    return [*launcher, *extra], exe


def run(bench, nranks, *args):
    launcher, exe = bench
    return subprocess.run([*launcher, "-np", str(nranks), exe, *args], capture_output=True,
                          text=True, env=mpi_env(), timeout=120)


@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_every_lap_brings_each_message_back_checked(bench, nranks):
    # 3 and 4 ranks oversubscribe this host's 2 cores: a functional run
    p = run(bench, nranks, "--laps", "50", "--repetitions", "2", "--size", "64")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    rings = [ln for ln in lines if ln.startswith("SENTINEL_RING ")]
    assert [ln.split()[1:5] for ln in rings] == [
        [f"ranks={nranks}", "bytes=64", "laps=50", f"repetition={r}"] for r in range(2)]
    assert all(float(ln.split("lap_us=")[1]) > 0 for ln in rings)
    assert sum(ln.startswith("SENTINEL_AFFINITY ") for ln in lines) == nranks
    assert lines[-1] == "SENTINEL_DONE bench=ring"


@pytest.mark.parametrize("args,message", [
    (["--size", "12"], "--size 12 is not a multiple of 8"),
    (["--laps", "0"], "--laps: 0 is out of range [1, 100000000]"),
    (["--bogus", "1"], "unknown option '--bogus'"),
])
def test_bad_arguments_are_named(bench, args, message):
    p = run(bench, 2, *args)
    assert p.returncode != 0
    assert f"ring: error: {message}" in p.stderr


def test_a_finalize_that_never_returns_is_stopped_by_the_watchdog(bench, tmp_path):
    # the library's shutdown deadlocks (tests/cluster/finalize_hangs.c): the
    # results are out, the watchdog ends each rank after its timeout
    launcher, exe = bench
    cc = next(cc for cc, run in BENCH_STACKS.values() if run[0] == launcher[0])
    hang = tmp_path / "finalize_hangs.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(hang),
                    str(ROOT / "tests" / "cluster" / "finalize_hangs.c")], check=True)
    preload = ["-x", "LD_PRELOAD"] if "mpirun.openmpi" in launcher[0] else []
    env = {**mpi_env(), "LD_PRELOAD": str(hang), "SENTINEL_FINALIZE_TIMEOUT": "3"}
    start = time.monotonic()
    p = subprocess.run([*launcher, *preload, "-np", "2", exe, "--laps", "10",
                        "--repetitions", "1"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert time.monotonic() - start < 60
    assert p.returncode != 0
    # the results are all out (Hydra may print its own banner after them on
    # stdout: under load, once in a full suite, MPICH's ended with its FAQ line)
    results = [ln for ln in p.stdout.splitlines() if ln.startswith("SENTINEL_")]
    assert results[-1] == "SENTINEL_DONE bench=ring"
    assert re.search(r"^ring: error: rank [01]: MPI_Finalize did not return within 3 s$",
                     p.stderr, re.MULTILINE), p.stderr
    causes = job_end_causes(p.stdout + p.stderr, "ring")
    assert re.fullmatch(r"ring had printed all its results \(SENTINEL_DONE\), so the ranks hung "
                        r"in MPI_Finalize: its watchdog stopped rank [01] after 3 s", causes[0])


def test_a_bad_finalize_timeout_stops_the_run_before_it_measures(bench):
    launcher, exe = bench
    p = subprocess.run([*launcher, "-np", "2", exe, "--laps", "10"], capture_output=True,
                       text=True, env={**mpi_env(), "SENTINEL_FINALIZE_TIMEOUT": "20s"},
                       timeout=120)
    assert p.returncode != 0
    assert ("ring: error: SENTINEL_FINALIZE_TIMEOUT='20s' is not a whole number of seconds "
            "from 0 (wait for ever) to 86400") in p.stderr
    assert "SENTINEL_RING " not in p.stdout
