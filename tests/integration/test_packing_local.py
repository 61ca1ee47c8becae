"""One job for the transports of an environment, each transport keeping its own verdict.

``tests/config/packed.py`` adds ``openmpi-packed``: Open MPI offering
``ob1-tcp``, ``ob1-vader`` and ``ofi-udp``, libfabric's development provider,
whose synchronous send crashes this host's Open MPI 4.1.4 with libfabric
1.17. With ``pack_transports`` (the nightly and acceptance modes) the packed
job runs the three launches one after another in one job; the transports'
test cases run locally on what their launch left and must say exactly what
a job of their own would: the crash fails ``ofi-udp`` alone, naming it, and
the others pass with their values. A retry runs the failed transport with a
job of its own.
"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import QUICK, need_stack, reframe

pytestmark = pytest.mark.integration

CONFIG = ROOT / "tests" / "config" / "packed.py"
PACKED = [*QUICK, "-S", "pack_transports=true", "-p", "openmpi-packed"]


def _launches(text: str) -> dict[str, str]:
    return dict(item.split(":", 1) for item in text.split())


def test_one_failed_launch_fails_its_transport_alone(tmp_path):
    need_stack("openmpi")
    run = reframe([*PACKED, "--max-retries=1", "-n", "Pt2ptCheck.*mapping=core", "-r"],
                  tmp_path, config=CONFIG, checks=("pt2pt.py",))
    # The report holds the transport as the test name shows it.
    first = {tc["transport"]: tc for tc in run.report["runs"][0]["testcases"]
             if tc["name"].startswith("Pt2ptCheck")}
    assert set(first) == {"openmpi-all", "ob1-tcp", "ob1-vader", "ofi-udp"}, run.output[-3000:]
    job = first["openmpi-all"]
    assert job["result"] == "pass" and not job["local"], job.get("fail_reason")
    assert job["provenance"] == {}  # its transports' test cases record theirs
    launches = _launches(job["packed_launches"])
    assert launches.keys() == {"ob1-tcp", "ob1-vader", "ofi-udp"}
    assert launches["ob1-tcp"] == launches["ob1-vader"] == "0" != launches["ofi-udp"]
    for name in ("ob1-tcp", "ob1-vader"):
        tc = first[name]
        assert tc["result"] == "pass" and tc["local"], tc.get("fail_reason")
        names = {key.rsplit(":", 1)[1] for key in tc["perfvalues"]}
        assert {"latency_8B", "bw_peak", "fit_bw"} <= names
        assert f"btl={name.split('-')[1]}" in tc["transport_selected"]
        # Its launch's node facts, copied from the packed job, and its own variables.
        prov = tc["provenance"]
        for key in ("mpi", "mpi_library", "kernel", "cpu", "compiler", "nodes"):
            assert prov.get(key) and not prov[key].startswith("not found"), (key, prov)
        assert prov["mpi"].startswith("Open MPI v")
        assert f"OMPI_MCA_btl=self,{name.split('-')[1]}" in prov["transport_env"]
    udp = first["ofi-udp"]
    assert udp["result"] == "fail" and udp["local"] and udp["fail_phase"] == "sanity"
    assert "the job ended abnormally" in udp["fail_reason"], udp["fail_reason"]
    assert "packed job" not in udp["fail_reason"]  # its launch ended: its own cause, not the job's
    retried = run.case("Pt2ptCheck", transport="ofi-udp")
    assert retried is not udp and not retried["local"], "the retry must run its own job"
    assert retried["result"] == "fail"
    assert run.returncode != 0


def test_each_launch_past_its_limit_is_stopped_and_the_next_still_runs(tmp_path):
    need_stack("openmpi")
    # Pt2ptCheck's seed parameters (1000 iterations per sample, 4 MiB, five
    # modes) take minutes on either transport here: each launch must be
    # stopped at 3 s, alone, and the packed job go on to the next.
    run = reframe(["-S", "pack_transports=true", "-p", "openmpi-packed",
                   "-S", "Pt2ptCheck.time_limit=3s",
                   "-S", "Pt2ptCheck.transports=openmpi/ob1-tcp,openmpi/ob1-vader",
                   "-n", "Pt2ptCheck.*mapping=core", "-r"],
                  tmp_path, config=CONFIG, checks=("pt2pt.py",))
    job = run.case("Pt2ptCheck", transport="openmpi-all")
    assert job["result"] == "pass", job.get("fail_reason")
    assert _launches(job["packed_launches"]) == {"ob1-tcp": "124", "ob1-vader": "124"}, \
        run.output[-3000:]
    for name in ("ob1-tcp", "ob1-vader"):
        tc = run.case("Pt2ptCheck", transport=name)
        assert tc["result"] == "fail" and tc["fail_phase"] == "sanity"
        assert ("the launch ran past its time limit of 3 s in the packed job Pt2ptCheck "
                "%transport=openmpi-all %mapping=core") in tc["fail_reason"], tc["fail_reason"]
    assert job["time_run"] < 2 * (3 + 30), "a stopped launch must not hold the packed job"
