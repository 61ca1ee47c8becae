"""The report of a site's first nights: provisional, then judged against learnt bands.

On the run reports ``tests/integration/test_nightly_local.py`` captured
(``tests/data/nights/README.md``): a new site's first session, its fourth
(judged against bands learnt from the three before it) and a session with the
TCP path limited to a tenth of its bandwidth.
"""

from __future__ import annotations

import json

from sentinel.results.report import summary, tables
from sentinel.results.report.files import load_reports
from sentinel.results.report.html import bands_said
from sentinel.results.report.load import Inputs
from tests.conftest import DATA

NIGHTS = DATA / "nights"


def _inputs(name: str) -> Inputs:
    inputs = Inputs()
    load_reports([NIGHTS / f"run-report-{name}.json"], inputs)
    assert not inputs.problems, inputs.problems
    return inputs


def _judged_rows(inputs: Inputs) -> list[tables.Row]:
    return [r for r in tables.rows(inputs.cases) if r.var.judged]


def test_a_new_sites_first_session_is_provisional_and_names_nothing():
    inputs = _inputs("first")
    rows = _judged_rows(inputs)
    assert rows and {r.verdict for r in rows} == {"provisional"}
    # what the test cases do not judge is recorded, never failed
    assert {r.verdict for r in tables.rows(inputs.cases) if r.var.judged is False} == {
        "recorded"}
    acc = tables.acceptance(inputs.cases)
    said = summary.summarise(inputs, acc, [])
    assert not [g for g in said.changed if g.verdict == "FAIL"]
    provisional = [g for g in said.unmeasured if g.title.startswith("provisional")]
    assert provisional and all(g.verdict == "INFO" for g in provisional)
    judged = [c for c in inputs.cases if c.judged]
    assert judged and all("no learnt baseline: " in c.extra["reference_status"]
                          for c in judged)


def test_the_fourth_session_is_judged_against_the_three_before_it_and_says_which():
    inputs = _inputs("judged")
    rows = _judged_rows(inputs)
    assert rows and {r.verdict for r in rows} <= {"PASS", "FAIL"}
    assert all(r.var.origin == "learnt" for r in rows)
    learnt = [c for c in inputs.cases if c.extra.get("baseline_sessions")]
    assert learnt
    for c in learnt:
        assert len(c.extra["baseline_sessions"]) == 3
        assert bands_said(c).startswith("bands learnt from 3 passed sessions, ")
    doc = json.loads(tables.summary_json(tables.rows(inputs.cases),
                                         tables.acceptance(inputs.cases), [], inputs.cases))
    sessions = {tuple(b["sessions"]) for b in doc["baselines"] if b["sessions"]}
    assert len(sessions) == 1 and len(next(iter(sessions))) == 3
    assert all(v["band_origin"] in ("learnt", None) for v in doc["variables"])


def test_a_limited_tcp_path_fails_on_its_bandwidth_measured_twice_and_nothing_else():
    inputs = _inputs("limited")
    acc = tables.acceptance(inputs.cases)
    assert {(c.check, c.transport) for c in acc.failed_cases} == {("Pt2ptCheck", "ob1-tcp")}
    (case,) = acc.failed_cases
    bw = case.variables["bw_peak"]
    assert bw.judged and bw.origin == "learnt" and bw.result == "fail"
    assert [e["bw_peak"].value for e in case.earlier_values if "bw_peak" in e], \
        "the failure was measured twice"
    said = summary.summarise(inputs, acc, [])
    groups = {g.title: g.lines for g in said.changed}
    (line,) = [ln for ln in groups["requirements not met (values outside their reference band)"]
               if " bw_peak: " in ln.text]
    assert " measured again, " in line.text and line.text.endswith("than its learnt baseline")
    assert "worse" in line.text
