"""Reference calibration: medians, robust tolerances, per-partition merge."""

from __future__ import annotations

import math

import pytest
import yaml

from sentinel.errors import SentinelError
from sentinel.results import calibrate

NAMES = "$partition/$environ/transport_name/mapping"


def _tc(latency: float, bw: float, partition: str = "local:cpu", result: str = "pass",
        transport: str = "ob1-vader") -> dict:
    return {
        "name": f"Pt2ptCheck %transport={transport} %mapping=core", "result": result,
        "fail_reason": "sanity error: boom" if result == "fail" else None,
        "reference_index_names": NAMES,
        "reference_index_values": f"{partition}/openmpi/{transport}/core",
        "perfvalues": {
            f"{partition}:latency_8B": [latency, 0, None, None, "us", "pass"],
            f"{partition}:bw_peak": [bw, 0, None, None, "MB/s", "pass"],
        },
    }


def _reports(rows: list[tuple[float, float]], **kw) -> list[tuple[str, dict]]:
    return [(f"run {i}", {"runs": [{"testcases": [_tc(lat, bw, **kw)]}]})
            for i, (lat, bw) in enumerate(rows, 1)]


RUNS = [(0.20, 10000), (0.21, 10400), (0.19, 9800), (0.20, 10100), (0.35, 10050)]


def test_median_and_robust_tolerance_ignore_one_outlier_run():
    refs, notes = calibrate.references(calibrate.collect(_reports(RUNS)), runs=5)
    assert notes == []
    by_var = {k.variable: v for k, v in refs.items()}
    # latency: median 0.20, MAD of ln = ln(0.21 / 0.20) = 0.0488 -> s = 0.0723,
    # k s = 0.362: upper exp(0.362) - 1 = 0.436; a faster run is not a failure (null)
    assert by_var["latency_8B"] == [0.2, None, 0.436, "us"]
    # bandwidth: s = 1.4826 * ln(10100 / 10050) = 0.0074, 5 s below the 10 % floor; the
    # lowest run but one (10000, 0.5 % below the median) less the floor's 10 %: -0.104
    assert by_var["bw_peak"] == [10050.0, -0.104, None, "MB/s"]


def test_band_floor_k_and_spread():
    assert calibrate.band([1.0, 1.0, 1.0]) == pytest.approx(
        (-calibrate.DEFAULT_FLOOR, calibrate.DEFAULT_FLOOR))
    assert calibrate.spread([1.0, 1.1, 1 / 1.1]) == pytest.approx(1.4826 * math.log(1.1))
    lower, upper = calibrate.band([1.0, 1.1, 1 / 1.1], k=3, floor=0.0)
    # the same ratio either way: a value at median / f and one at median * f are both edges
    assert (1 + lower) * (1 + upper) == pytest.approx(1.0)
    assert upper == pytest.approx(1.1 ** (3 * 1.4826) - 1)
    # where the spread is narrower, the worst run with a 10 % margin is the edge
    assert calibrate.band([1.0, 1.1, 1 / 1.1], k=1, floor=0.0)[1] == pytest.approx(0.21)


def test_failed_test_in_a_calibration_run_is_an_error():
    reports = _reports(RUNS[:2]) + _reports([(0.2, 1e4)], result="fail")
    with pytest.raises(SentinelError, match=r"run 1: Pt2ptCheck %transport=ob1-vader "
                                            r"%mapping=core failed during calibration "
                                            r"\(sanity error: boom\)"):
        calibrate.collect(reports)


def test_variable_missing_from_some_runs_or_non_positive_is_left_out_with_a_note():
    series = calibrate.collect(_reports(RUNS[:3]))
    refs, notes = calibrate.references(series, runs=5)
    assert refs == {}
    assert notes[0].endswith("bw_peak: in 3 of 5 runs, not calibrated")
    series = calibrate.collect(_reports([(0.0, 1.0), (0.0, 1.0)]))
    _, notes = calibrate.references(series, runs=2)
    assert "latency_8B: median 0 <= 0, no relative band, not calibrated" in notes[0]


def test_merge_replaces_only_the_calibrated_partition():
    existing = {
        "Pt2ptCheck": {"$index": NAMES.split("/"),
                       "local:cpu": {"openmpi": {"ob1-tcp": {"core": {"latency_8B": [9]}}}},
                       "local:slurm-two": {"openmpi": {"ob1-tcp": {"node": {"bw_peak": [1]}}}}},
        "MatchingCheck": {"$index": NAMES.split("/"), "local:cpu": {"x": 1}},
    }
    refs, _ = calibrate.references(calibrate.collect(_reports(RUNS)), runs=5)
    merged = calibrate.merge(existing, refs, "local:cpu")
    assert merged["MatchingCheck"] == existing["MatchingCheck"]
    pt = merged["Pt2ptCheck"]
    assert pt["local:slurm-two"] == existing["Pt2ptCheck"]["local:slurm-two"]
    assert pt["local:cpu"] == {"openmpi": {"ob1-vader": {"core": {
        "bw_peak": [10050.0, -0.104, None, "MB/s"], "latency_8B": [0.2, None, 0.436, "us"]}}}}
    text = calibrate.render(merged)
    assert yaml.safe_load(text) == merged  # the file reads back as written


def test_merge_refuses_another_partition_and_a_different_index():
    refs, _ = calibrate.references(calibrate.collect(_reports(RUNS, partition="local:x")), 5)
    with pytest.raises(SentinelError, match="ran on local:x, not on the calibrated partition"):
        calibrate.merge({}, refs, "local:cpu")
    refs, _ = calibrate.references(calibrate.collect(_reports(RUNS)), 5)
    with pytest.raises(SentinelError, match=r"\$index \['\$partition'\] is not the check's"):
        calibrate.merge({"Pt2ptCheck": {"$index": ["$partition"]}}, refs, "local:cpu")


def test_diff_shows_the_change(tmp_path):
    path = tmp_path / "local.yaml"
    out = calibrate.diff(path, "a: 1\n", "a: 2\n")
    assert f"--- {path} (before)" in out and "-a: 1" in out and "+a: 2" in out


def test_bad_reference_file_is_named(tmp_path):
    path = tmp_path / "local.yaml"
    path.write_text("Pt2ptCheck: [unclosed\n")
    with pytest.raises(SentinelError, match=f"{path}: not valid YAML"):
        calibrate.load(path)


def test_a_noisy_bandwidth_keeps_a_lower_bound_above_zero():
    # Seven TCP peak-bandwidth runs of a CI host (MB/s): 1.4826 MAD was 24 % of the
    # median, which made a linear band +/-120 % (admitting 0, so blind to a drop).
    runs = [3966, 4697.6, 3838.1, 4580.6, 3539.2, 5772.5, 5844]
    refs, notes = calibrate.references(
        calibrate.collect(_reports([(1.0, bw) for bw in runs])), runs=7, variables="bw_peak")
    median, lower, upper, _ = next(iter(refs.values()))
    assert median == 4580.6 and lower == -0.73 and upper is None
    assert median * (1 + lower) > 250  # a 2 Gbit/s limit (250 MB/s) fails
    assert notes == ["Pt2ptCheck local:cpu/openmpi/ob1-vader/core bw_peak: band -73/+271 % "
                     "would not catch a halving (runs 3966 4697.6 3838.1 4580.6 3539.2 5772.5 "
                     "5844); calibrate again on a quiet partition or with more --runs"]


def test_unresolved_variable_is_left_out_and_selection_by_regex():
    rows = [(0.01, 1.0), (-0.02, 1.0), (0.03, 1.0), (0.0, 1.0), (0.05, 1.0)]
    refs, notes = calibrate.references(calibrate.collect(_reports(rows)), runs=5)
    assert [k.variable for k in refs] == ["bw_peak"]
    assert notes[0].endswith("latency_8B: runs from -0.02 to 0.05 cross 0 around the median "
                             "0.01: not a stable quantity, not calibrated")
    rows = [(0.01, 1.0), (0.1, 1.0), (0.03, 1.0), (0.002, 1.0), (0.05, 1.0)]
    _, notes = calibrate.references(calibrate.collect(_reports(rows)), runs=5)
    assert notes[0].endswith("latency_8B: runs 0.01 0.1 0.03 0.002 0.05 differ by more than a "
                             "factor 2 (1.4826 MAD of ln): not a stable quantity, not calibrated")
    refs, _ = calibrate.references(calibrate.collect(_reports(RUNS)), 5, variables="bw_.*")
    assert [k.variable for k in refs] == ["bw_peak"]
    # a variable only where it is stable: by its path below the partition
    series = calibrate.collect(_reports(RUNS) + _reports(RUNS, transport="ob1-tcp"))
    refs, _ = calibrate.references(series, 5, variables="latency_8B|openmpi/ob1-vader/core/bw_.*")
    assert sorted((k.index_values[2], k.variable) for k in refs) == [
        ("ob1-tcp", "latency_8B"), ("ob1-vader", "bw_peak"), ("ob1-vader", "latency_8B")]


def test_summary_shows_the_runs_behind_each_band():
    series = calibrate.collect(_reports(RUNS))
    refs, _ = calibrate.references(series, runs=5)
    lines = calibrate.summary(series, refs)
    assert ("Pt2ptCheck local:cpu/openmpi/ob1-vader/core latency_8B (lower is better): "
            "median 0.2 us, spread 7.2 %, band open/+43.6 %, runs 0.2 0.21 0.19 0.2 0.35") in lines
    assert len(lines) == 2


def test_a_value_unresolved_in_a_run_is_never_calibrated():
    reports = _reports(RUNS[:3])
    why = "-0.3 us is not positive, so it is not a measurement (LogP)"
    reports[1][1]["runs"][0]["testcases"][0]["unresolved"] = {"logp_L_classic": why}
    refs, notes = calibrate.references(calibrate.collect(reports), runs=3)
    assert {k.variable for k in refs} == {"latency_8B", "bw_peak"}
    assert notes == [f"Pt2ptCheck local:cpu/openmpi/ob1-vader/core logp_L_classic: "
                     f"unresolved in 1 of 3 runs ({why}), not calibrated"]


def test_floor_per_variable_first_match_wins():
    floor = calibrate.floors(["0.2", "openmpi/ob1-vader/.*_peak=0.5", "bw_.*=0.3"])
    refs, _ = calibrate.references(calibrate.collect(_reports(RUNS)), runs=5, floor=floor)
    by_var = {k.variable: v for k, v in refs.items()}
    assert by_var["bw_peak"][1:3] == [-0.5, None]  # the path pattern, listed first
    # latency's own band (+0.436) is wider than the default floor of 0.2
    assert by_var["latency_8B"][1:3] == [None, 0.436]
    assert calibrate.floors([]).of(next(iter(refs))) == calibrate.DEFAULT_FLOOR


@pytest.mark.parametrize(("spec", "why"), [
    ("abc", r"--floor 'abc': expected a number such as 0.2, or PATTERN=NUMBER"),
    ("bw=1.5", r"--floor 'bw=1.5': 1.5 is not in \[0, 1\)"),
    ("(bw=0.3", r"--floor '\(bw=0.3': bad regular expression"),
])
def test_bad_floor_is_named(spec, why):
    with pytest.raises(SentinelError, match=why):
        calibrate.floors([spec])


def test_calibrating_from_earlier_run_reports_runs_nothing(tmp_path, capsys):
    import json

    from sentinel.results import cli

    paths = []
    for i, (_, report) in enumerate(_reports(RUNS)):
        paths.append(tmp_path / f"run-report-{i}.json")
        paths[-1].write_text(json.dumps(report))
    refs = tmp_path / "refs"
    assert cli.main(["calibrate", "--partition", "local:cpu", "--references", str(refs),
                     "--from-reports", *map(str, paths)]) == 0
    entries = yaml.safe_load((refs / "local.yaml").read_text())["Pt2ptCheck"]["local:cpu"]
    assert entries["openmpi"]["ob1-vader"]["core"]["latency_8B"][0] == pytest.approx(0.2)
    # a report that cannot be read is named; nothing is written
    paths[1].write_text("{not json")
    assert cli.main(["calibrate", "--partition", "local:cpu", "--references",
                     str(tmp_path / "other"), "--from-reports", *map(str, paths)]) == 1
    assert f"--from-reports {paths[1]}: not a readable JSON run report" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()
    # a selection beside the reports is refused: the runs come from the reports
    assert cli.main(["calibrate", "--partition", "local:cpu", "--from-reports", str(paths[0]),
                     str(paths[2]), "--", "-n", "Pt2ptCheck"]) == 1
    assert "--from-reports takes the runs from the reports" in capsys.readouterr().err


def test_runs_back_to_back_are_said_to_sample_minutes_not_nights():
    import copy
    import json

    from tests.conftest import DATA

    first = json.loads((DATA / "run-report-retried.json").read_text())
    start = first["session_info"]["time_start_unix"]

    def at(offset_s: float) -> tuple[str, dict]:
        report = copy.deepcopy(first)
        report["session_info"]["time_start_unix"] = start + offset_s
        return (f"run+{offset_s:g}", report)

    minutes = calibrate.time_span_note([at(0), at(90), at(200)])
    assert minutes.startswith("provisional: the 3 runs span 3 minute(s), not nights: ")
    assert "--from-reports" in minutes and "'sentinel baseline'" in minutes
    # three nights apart (or a single run): nothing to say
    assert calibrate.time_span_note([at(0), at(86400), at(2 * 86400)]) == ""
    assert calibrate.time_span_note([at(0)]) == ""


def _judging(judged: list[str] | None) -> list[tuple[str, dict]]:
    reports = _reports(RUNS)
    for _, report in reports:
        tc = report["runs"][0]["testcases"][0]
        tc["perfvalues"]["local:cpu:bibw_peak"] = [2e4, 0, None, None, "MB/s", "pass"]
        tc["perfvalues"]["local:cpu:host_copy_bw"] = [9.0, 0, None, None, "GB/s", "pass"]
        if judged is not None:
            tc["judged_variables"] = judged
    return reports


def test_only_what_the_test_cases_judged_is_calibrated_with_the_host_probe():
    # what each test case recorded as judged (a site's setting), and the probe
    series = calibrate.collect(_judging(["bw_peak"]), judged_only=True)
    assert sorted(k.variable for k in series) == ["bw_peak", "host_copy_bw"]
    # a report of an older suite: the check's headline variables
    series = calibrate.collect(_judging(None), judged_only=True)
    assert sorted(k.variable for k in series) == ["bw_peak", "host_copy_bw", "latency_8B"]
    # --variables: every variable, as before
    series = calibrate.collect(_judging(["bw_peak"]))
    assert sorted(k.variable for k in series) == ["bibw_peak", "bw_peak", "host_copy_bw",
                                                  "latency_8B"]
