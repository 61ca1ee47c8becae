"""Per-variable verdicts of run reports, retries included."""

from __future__ import annotations

from sentinel.results.verdicts import failed, last_attempts, verdicts


def _tc(name: str, latency: float, result: str, bounds: bool = True) -> dict:
    lower, upper = (-0.1, 0.1) if bounds else (None, None)
    return {"name": name, "system": "local", "partition": "cpu", "environ": "openmpi",
            "perfvalues": {"local:cpu:latency_8B": [latency, 0.17, lower, upper, "us", result],
                           "local:cpu:bw_peak": [10800.0, 10900.0, lower, upper, "MB/s",
                                                 "pass"]}}


def test_a_retry_replaces_the_first_attempt_and_only_it():
    report = {"runs": [
        {"testcases": [_tc("Pt2ptCheck %transport=ob1-vader", 0.19, "fail"),
                       _tc("Pt2ptCheck %transport=ob1-tcp", 6.5, "pass", bounds=False)]},
        {"testcases": [_tc("Pt2ptCheck %transport=ob1-vader", 0.17, "pass")]},
    ]}
    assert [tc["name"] for tc in last_attempts(report)] == [
        "Pt2ptCheck %transport=ob1-vader", "Pt2ptCheck %transport=ob1-tcp"]
    assert failed(report) == set()
    got = verdicts(report)
    assert len(got) == 4
    vader = next(v for v in got if v.variable == "latency_8B" and "vader" in v.test)
    assert (vader.partition, vader.environ, vader.value, vader.passed) == (
        "local:cpu", "openmpi", 0.17, True)
    assert [v.referenced for v in got if "tcp" in v.test] == [False, False]


def test_failed_names_test_and_variable():
    report = {"runs": [{"testcases": [_tc("Pt2ptCheck %transport=ob1-vader", 0.25, "fail")]}]}
    assert failed(report) == {("Pt2ptCheck %transport=ob1-vader", "latency_8B")}
    assert verdicts({}) == []
