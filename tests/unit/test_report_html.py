"""The report's page: every value escaped by the templates' autoescape.

Data: the real run report of tests/unit/test_report.py.
"""

from __future__ import annotations

import json

from sentinel.results.report import html, summary, tables
from sentinel.results.report.load import Inputs, cases_of
from tests.conftest import DATA


def _page(report: dict, **inputs: list[str]) -> str:
    cases = cases_of(report, "r.json")
    read = Inputs(cases=cases, sessions=[report["session_info"]], **inputs)
    acc = tables.acceptance(cases)
    return html.page("MPI Sentinel report", "now", read, acc, tables.transport_matrix(cases),
                     {}, [], summary.summarise(read, acc, []))


def test_text_from_the_inputs_is_escaped_wherever_it_shows():
    report = json.loads((DATA / "run-report-slurm-two.json").read_text())
    report["runs"][0]["testcases"][0].update(result="fail", fail_reason="<b>slow</b> & 'gone'")
    report["session_info"]["cmdline"] = 'reframe -n "<x>"'
    page = _page(report, files=["<r>.json"], problems=["<r>.json: not <i>JSON</i>"])
    assert "<b>" not in page and "<i>" not in page and "<x>" not in page
    assert "&lt;b&gt;slow&lt;/b&gt; &amp; &#39;gone&#39;" in page
    assert "Run reports: &lt;r&gt;.json;" in page
    assert "<li>&lt;r&gt;.json: not &lt;i&gt;JSON&lt;/i&gt;</li>" in page
    assert "<td>reframe -n &#34;&lt;x&gt;&#34;</td>" in page


def test_no_whitespace_between_tags():
    page = _page(json.loads((DATA / "run-report-slurm-two.json").read_text()))
    assert page.startswith('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">')
    body = page.split("</style>", 1)[1]
    assert "\n" not in body
    assert '<section id="summary"><h2>Summary</h2><p><span class="verdict ' in body
    assert "<tr><td>" in body and body.endswith("</section></body></html>")
