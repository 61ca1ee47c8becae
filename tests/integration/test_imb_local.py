"""IMB-MPI1 for real: Intel MPI's own build (PyPI impi-devel) over its fabrics."""

import pytest

from tests.integration.conftest import need_stack

pytestmark = pytest.mark.integration

# The Intel MPI table of Banerjee (2022) has this shape: fabrics x provider, latency and bandwidth.
INTEL = {"shm": "fabrics=shm", "ofi-tcp": "ofi=tcp", "shm-ofi-tcp": "fabrics=shm:ofi"}


@pytest.mark.parametrize("transport", sorted(INTEL))
def test_imb_runs_under_intel_mpi(quick_matrix, transport):
    need_stack("intelmpi")
    tc = quick_matrix.case("ImbCheck", environ="intelmpi", transport=transport, mapping="core")
    assert tc["result"] == "pass", tc.get("fail_reason")
    assert INTEL[transport] in tc["transport_selected"]
    assert tc["program_path"].endswith("/IMB-MPI1")
    perf = {k.split(":")[-1]: v for k, v in tc["perfvalues"].items()}
    for var in ("pingpong_latency_8B", "pingpong_bw_peak", "pingpong_fit_lambda",
                "pingpong_fit_bw", "pingping_latency_8B", "sendrecv_bw_peak",
                "exchange_bw_peak", "allreduce_latency_8B", "alltoall_latency_8B",
                "bcast_latency_8B", "barrier_latency", "pingpong_latency_1048576B"):
        assert perf[var][0] > 0, var
    assert perf["pingpong_bw_peak"][4] == "MB/s"


def test_imb_absent_is_skipped_with_where_it_looked(quick_matrix):
    need_stack("openmpi")
    tc = quick_matrix.case("ImbCheck", environ="openmpi", transport="ob1-vader", mapping="core")
    assert tc["result"] == "skip"
    assert quick_matrix.output.count("IMB-MPI1 not found for environment openmpi (looked in: ") > 0
