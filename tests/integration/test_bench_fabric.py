"""The fabric benchmark's pairs sweep run directly: its suspect links measured again alone.

Six ranks of Open MPI on this host (one "node", so a functional run: the
judging is tested on the namespaced nodes, test_fabric_culprits_local.py and
test_netcluster_local.py, and on their captured sweeps).
"""

import re
import subprocess

import pytest

from tests.integration.conftest import build_bench, mpi_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    launcher, exe = build_bench("openmpi", "fabric", tmp_path_factory.mktemp("fabric"),
                                target="fabric")
    return [*launcher, "--oversubscribe"], exe


def run(bench, nranks, *args):
    launcher, exe = bench
    return subprocess.run([*launcher, "-np", str(nranks), exe, "--mode", "pairs", *args],
                          capture_output=True, text=True, env=mpi_env(), timeout=120)


@pytest.mark.parametrize("confirm", [0, 2, 30])
def test_the_suspects_measured_again_are_at_most_confirm_and_counted(bench, confirm):
    # six ranks on two cores at a factor of 1.2: 6-17 of the 30 directed pairs
    # were suspect in nine runs, so the cap of 2 is what limits them
    p = run(bench, 6, "--iterations", "4", "--latency-iterations", "50",
            "--confirm", str(confirm), "--bw-factor", "1.2", "--latency-factor", "1.2")
    assert p.returncode == 0, p.stderr
    again = re.findall(r"^SENTINEL_FABRIC_CONFIRM src=(\d) dst=(\d) bytes=1048576 "
                       r"bw_mbs=(\S+) latency_us=(\S+)$", p.stdout, re.M)
    summary = re.findall(r"^SENTINEL_FABRIC_CONFIRMS suspects=(\d+) confirmed=(\d+) "
                         r"seconds=\S+$", p.stdout, re.M)
    if confirm == 0:
        assert again == [] and summary == []
        return
    (suspects, confirmed), = summary
    assert int(confirmed) == len(again) == min(confirm, int(suspects))
    assert all(a != b and float(bw) > 0 and float(lat) > 0 for a, b, bw, lat in again)
    assert len(set((a, b) for a, b, _, _ in again)) == len(again)
    assert p.stdout.rstrip().endswith("SENTINEL_DONE bench=fabric")


@pytest.mark.parametrize("args,message", [
    (["--bw-factor", "0.5"], "--bw-factor: '0.5' is not a factor above 1"),
    (["--latency-factor", "x"], "--latency-factor: 'x' is not a factor above 1"),
    (["--confirm", "-1"], "--confirm: -1 is out of range [0, 100000]"),
])
def test_bad_arguments_are_named(bench, args, message):
    p = run(bench, 2, *args)
    assert p.returncode != 0
    assert f"fabric: error: {message}" in p.stderr
