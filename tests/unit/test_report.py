"""The report's decisions (margins, verdicts, matrix) and its handling of bad input.

Data: a real run report of the nightly selection on the two-node Slurm
partition (tests/cluster/slurm.py), trimmed to the fields the report reads.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

import sentinel.results.report as report_pkg
from sentinel.results.report import files, history, tables
from sentinel.results.report.files import load_reports
from sentinel.results.report.load import Inputs, Variable, cases_of

DATA = Path(__file__).resolve().parents[1] / "data" / "run-report-slurm-two.json"


def _report() -> dict:
    return json.loads(DATA.read_text())


def _with_reference(report: dict, variable: str, ref: float, lower, upper) -> dict:
    """``report`` with a reference band on ``variable`` of the ob1-tcp pt2pt case."""
    out = copy.deepcopy(report)
    for tc in out["runs"][0]["testcases"]:
        if tc["name"].startswith("Pt2ptCheck") and tc["transport"] == "ob1-tcp":
            key = f"local:slurm-two:{variable}"
            value = tc["perfvalues"][key][0]
            inside = ref * (1 + (lower or -1e9)) <= value <= ref * (1 + (upper or 1e9))
            tc["perfvalues"][key] = [value, ref, lower, upper, tc["perfvalues"][key][4],
                                     "pass" if inside else "fail"]
    return out


def test_margin_is_the_distance_to_the_nearest_bound_relative_to_the_reference():
    inside = Variable("bw_peak", 105.0, 100.0, -0.1, None, "MB/s", "pass")
    assert inside.band == (90.0, None)
    assert inside.margin == pytest.approx(0.15)
    outside = Variable("latency_8B", 1.3, 1.0, -0.2, 0.2, "us", "fail")
    assert outside.margin == pytest.approx(-0.1)
    assert Variable("x", 1.0, 0.0, None, None, "us", "pass").margin is None


def test_cases_of_a_real_report_keep_place_transport_and_queue_model():
    cases = cases_of(_report(), "r.json")
    assert len(cases) == 7
    pt2pt = [c for c in cases if c.check == "Pt2ptCheck"]
    assert {(c.environ, c.transport, c.mapping) for c in pt2pt} == {
        ("mpich", "ucx-tcp", "node"), ("openmpi", "ob1-tcp", "node"),
        ("openmpi", "ucx-tcp", "node")}
    assert all(c.where.startswith("local:slurm-two+") for c in cases)
    matching = next(c for c in cases if c.check == "MatchingCheck")
    assert matching.extra["queue_model"]
    assert pt2pt[0].variables["latency_8B"].unit == "us"


def test_headline_names_the_parameters_that_tell_cases_apart():
    report = _report()
    tc = next(t for t in report["runs"][0]["testcases"] if t["name"].startswith("Pt2ptCheck"))
    twin = copy.deepcopy(tc)
    for t, mode in ((tc, "pure"), (twin, "master")):
        name = t["name"].replace(" %build", f" %mode={mode} %threads=2 %build")
        t["name"] = t["display_name"] = name
    twin["unique_name"] += "_1"  # another variant: ReFrame names each uniquely
    report["runs"][0]["testcases"].append(twin)
    cases = cases_of(report, "r.json")
    assert next(c for c in cases if "%mode=pure" in c.name).variant == "mode=pure threads=2"
    assert next(c for c in cases if c.check == "MatchingCheck").variant == ""
    lines = report_pkg.headline(tables.rows(cases), tables.acceptance(cases))
    pure = [ln for ln in lines if "mode=pure threads=2" in ln]
    master = [ln for ln in lines if "mode=master threads=2" in ln]
    assert len(pure) == len(master) > 0 and any(" bw_peak " in ln for ln in pure)


def test_acceptance_passes_fails_or_has_no_requirements():
    report = _report()
    assert tables.acceptance(cases_of(report, "r")).verdict == "NO REQUIREMENTS"
    value = next(tc for tc in report["runs"][0]["testcases"]
                 if tc["name"].startswith("Pt2ptCheck") and tc["transport"] == "ob1-tcp"
                 )["perfvalues"]["local:slurm-two:bw_peak"][0]
    ok = tables.acceptance(cases_of(_with_reference(report, "bw_peak", value, -0.1, None), "r"))
    assert ok.verdict == "PASS" and len(ok.requirements) == 1
    assert ok.requirements[0].var.margin == pytest.approx(0.1)
    bad = tables.acceptance(cases_of(_with_reference(report, "bw_peak", 2 * value, -0.1, None),
                                     "r"))
    assert bad.verdict == "FAIL"
    assert bad.requirements[0].verdict == "FAIL"
    assert bad.requirements[0].var.margin == pytest.approx(-0.4)


def test_a_failed_test_case_fails_acceptance_with_its_reason():
    report = _report()
    tc = report["runs"][0]["testcases"][0]
    tc.update(result="fail", fail_reason="the job ended abnormally: node n2 down")
    acc = tables.acceptance(cases_of(report, "r"))
    assert acc.verdict == "FAIL"
    assert [c.fail_reason for c in acc.failed_cases] == ["the job ended abnormally: node n2 down"]


def test_transport_matrix_rows_are_mapping_and_transport_columns_per_partition():
    header, body = tables.transport_matrix(cases_of(_report(), "r"))
    assert header == ["environ", "mapping", "transport",
                      "local:slurm-two 8 B latency [95 % interval]",
                      "local:slurm-two peak bandwidth [95 % interval]"]
    assert [row[:3] for row in body] == [["mpich", "node", "ucx-tcp"],
                                         ["openmpi", "node", "ob1-tcp"],
                                         ["openmpi", "node", "ucx-tcp"]]
    # every cell with its unit, and its interval where the run had one
    for row in body:
        assert re.fullmatch(r"[\d.]+ us( \[[\d.]+, [\d.]+\])?", row[3]), row
        assert re.fullmatch(r"[\d.]+ MB/s( \[[\d.]+, [\d.]+\])?", row[4]), row


def test_summaries_have_one_line_per_variable():
    cases = cases_of(_report(), "r")
    rows = tables.rows(cases)
    assert len(rows) == 3 * 19 + 3 * 52
    csv_text = tables.summary_csv(rows)
    assert csv_text.splitlines()[0] == ",".join(tables.SUMMARY_FIELDS)
    assert len(csv_text.splitlines()) == len(rows) + 1
    summary = json.loads(tables.summary_json(rows, tables.acceptance(cases), [], cases))
    assert summary["verdict"] == "NO REQUIREMENTS" and len(summary["variables"]) == len(rows)


def test_bad_run_reports_are_named_and_the_others_still_read(tmp_path):
    text = DATA.read_text()
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "other.json").write_text('{"not": "a report"}')
    broken = _report()
    broken["runs"][0]["testcases"][1]["perfvalues"]["local:slurm-two:match_time_tag"] = [1.0]
    (tmp_path / "entry.json").write_text(json.dumps(broken))
    del broken["runs"][0]["testcases"][1]["perfvalues"]["local:slurm-two:match_time_tag"]
    del broken["runs"][0]["testcases"][2]["environ"]
    (tmp_path / "partial.json").write_text(json.dumps(broken))
    inputs = Inputs()
    names = ("cut", "empty", "other", "entry", "partial")
    load_reports([tmp_path / f"{n}.json" for n in names] + [DATA], inputs)
    assert len(inputs.cases) == 7
    problems = dict(zip(names, inputs.problems))
    assert problems["cut"].startswith(f"{tmp_path}/cut.json: truncated at line ")
    assert problems["empty"] == f"{tmp_path}/empty.json: empty file"
    assert problems["other"].endswith("not a ReFrame run report (no 'session_info' and 'runs')")
    assert ("test case MatchingCheck %transport=ob1-tcp %mapping=node %build.bench=matching: "
            "performance value 'local:slurm-two:match_time_tag' is not [value, ") in problems[
        "entry"]
    assert problems["partial"] == (f"{tmp_path}/partial.json: a test case lacks 'environ' "
                                   "(a partial run report?)")


@pytest.mark.parametrize("cut", ['{"runs": [{"a": 1', '{"runs": [{"a": "some te',
                                 '{"runs": [{"a": "x\\', '{"runs": [{"a": tr',
                                 '{"runs": [{"a": -1.5e', '{"runs": [{"a"', '{"runs": [\n  '])
def test_a_file_cut_anywhere_is_called_truncated(tmp_path, cut):
    path = tmp_path / "cut.json"
    path.write_text(cut)
    with pytest.raises(ValueError, match=f"^{path}: truncated at line "):
        files.json_file(path)


def test_a_syntax_error_before_the_end_is_not_called_truncated(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"runs": [{"a": 1,, "b": "a string that runs to the end')
    with pytest.raises(ValueError, match=f"^{path}: not valid JSON at line 1, column 19 "
                                         r"\(Expecting property name"):
        files.json_file(path)


def test_a_database_that_is_not_one_is_named(tmp_path):
    db = tmp_path / "results.db"
    db.write_text("not sqlite")
    inputs = Inputs()
    history.load_history(db, inputs)
    assert inputs.problems == [f"{db}: not a ReFrame results database "
                               "(file is not a database)"]


def test_trends_need_two_sessions_and_follow_the_headline_variables():
    from sentinel.results.report.figures import trends

    report = _report()
    first = (dict(report["session_info"], time_start_unix=1.7e9), cases_of(report, "a"))
    assert trends.draw([first]) == []  # one session is a point, not a trend
    second = (dict(report["session_info"], time_start_unix=1.7e9 + 86400), cases_of(report, "b"))
    titles = [t for t, uri in trends.draw([first, second]) if uri.startswith("data:image/png")]
    # a figure per partition, environment and check; a panel per headline variable
    assert titles == [f"{check} followed variables over 2 stored sessions, {env} on "
                      "local:slurm-two" for env in ("mpich", "openmpi")
                      for check in ("MatchingCheck", "Pt2ptCheck")]
    variables = trends._trend_variables([first, second])
    assert {"bw_peak", "latency_8B", "match_time_tag"} <= {
        name for per in variables.values() for name in per}
    assert not any("bw_1024B" in per for per in variables.values())


def test_unresolved_values_are_listed_with_why_never_as_numbers():
    from sentinel.results.report import html, summary
    report = _report()
    tc = next(tc for tc in report["runs"][0]["testcases"] if tc["name"].startswith("Pt2pt"))
    tc["unresolved"] = {"logp_L_classic": "-0.31 us is not positive, so it is not a "
                                          "measurement (parameterised and classic LogP "
                                          "parameters)"}
    cases = cases_of(report, "r.json")
    inputs = Inputs(cases=cases, sessions=[report["session_info"]])
    groups = summary.summarise(inputs, tables.acceptance(cases), []).unmeasured
    assert [(g.title, [line.text.split(": ", 1)[1].split(",")[0] for line in g.lines])
            for g in groups if g.title.startswith("unresolved")] == [
                ("unresolved: Pt2ptCheck logp_L_classic",
                 ["-0.31 us is not positive"])]
    case = next(c for c in cases if "logp_L_classic" in c.extra.get("unresolved", {}))
    assert html._cell(case, "logp_L_classic") == (
        "unresolved: -0.31 us is not positive", "unresolved")


def test_series_over_process_counts_are_drawn_against_the_count():
    from sentinel.results.report.figures import scaling

    net = json.loads((DATA.parent / "run-report-slurm-net.json").read_text())
    cases = cases_of(net, "net.json")
    lines = scaling._scaling_lines(next(c for c in cases if c.check == "CollectivesCheck"))
    assert len(lines) == 7 * 2 + 1  # per operation and size; the barrier
    assert sorted(lines["allreduce_latency_8B_P*"]) == [1, 2, 4]
    assert sorted(scaling._scaling_lines(next(c for c in cases if c.check == "RingCheck"))
                  ["lap_N*"]) == [1, 2, 4]
    titles = [t for t, uri in scaling.draw(cases) if uri.startswith("data:image/png")]
    assert titles == ["CollectivesCheck against the process count, intelmpi on local:slurm-net",
                      "RingCheck against the process count, openmpi on local:slurm-net"]
    panels = scaling._scaling_panels(next(c for c in cases if c.check == "CollectivesCheck"))
    assert sorted(panels["allreduce_latency"]) == ["65536B", "8B"]  # a line per size
    assert scaling.draw(cases_of(_report(), "r.json")) == []  # two ranks: no series


NIGHTLY_MATCHING = DATA.parent / "run-report-matching-nightly.json"


def test_matching_values_show_their_interval_or_their_bound_never_a_bare_negative():
    # MatchingCheck with the nightly parameters over ob1-vader, Open MPI's
    # ucx-sm and MPICH's ucx-sm (tests/data/run-report-matching-nightly.json,
    # a real run report with the other test cases left out)
    from sentinel.results.report import html
    from sentinel.results.report.figures import matching

    cases = cases_of(json.loads(NIGHTLY_MATCHING.read_text()), "m.json")
    ob1 = next(c for c in cases if c.transport == "ob1-vader")
    tag = ob1.variables["match_time_tag"]
    assert tag.unit == "ns" and tag.interval[0] < tag.value < tag.interval[1]
    assert ob1.extra["queue_evidence"]["umq"].startswith("per-communicator: tag M = ")
    table = "\n".join(cell for row in html._queue_models(cases) for cell in row)
    assert f"match_time_tag = {html.value_text(tag)}" in table
    ucx = next(c for c in cases if c.transport == "ucx-sm" and c.environ == "openmpi")
    assert "match_time_tag" not in ucx.variables
    assert "match_time_tag unresolved: < " in table
    assert not re.search(r"= -\d", table)  # no negative time anywhere
    assert [t for t, _ in matching.draw([c for c in cases if c.check == "MatchingCheck"])] == [
        f"MatchingCheck matching time per queue element, {env} on local:cpu"
        for env in ("mpich", "openmpi")]


def test_seconds_below_one_are_shown_in_ms_us_or_ns_with_their_interval_and_band():
    assert tables.num(1.461e-06, "s") == "1.461 us"
    assert tables.num(7.538e-09, "s") == "7.538 ns"
    assert tables.num(0.0123, "s") == "12.3 ms"
    assert tables.num(2.5, "s") == "2.5 s" and tables.num(0.0, "s") == "0 s"
    assert tables.num(1.461e-06, "MB/s") == "1.461e-06 MB/s"  # other units as they are
    # the interval and a band in the unit of the value they go with
    assert tables.measured(1.461e-06, "s", (1.2e-06, 1.9e-06)) == "1.461 us [1.2, 1.9]"
    assert tables.bounds(9e-07, None, "s", 1.461e-06) == "[0.9, inf] us"
    assert tables.bounds(None, 2.0, "us", 1.0) == "[-inf, 2] us"


RETRIED = DATA.parent / "run-report-retried.json"


def test_a_retried_test_case_keeps_its_first_failure_in_the_report(tmp_path):
    # Pt2ptCheck over ob1-tcp and ob1-vader with a 1 s time limit and
    # --max-retries=1: both attempts of each timed out (a real session)
    cases = cases_of(json.loads(RETRIED.read_text()), "x")
    retried = {c.transport: c.retried for c in cases if c.retried}
    assert set(retried) == {"ob1-tcp", "ob1-vader"}
    assert all(len(r) == 1 and re.fullmatch(r"attempt 1: fail: job error: \[jobid=\d+\] job "
                                            r"timed out \(\S+ > 1\.0s\)", r[0])
               for r in retried.values())
    assert [c.retried for c in cases if c.check == "BenchBuild"] == [[]]
    written = report_pkg.build([RETRIED], None, tmp_path / "out")
    page = written.html.read_text()
    assert '<section id="retried">' in page and "2 test case(s) ran again" in page
    summary = json.loads(written.json.read_text())
    assert {c["result"] for c in summary["retried_test_cases"]} == {"fail"}
    assert all(c["earlier"][0].startswith("attempt 1: fail: job error")
               for c in summary["retried_test_cases"])
    # a session that ran every test case once lists none
    again = report_pkg.build([DATA], None, tmp_path / "once")
    assert "No test case was retried" in again.html.read_text()
    assert json.loads(again.json.read_text())["retried_test_cases"] == []


def test_an_interval_below_95_percent_is_shown_with_its_coverage():
    from sentinel.results.report.tables import measured

    assert measured(1.546e-3, "s", (1.546e-3, 1.568e-3), 0.75) == "1.546 ms [1.546, 1.568] (75 %)"
    assert measured(0.41, "us", (0.40, 0.44)) == "0.41 us [0.4, 0.44]"


def test_the_node_actions_of_the_database_are_listed_newest_first(tmp_path):
    from sentinel.results.vet import actions

    db = tmp_path / "results.db"
    db.write_bytes((DATA.parent / "history" / "pt2pt-m2-slowed-from-9.db").read_bytes())
    reason = "sentinel: FabricCheck: bandwidth 6.2x below the partition median (session 5dd833d3)"
    actions.record(db, [actions.Action(1.79e9, "local:slurm-net", "m2", "drain", reason,
                                       "5dd833d3-0000 3e712685-0000"),
                        actions.Action(1.79e9 + 600, "local:slurm-net", "m2", "resume",
                                       "passed the recheck", "56604741-0000")])
    written = report_pkg.build([DATA], db, tmp_path / "out")
    assert "node action: 2026-09-21 14:13 local:slurm-net m2 drain: " + reason \
        in written.headline
    page = written.html.read_text()
    assert page.index("passed the recheck") < page.index("bandwidth 6.2x below")
    assert "5dd833d3 3e712685" in page


def test_no_node_action_says_so(tmp_path):
    written = report_pkg.build([DATA], None, tmp_path)
    assert "No node was drained or resumed by the suite" in written.html.read_text()
    assert not any(line.startswith("node action") for line in written.headline)
