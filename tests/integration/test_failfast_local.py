"""Two ranks forced onto one CPU: the check fails at start-up naming it, not at its time limit.

The ``openmpi-cpu0`` environment of ``tests/config/failfast.py`` starts both
ranks through ``taskset -c 0``. Before ``--distinct-cpus`` the benchmark
busy-polled that core in turns into the time limit (a quick Pt2ptCheck: 10
of its 220 result lines in 60 s).
"""

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import QUICK, need_stack, reframe

pytestmark = pytest.mark.integration


def test_ranks_sharing_cpu_0_fail_fast_naming_it(tmp_path):
    need_stack("openmpi")
    run = reframe([*QUICK, "-n", "Pt2ptCheck.*transport=ob1-vader.*mapping=core",
                   "-p", "openmpi-cpu0", "-r"], tmp_path,
                  config=ROOT / "tests" / "config" / "failfast.py", checks=("pt2pt.py",))
    tc = run.case("Pt2ptCheck", environ="openmpi-cpu0", mapping="core")
    reason = tc.get("fail_reason") or ""
    assert tc["result"] == "fail", run.output[-3000:]
    assert tc["fail_phase"] == "sanity", reason  # not a job error: the job ended by itself
    assert "ranks 0 and 1 share CPU(s) 0 on host " in reason, reason
    assert "hit its time limit" not in reason and "timed out" not in reason, reason
    assert tc["time_run"] < 15, f"the job ran {tc['time_run']:.1f} s"  # mpirun's exit: ~2 s
    out = (tmp_path / "var" / "stage").rglob("Pt2ptCheck_*/rfm_job.out")
    text = next(out).read_text()
    assert "SENTINEL_ERROR bench=pt2pt what=shared_cpus " in text and "cpus=0" in text
    assert "SENTINEL_PT2PT" not in text  # nothing was measured
    # What the result depended on is recorded before sanity: a failed case has it too.
    prov = tc["provenance"]
    for key in ("mpi_library", "kernel", "cpu", "compiler", "nodes"):
        assert prov.get(key) and not prov[key].startswith("not found"), (key, prov)
    assert "libmpi.so.40 => " in prov["mpi_library"]
    # It stopped before it printed its library's version: said, not guessed.
    assert prov["mpi"] == "not found (no SENTINEL_LIBRARY line in the benchmark's output)"
    assert prov["transport_env"] == "OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1"
