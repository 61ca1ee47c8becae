"""The test harness: a capability CI requires fails the tests that need it (elsewhere they
skip, saying why); a retry is for a known failure, any other fails the test."""

from __future__ import annotations

import pytest

from tests.integration import conftest


def test_a_capability_present_lets_the_test_run():
    assert conftest.need_capability("netns", None) is None


def test_a_capability_missing_skips_where_not_required(monkeypatch):
    monkeypatch.setattr(conftest, "REQUIRED", {"openmpi"})
    with pytest.raises(pytest.skip.Exception, match="^no veth here$"):
        conftest.need_capability("netns", "no veth here")


@pytest.mark.parametrize("name", ["netns", "tc", "lmod"])
def test_a_capability_missing_fails_where_ci_requires_it(monkeypatch, name):
    monkeypatch.setattr(conftest, "REQUIRED", {"openmpi", name})
    with pytest.raises(pytest.fail.Exception,
                       match=f"^SENTINEL_REQUIRE_STACKS includes {name}, but no veth here$"):
        conftest.need_capability(name, "no veth here")


def test_a_retry_for_a_known_failure_passes_and_any_other_fails():
    import json

    from tests.conftest import DATA

    report = json.loads((DATA / "run-report-retried.json").read_text())
    run = conftest.Run(0, "", report, DATA)
    assert set(run.retried()) == {"Pt2ptCheck %transport=ob1-tcp %mapping=core "
                                  "%build.bench=pt2pt", "Pt2ptCheck %transport=ob1-vader "
                                  "%mapping=core %build.bench=pt2pt"}
    run.assert_retries(r"job timed out")
    with pytest.raises(AssertionError, match="retried for a failure other than "
                                             r"/Segmentation fault\|signal 11\|"):
        run.assert_retries(conftest.OMPI_TCP_CRASH)


def test_the_known_causes_match_what_the_suite_says_of_them():
    import re

    from sentinel.parsers.jobend import FINALIZE_HANG, job_end_causes
    from tests.conftest import ROOT

    assert re.search(conftest.MPICH_FINALIZE_HANG, f"ring had printed all its results, "
                                                   f"{FINALIZE_HANG}: its watchdog stopped")
    assert re.search(conftest.OMPI_TCP_CRASH, "srun: task(s) 4 on m3: Segmentation fault")
    # Open MPI 5's race in MPI_Init: srun's last word is a kill, not the segfault
    race = job_end_causes(
        (ROOT / "tests" / "data" / "joberr" / "openmpi5-ob1-init-race.txt").read_text())
    assert not re.search(r"Segmentation fault|signal 11", race[-1])
    assert re.search(conftest.OMPI_TCP_CRASH, "; ".join(race))
