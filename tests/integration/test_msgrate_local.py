"""The thread message rate in a real session: every transport of every MPI of this host.

The quick mode runs ThreadRateCheck over every transport of every MPI here,
two ranks on the two cores of this host's one socket: one thread each, under
MPI_THREAD_MULTIPLE, which every MPI here provides. This host cannot show
the scaling (a second thread a rank would be a third busy thread on two
CPUs); the scaling and its verdict are judged offline on a site's shape and
on a capture of the rig (tests/unit/test_checks_offline.py).
"""

from __future__ import annotations

import pytest

from tests.integration.conftest import need_environ

pytestmark = pytest.mark.integration

#: The transports of each environment here.
TRANSPORTS = {
    "openmpi": {"ob1-vader", "ob1-tcp", "ucx-sm", "ucx-tcp", "ofi-tcp"},
    "openmpi-5_0": {"ob1-sm", "ob1-tcp", "ucx-sm", "ucx-tcp", "ofi-tcp"},
    "mpich": {"ucx-sm", "ucx-tcp"},
    "mpich-5_0": {"ucx-sm", "ucx-tcp", "ofi-tcp"},
    "intelmpi": {"shm", "ofi-tcp", "shm-ofi-tcp", "ofi-shm"},
}


@pytest.mark.parametrize("environ", sorted(TRANSPORTS))
def test_every_transport_reports_its_one_thread_rate_under_thread_multiple(quick_matrix,
                                                                           environ):
    need_environ(environ)
    cases = {tc["transport"]: tc for tc in quick_matrix.cases("ThreadRateCheck",
                                                              environ=environ)
             if tc["result"] != "skip"}
    assert set(cases) == TRANSPORTS[environ], quick_matrix.output[-3000:]
    for transport, tc in cases.items():
        assert tc["result"] == "pass", (transport, tc.get("fail_reason"))
        assert tc["thread_counts"] == [1], (transport, tc["thread_counts"])
        values = {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}
        assert values["rate_T1"] > 1000, (transport, values)
