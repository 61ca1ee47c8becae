"""The matching benchmark built with each MPI's wrapper and run directly."""

import subprocess

import pytest

from tests.integration.conftest import BENCH_STACKS, build_bench, mpi_env

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module", params=sorted(BENCH_STACKS))
def bench(request, tmp_path_factory):
    return build_bench(request.param, "matching", tmp_path_factory.mktemp(request.param))


def run(bench, nranks, *args):
    launcher, exe = bench
    return subprocess.run([*launcher, "-np", str(nranks), exe, *args], capture_output=True,
                          text=True, env=mpi_env(), timeout=120)


def test_small_run_is_complete_and_verified(bench):
    p = run(bench, 2, "--lengths", "10,1000", "--batches", "fixed", "--messages", "1,4,8",
            "--checkpoint", "4", "--iterations", "3", "--repetitions", "2",
            "--patterns", "pingpong,umq,prq")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert sum(ln.startswith("SENTINEL_MATCH ") for ln in lines) == 2 * 3 * 2 * 3
    assert not any(ln.startswith("SENTINEL_MATCH_SWEEP") for ln in lines)
    assert lines[-1] == "SENTINEL_DONE bench=matching"


def test_adaptive_batches_double_then_measure_a_grid(bench):
    p = run(bench, 2, "--lengths", "10", "--algorithms", "tag", "--patterns", "umq",
            "--max-messages", "64", "--budget", "2", "--iterations", "3", "--repetitions", "3")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    probes = [int(ln.split(" n=")[1].split()[0]) for ln in lines
              if ln.startswith("SENTINEL_MATCH_PROBE ")]
    assert probes == [8, 16, 32, 64][:len(probes)] and probes  # doubling from 8, capped
    sweep = next(ln for ln in lines if ln.startswith("SENTINEL_MATCH_SWEEP "))
    n_max = int(sweep.split("n_max=")[1].split()[0])
    assert n_max == probes[-1]
    assert sweep.split("stop=")[1].split()[0] in ("resolved", "cap", "budget")
    grid = sorted(int(ln.split(" n=")[1].split()[0]) for ln in lines
                  if ln.startswith("SENTINEL_MATCH "))
    assert grid == sorted({max(1, n_max * k // 8) for k in range(1, 9)} | {45})
    # every fitted line carries the medians' intervals
    assert all(" iot_lo_us=" in ln and " noise_us=" in ln for ln in lines
               if ln.startswith("SENTINEL_MATCH "))


@pytest.mark.parametrize("args,message", [
    (["--messages", "0"], "--messages: 0 is out of range [1, 4096]"),
    (["--lengths", "10,x"], "--lengths: 'x' is not an integer"),
    (["--patterns", "pingpong,ring"],
     "--patterns: unknown value 'ring' (allowed: pingpong umq prq)"),
    (["--iterations"], "--iterations: missing value"),
    (["--batches", "sometimes"], "--batches: unknown value 'sometimes' (allowed: adaptive fixed)"),
    (["--max-messages", "4"], "--max-messages: 4 is out of range [8, 4096]"),
    (["--bogus", "1"], "unknown option '--bogus'"),
])
def test_bad_arguments_are_named(bench, args, message):
    p = run(bench, 2, *args)
    assert p.returncode != 0
    assert f"matching: error: {message}" in p.stderr


def test_one_rank_is_refused(bench):
    p = run(bench, 1)
    assert p.returncode != 0
    assert "matching: error: needs at least 2 MPI ranks, got 1" in p.stderr


def test_pt2pt_argument_validation(bench):
    launcher, exe = bench
    pt2pt = exe.replace("matching/matching", "pt2pt/pt2pt")
    p = subprocess.run([*launcher, "-np", "2", pt2pt, "--min-size", "64", "--max-size", "8"],
                       capture_output=True, text=True, env=mpi_env(), timeout=60)
    assert p.returncode != 0
    assert "pt2pt: error: --min-size 64 is larger than --max-size 8" in p.stderr


def test_pt2pt_bandwidth_counts_windows(bench):
    launcher, exe = bench
    pt2pt = exe.replace("matching/matching", "pt2pt/pt2pt")
    p = subprocess.run([*launcher, "-np", "2", pt2pt, "--metrics", "bw,bibw", "--max-size",
                        "131072", "--min-size", "65536", "--windows", "3", "--windows-large",
                        "2", "--window", "4", "--repetitions", "2"],
                       capture_output=True, text=True, env=mpi_env(), timeout=60)
    assert p.returncode == 0, p.stderr
    assert "windows=3 windows_large=2" in p.stdout
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("SENTINEL_PT2PT ")]
    assert [ln.split()[1:4] for ln in lines] == [
        ["metric=bw", "mode=standard", "bytes=65536"],
        ["metric=bibw", "mode=standard", "bytes=65536"],
        ["metric=bw", "mode=standard", "bytes=131072"],
        ["metric=bibw", "mode=standard", "bytes=131072"]]
    p = subprocess.run([*launcher, "-np", "2", pt2pt, "--windows-large", "0"],
                       capture_output=True, text=True, env=mpi_env(), timeout=60)
    assert "pt2pt: error: --windows-large: 0 is out of range [1, 100000000]" in p.stderr
