"""The one-sided path of each transport, judged on logs this project's runs captured.

Each file of ``tests/data/onesided`` is one RmaCheck job's stdout and stderr
(``tests/data/onesided/README.md``): the quick mode over every MPI of this
host, and the same checks with a site setting that forces the one-sided
path onto its fallback (``tests/config/negative.py``).
"""

from __future__ import annotations

import pytest

from sentinel.mpi import onesided
from sentinel.mpi.placement import Levels
from sentinel.mpi.transports import CATALOGUE, lookup
from tests.conftest import DATA

LOGS = DATA / "onesided"
ON_NODE = Levels("ranks 0, 1 on vm", "")
ACROSS = Levels("", "m1, m2")


def judge(name: str, family: str, transport: str, levels: Levels = ON_NODE) -> list[str]:
    sel = onesided.observe((LOGS / f"{name}.log").read_text())
    return onesided.problems(onesided.expected(lookup(family, transport)), sel, levels)


#: Each captured run of the quick mode and what its log showed of the path.
SILENT = {
    "openmpi-ob1-vader": ("openmpi", "ob1-vader", "osc=rdma"),
    "openmpi-ob1-tcp": ("openmpi", "ob1-tcp", "osc=pt2pt"),
    "openmpi-ucx-sm": ("openmpi", "ucx-sm", "osc=ucx osc_ucx_rma=posix,sysv"),
    "openmpi-ucx-tcp": ("openmpi", "ucx-tcp", "osc=ucx osc_ucx_rma_am=tcp"),
    "openmpi-ofi-tcp": ("openmpi", "ofi-tcp", "osc=rdma"),
    "openmpi5-ob1-sm": ("openmpi", "ob1-sm", "osc=rdma rdma_btls=sm:rdma rdma_am"),
    "openmpi5-ob1-tcp": ("openmpi", "ob1-tcp", "osc=rdma rdma_btls=tcp:rdma rdma_am"),
    "openmpi5-ucx-sm": ("openmpi", "ucx-sm", "osc=ucx osc_ucx_rma=posix,sysv"),
    "openmpi5-ofi-tcp": ("openmpi", "ofi-tcp", "osc=rdma rdma_btls=sm:rdma rdma_am"),
    "mpich-ucx-sm": ("mpich", "ucx-sm", "ucx_rma=posix,sysv"),
    "mpich-ucx-tcp": ("mpich", "ucx-tcp", "ucx_rma_am=tcp"),
    "mpich5-ofi-tcp": ("mpich", "ofi-tcp", "ofi_rma=1 ofi_atomics=0"),
    "intelmpi-shm": ("intelmpi", "shm", "nothing"),
    "intelmpi-ofi-tcp": ("intelmpi", "ofi-tcp", "ofi_rma=0 ofi_atomics=0"),
    "intelmpi-ofi-shm": ("intelmpi", "ofi-shm", "ofi_rma=1 ofi_atomics=1"),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_every_transports_own_path_passes(name):
    family, transport, seen = SILENT[name]
    assert onesided.observe((LOGS / f"{name}.log").read_text()).describe() == seen
    assert judge(name, family, transport) == []


#: Each run a site setting forced onto the fallback, and what its failure says.
FALLBACKS = {
    "openmpi-ob1-vader-osc-pt2pt": (
        "openmpi", "ob1-vader", "expected osc rdma over the vader BTL's single copy, the run "
        "used osc pt2pt (one-sided emulated over two-sided messages)"),
    "openmpi5-ucx-sm-osc-rdma": (
        "openmpi", "ucx-sm", "expected osc ucx (UCX's native RMA), the run used osc rdma over "
        "the active-message BTLs: sm (rdma) (no BTL with RDMA and atomics for every peer)"),
    "mpich5-ofi-tcp-rma-off": (
        "mpich", "ofi-tcp", "the OFI netmod ran with RMA off (MPIDI_OFI_ENABLE_RMA: 0): every "
        "put and get went over active messages"),
    "intelmpi-ofi-shm-rma-off": (
        "intelmpi", "ofi-shm", "expected libfabric's RMA over ofi:shm, the OFI netmod ran with "
        "RMA off (MPIDI_OFI_ENABLE_RMA: 0)"),
}


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_a_path_forced_onto_its_fallback_fails_naming_what_it_used(name):
    family, transport, message = FALLBACKS[name]
    issues = judge(name, family, transport)
    assert len(issues) == 1 and message in issues[0], issues


def test_the_same_fallback_is_what_another_transport_expects():
    """Intel MPI's tcp provider has RMA off by design: expected there, a fallback on shm."""
    assert judge("intelmpi-ofi-tcp", "intelmpi", "ofi-tcp") == []
    assert judge("intelmpi-ofi-tcp", "intelmpi", "ofi-shm") != []


def test_ucx_lanes_emulated_where_native_rma_is_expected_fail_across_nodes_only():
    """MPICH's one-sided traffic takes UCX's lanes between nodes; on a node, its shm."""
    assert judge("mpich-ucx-tcp", "mpich", "ucx-tcp", ACROSS) == []
    assert judge("mpich-ucx-tcp", "mpich", "ucx-sm", ON_NODE) == []
    issues = judge("mpich-ucx-tcp", "mpich", "ucx-sm", ACROSS)
    assert issues == ["expected UCX's native RMA (sm) across nodes (on a node, MPICH's "
                      "shared-memory active messages), UCX emulated RMA over active messages "
                      "between m1, m2 (rma_am over tcp): its native RMA fell back"]


def test_osc_ucx_lanes_emulated_where_native_is_expected_fail():
    """Open MPI's osc ucx endpoints over TCP (rma_am) judged as if ucx-sm had run."""
    issues = judge("openmpi-ucx-tcp", "openmpi", "ucx-sm")
    assert issues == ["expected osc ucx (UCX's native RMA), UCX emulated RMA over active "
                      "messages in osc ucx (rma_am over tcp): its native RMA fell back"]


def test_a_log_without_the_probes_output_fails_saying_what_it_lacks():
    none = onesided.OneSidedSelection()
    for key, words in (("openmpi/ob1-vader", "logged no one-sided component"),
                       ("mpich/ofi-tcp", "logged no OFI capability set"),
                       ("mpich/ucx-sm", "UCX logged no RMA lane between m1, m2")):
        issues = onesided.problems(onesided.expected(CATALOGUE[key]), none, ACROSS)
        assert len(issues) == 1 and words in issues[0], (key, issues)


def test_every_transport_of_the_catalogue_has_its_path_and_selection():
    for t in CATALOGUE.values():
        path = onesided.expected(t)
        assert path.transport == t.key and path.path
        if t.family == "openmpi":
            want = "ucx" if t.expect.get("pml") == "ucx" else "^ucx"
            assert path.env == {"OMPI_MCA_osc": want}, t.key
            assert path.probe_env["OMPI_MCA_osc_base_verbose"] == "100"
        else:  # MPICH and Intel MPI choose their path themselves
            assert path.env == {}, t.key
    assert onesided.expected(CATALOGUE["openmpi/ucx-rc"]).native is True
    assert onesided.expected(CATALOGUE["openmpi/ucx-ud"]).native is False
    assert onesided.expected(CATALOGUE["intelmpi/ofi-verbs"]).native is True
