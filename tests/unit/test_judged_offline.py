"""The judged variables and their bands, on a real check class set up offline.

Pt2ptCheck (ob1-vader, core) judged on its captured output
(``tests/data/checks/pt2pt-openmpi-ob1-vader-core``) against bands from the
reference file and from a learnt baseline file written here: only the
headline variables can fail it, the file's band wins over a learnt one, a
burn-in is provisional, and the host probe's band attributes, never fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reframe.core.exceptions import PerformanceError

from sentinel.analysis import baseline
from sentinel.analysis.baseline import BURN_IN, LEARNT, Band, Learnt
from sentinel.analysis.host import HOST_FILE
from sentinel.errors import SentinelError
from tests.conftest import DATA
from tests.offline import Offline, offline_runtime

KEY = "quick|Pt2ptCheck|offline:cpu/openmpi/ob1-vader/core"
SESSIONS = [("a" * 8 + "-1", 1.0e9), ("b" * 8 + "-2", 1.0e9 + 86400)]


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    with offline_runtime(tmp_path_factory.mktemp("offline")) as _:
        yield Offline(tmp_path_factory.mktemp("stage"))


@pytest.fixture
def learnt(tmp_path, monkeypatch):
    """A learnt baseline file for the offline system, written by the test."""
    monkeypatch.setenv("SENTINEL_BASELINES", str(tmp_path / "baselines"))
    monkeypatch.setenv("SENTINEL_REFERENCES", str(tmp_path / "refs"))
    (tmp_path / "refs").mkdir()

    def write(variables: dict[str, Learnt], refs: str = "") -> None:
        baseline.write(tmp_path / "baselines" / "offline.json", {
            "format": baseline.FORMAT, "learnt_at": 0.0, "results_db": "test",
            "cases": {KEY: {"variables": {n: v.as_json() for n, v in variables.items()}}}})
        if refs:
            (tmp_path / "refs" / "offline.yaml").write_text(refs)
    return write


def _judged(offline: Offline, probe: str = ""):
    (case,) = offline.cases([("Pt2ptCheck", {"transport": "openmpi/ob1-vader",
                                            "mapping": "core"})],
                            variables={"max_size": 1048576, "history_mode": "quick"},
                            environ="openmpi")
    case.give_outputs("pt2pt-openmpi-ob1-vader-core")
    if probe:  # the host probe's output of a job (tests/data/host)
        (case.stagedir / HOST_FILE).write_text((DATA / "host" / probe).read_text())
    case.sanity()
    return case


def _band(reference: float, lower: float | None, upper: float | None, unit: str) -> Learnt:
    return Learnt(LEARNT, Band(reference, lower, upper, unit), list(SESSIONS))


def test_a_headline_value_outside_its_learnt_band_fails_and_another_does_not(offline, learnt):
    learnt({"bw_peak": _band(1.0e9, -0.2, None, "MB/s"),        # far above: fails
            "bw_1048576B": _band(1.0e9, -0.2, None, "MB/s"),    # also, but not judged
            "latency_8B": _band(10.0, None, 0.3, "us")})         # within
    case = _judged(offline)
    with pytest.raises(PerformanceError, match=r"bw_peak=.* MB/s, expected 1000000000.0"):
        case.performance()
    check = case.check
    assert check.judged_variables == ["bw_peak", "latency_8B"]
    assert check.reference_origin == {"bw_peak": "learnt", "bw_1048576B": "learnt",
                                      "latency_8B": "learnt"}
    assert check.baseline_sessions == [f"{u}@{t:.0f}" for u, t in SESSIONS]
    perf = {k.rsplit(":", 1)[1]: v for k, v in check.perfvalues.items()}
    assert perf["bw_1048576B"][2:4] == [None, None]  # recorded, no band given to ReFrame
    assert "learnt baseline" in check.reference_status


def test_nothing_judged_within_its_bands_passes_whatever_the_others_do(offline, learnt):
    learnt({"bw_peak": _band(1.0, -0.2, None, "MB/s"),
            "latency_8B": _band(10.0, None, 0.3, "us"),
            "bw_1048576B": _band(1.0e9, -0.2, None, "MB/s")})
    _judged(offline).performance()


def test_the_files_band_is_the_sites_word_over_a_learnt_one(offline, learnt):
    learnt({"bw_peak": _band(1.0, -0.2, None, "MB/s")},
           refs="Pt2ptCheck:\n  $index: [$partition, $environ, transport_name, mapping]\n"
                "  offline:cpu:\n    openmpi:\n      ob1-vader:\n        core:\n"
                "          bw_peak: [1.0e+9, -0.1, null, MB/s]\n")
    case = _judged(offline)
    with pytest.raises(PerformanceError, match="bw_peak"):
        case.performance()
    assert case.check.reference_origin["bw_peak"] == "file"


def test_a_burn_in_is_provisional_and_fails_nothing(offline, learnt):
    learnt({"bw_peak": Learnt(BURN_IN, None, SESSIONS[:1], "provisional (burn-in): 1 of 5"),
            "latency_8B": Learnt(BURN_IN, None, SESSIONS[:1], "provisional (burn-in): 1 of 5")})
    case = _judged(offline)
    case.performance()
    assert set(case.check.provisional) == {"bw_peak", "latency_8B"}
    assert case.check.provisional["bw_peak"].startswith("provisional (burn-in)")


def test_without_any_baseline_every_judged_value_is_provisional(offline, learnt, tmp_path):
    case = _judged(offline)
    case.performance()
    assert set(case.check.provisional) == {"bw_peak", "latency_8B"}
    assert "no learnt baseline" in case.check.reference_status


def test_the_host_probe_outside_its_band_attributes_and_never_fails(offline, learnt):
    learnt({"host_copy_bw": _band(1.0e6, -0.3, None, "GB/s"),
            "latency_8B": _band(10.0, None, 0.3, "us")})
    case = _judged(offline, "rfm_host-hog.txt")  # 4.685 GB/s
    case.performance()  # no failure: the probe is not judged
    assert case.check.host_outside == [
        "host_copy_bw 4.685 GB/s, 100.0 % worse than its reference 1e+06 GB/s"]


def test_a_learnt_variable_unresolved_tonight_is_not_missing(offline, learnt):
    learnt({"bw_peak": _band(1.0, -0.2, None, "MB/s"), "fit_bw": _band(1.0, -0.2, None, "MB/s")})
    case = _judged(offline)
    assert case.check.referenced_variables == []  # only the file's must be measured
    case.performance()


def test_a_path_that_is_no_file_is_said(offline, learnt, tmp_path):
    case = _judged(offline)
    assert str(Path(tmp_path / "baselines" / "offline.json")) in case.check.reference_status


def test_a_site_widens_or_narrows_what_is_judged_per_check(offline, learnt, monkeypatch):
    learnt({"bw_peak": _band(1.0e9, -0.2, None, "MB/s"),
            "bw_1048576B": _band(1.0e9, -0.2, None, "MB/s")})
    case = _judged(offline)
    extras = case.check.current_partition.extras
    # narrowed to the latency: the peak far below its band no longer fails
    monkeypatch.setitem(extras, "judged", {"Pt2ptCheck": ["latency_8B"]})
    case.performance()
    assert case.check.judged_variables == ["latency_8B"]
    # widened to the 1 MiB point: it fails on it
    case = _judged(offline)
    monkeypatch.setitem(case.check.current_partition.extras, "judged",
                        {"Pt2ptCheck": ["latency_8B", "bw_1048576B"]})
    with pytest.raises(PerformanceError, match="bw_1048576B"):
        case.performance()


@pytest.mark.parametrize("setting, why", [
    ("latency_8B", r"extras\['judged'\] is 'latency_8B': expected a mapping"),
    ({"Pt2ptCheck": "latency_8B"},
     r"extras\['judged'\]\['Pt2ptCheck'\] is 'latency_8B': expected a list"),
    ({"Pt2ptCheck": ["bw_(peak"]},
     r"extras\['judged'\]\['Pt2ptCheck'\]: 'bw_\(peak' is not a regular expression"),
])
def test_a_bad_judged_setting_is_named(offline, learnt, monkeypatch, setting, why):
    case = _judged(offline)
    monkeypatch.setitem(case.check.current_partition.extras, "judged", setting)
    with pytest.raises(SentinelError, match=r"partition offline:cpu: " + why):
        case.check.judge_references()


@pytest.fixture
def retry(monkeypatch):
    """ReFrame's runtime as in a retry (``--max-retries``: its second run)."""
    from reframe.core import runtime

    def second() -> None:
        monkeypatch.setattr(type(runtime.runtime()), "current_run", property(lambda _: 1))
    return second


def test_a_retry_confirms_the_value_that_failed_and_judges_no_other(offline, learnt, retry):
    learnt({"bw_peak": _band(1.0e9, -0.2, None, "MB/s"),   # outside: fails
            "latency_8B": _band(10.0, None, 0.3, "us")})    # within
    first = _judged(offline)
    with pytest.raises(PerformanceError, match="bw_peak"):
        first.performance()
    retry()
    # measured again: the peak within its band now, the latency far outside it
    learnt({"bw_peak": _band(1.0, -0.2, None, "MB/s"),
            "latency_8B": _band(0.001, None, 0.3, "us")})
    again = _judged(offline)
    again.performance()  # the latency was not what failed: the next session judges it
    assert again.check.judged_variables == ["bw_peak"]
    assert "measured again: judged on bw_peak" in again.check.reference_status


def test_a_retry_that_fails_the_same_value_again_fails(offline, learnt, retry):
    learnt({"bw_peak": _band(1.0e9, -0.2, None, "MB/s")})
    with pytest.raises(PerformanceError):
        _judged(offline).performance()
    retry()
    with pytest.raises(PerformanceError, match="bw_peak"):
        _judged(offline).performance()


def test_a_retrys_probe_waits_for_a_quiet_node_a_first_run_does_not(offline, learnt, retry):
    learnt({"host_copy_bw": _band(10.0, -0.3, None, "GB/s"),
            "host_roundtrip": _band(50.0, None, 0.3, "ns")})
    first = _judged(offline)
    assert "--quiet-wait-s" not in first.script()
    retry()
    again = _judged(offline)
    # the bands' worse edges: 50 ns x 1.3, 10 GB/s x 0.7; a quarter of the time limit
    assert ("--quiet-roundtrip-ns 65 --quiet-copy-mbs 7000 --quiet-wait-s 60"
            in again.script()), again.script()
