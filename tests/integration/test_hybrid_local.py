"""The mixed-mode micro-benchmarks for real, in every mode, on each MPI."""

from __future__ import annotations

import pytest

from tests.integration.conftest import need_environ, need_stack

pytestmark = pytest.mark.integration

#: Each environment's shared-memory transport.
TRANSPORT = {"openmpi": "ob1-vader", "mpich": "ucx-sm", "intelmpi": "shm",
             "openmpi-5_0": "ob1-sm", "mpich-5_0": "ucx-sm"}


@pytest.mark.parametrize("environ", sorted(TRANSPORT))
@pytest.mark.parametrize("mode", ["serial", "funnelled", "multiple"])
def test_every_mode_runs_verified(quick_matrix, environ, mode):
    need_environ(environ)
    tc = quick_matrix.case("HybridCheck", environ=environ, transport=TRANSPORT[environ],
                           mapping="core", mode=mode, threads="one")
    assert tc["result"] == "pass", tc.get("fail_reason")
    perf = {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}
    assert perf["barrier"] > 0
    for bench in ("halo", "pingpong", "pingping"):
        # the quick mode: 1 to 1024 elements of 4 bytes, one thread
        assert {f"{bench}_{4 * 2 ** i}B" for i in range(11)} <= set(perf), bench


def test_a_node_of_threads_per_rank_does_not_fit_two_ranks(quick_matrix):
    need_stack("openmpi")
    tc = quick_matrix.case("HybridCheck", environ="openmpi", transport="ob1-vader",
                           mapping="core", mode="funnelled", threads="node")
    assert tc["result"] == "skip"
    assert "2 rank(s) x 2 threads per node; partition local:cpu has 2 cores per node" \
        in quick_matrix.output
