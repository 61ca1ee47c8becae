"""``sentinel report`` on the run reports of this test session, opened in Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib import image

from tests.integration.conftest import QUICK, need_stack, reframe
from tests.integration.conftest import browser as playwright_chromium

pytestmark = pytest.mark.integration

SENTINEL = str(Path(sys.executable).parent / "sentinel")
SECTIONS = ("summary", "p-local-cpu", "d-local-cpu-openmpi-Pt2ptCheck", "acceptance", "changes",
            "nodes", "matrix", "unmeasured", "inputs")
SCREEN = {"width": 1280, "height": 800}  # a laptop's screen: the summary must fit it


def _report(out: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SENTINEL_OUTPUT": str(out)}
    return subprocess.run([SENTINEL, "report", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def written(quick_matrix, tmp_path_factory):
    """The report of the session's quick run: (process, HTML path, HTML text)."""
    out = tmp_path_factory.mktemp("report")
    proc = _report(quick_matrix.out, "--out", str(out))
    html = out / "sentinel-report.html"
    return proc, html, html.read_text() if html.exists() else ""


def test_report_is_written_and_its_path_printed(written, quick_matrix):
    proc, html, text = written
    assert proc.returncode == 0, proc.stderr
    assert f"report: {html}" in proc.stdout
    assert proc.stdout.startswith("acceptance: ")
    # The headline table names real results of this run.
    assert re.search(r"local:cpu\+openmpi +Pt2ptCheck +ob1-vader +core +bw_peak +\d", proc.stdout)
    for sid in SECTIONS:
        assert f'<section id="{sid}"' in text
    # Self-contained: every image is embedded, nothing is fetched.
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", text)
    assert text.count('src="data:image/png;base64,') >= 4
    assert "Pt2ptCheck latency against message size, openmpi on local:cpu" in text
    assert "JacobiCheck MLUP/s and time per phase, " in text
    # every performance variable, one click away in its check's section
    ran = [c for c in quick_matrix.cases() if c["result"] == "pass" and c.get("perfvalues")]
    listed = sum(int(n) for n in re.findall(
        r"<details><summary>every performance variable of these test cases \((\d+)\)", text))
    rows = sum(d.count("<tr><td>") for d in re.findall(r"<details>.*?</details>", text))
    assert listed == rows >= sum(len(c["perfvalues"]) for c in ran)
    print(f"report of the quick run: {len(text) / 1e6:.2f} MB, "
          f"{text.count('<figure>')} figures")


def test_matching_times_are_resolved_with_their_interval_or_a_bound(written):
    _, _, text = written
    section = "".join(re.findall(r'<section id="d-local-cpu-\w+-MatchingCheck".*?</section>',
                                 text))
    times = re.findall(r"(match_time\w*)(?: = ([-\d.e+]+) ns \[([-\d.e+]+), ([-\d.e+]+)\]"
                       r"| unresolved: &lt; ([\d.e+-]+) ns)", section)
    assert times, section[:2000]
    for name, value, low, high, bound in times:
        if bound:
            assert float(bound) > 0, name
        else:  # a resolved time is positive, inside its interval
            assert 0 < float(low) <= float(value) <= float(high), (name, value, low, high)
    assert not re.search(r"= -\d", section)


def _open(p, chromium: str, html: Path, requests: list[str]):
    browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
    page = browser.new_page(viewport=SCREEN)
    page.on("request", lambda r: requests.append(r.url))
    page.goto(html.as_uri(), wait_until="load")
    return browser, page


def test_the_report_in_headless_chromium(written, tmp_path):
    """Unique figure titles, the summary on one screen, links that land, offline, printable."""
    _, html, _ = written
    driver, chromium = playwright_chromium()
    requests: list[str] = []
    with driver as p:
        browser, page = _open(p, chromium, html, requests)
        page.screenshot(path=str(tmp_path / "first-screen.png"))
        titles = page.eval_on_selector_all("figure figcaption", "fs => fs.map(f => f.textContent)")
        assert len(titles) >= 4 and len(set(titles)) == len(titles), sorted(titles)
        assert page.eval_on_selector_all(
            "figure img", "is => is.filter(i => !(i.complete && i.naturalWidth > 0)).length") == 0
        bottom = page.evaluate("document.getElementById('summary').getBoundingClientRect()"
                               ".bottom")
        assert bottom <= SCREEN["height"], f"the summary ends at {bottom} px"
        targets = page.eval_on_selector_all(
            "#summary a, nav a", "as => as.map(a => a.getAttribute('href'))")
        assert "#p-local-cpu" in targets and "#acceptance" in targets
        for href in dict.fromkeys(targets):
            page.goto(html.as_uri())
            page.click(f"a[href='{href}']")
            top = page.evaluate(f"document.getElementById({href[1:]!r})"
                                ".getBoundingClientRect().top")
            # below the sticky header (scroll-margin-top), at the top of the
            # screen; or on screen when the page cannot scroll further
            end = page.evaluate("window.scrollY + window.innerHeight >= "
                                "document.documentElement.scrollHeight - 1")
            assert 0 <= top < SCREEN["height"] * (1 if end else 0.5), (href, top)
        page.emulate_media(media="print")
        pdf = page.pdf(format="A4")
        browser.close()
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 3
    assert {r.split(":", 1)[0] for r in requests} <= {"file", "data"}, requests
    pixels = image.imread(str(tmp_path / "first-screen.png"))[..., :3]
    assert (pixels.mean(axis=2) < 0.9).mean() > 0.02, "the first screen is nearly blank"


def test_a_truncated_run_report_is_named_and_the_rest_still_reported(quick_matrix, tmp_path):
    good = max((quick_matrix.out / "reports").glob("run-report-*.json"), key=os.path.getmtime)
    cut = tmp_path / "run-report-cut.json"
    text = good.read_text()
    cut.write_text(text[: len(text) * 2 // 3])
    proc = _report(quick_matrix.out, str(cut), str(good), "--out", str(tmp_path))
    assert proc.returncode == 1
    assert f"sentinel report: left out: {cut}: truncated at line " in proc.stderr
    html = (tmp_path / "sentinel-report.html").read_text()
    assert f"{cut}: truncated at line" in html
    assert "Pt2ptCheck latency against message size, openmpi on local:cpu" in html
    assert (tmp_path / "sentinel-report.csv").read_text().count("\n") > 100


def test_no_run_report_is_an_error_naming_where_it_looked(tmp_path):
    proc = _report(tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"sentinel report: no run report in {tmp_path / 'reports'}: "
                                   "run reframe first (make run), or name the run reports to use")


REQUIREMENT = """\
Pt2ptCheck:
  $index: [$partition, $environ, transport_name, mapping]
  local:cpu:
    openmpi:
      ob1-vader:
        core:
          bw_peak: [1.0e+7, -0.1, 0.1, MB/s]
"""


def test_the_summary_says_what_changed_since_the_previous_session(quick_matrix, tmp_path):
    """A second quick session, one test case against a requirement it cannot meet.

    It is compared with the session of the quick run (its results database
    copied): that test case is a new failure and its requirement unmet, and
    the test cases it did not run are listed as such; each line links to the
    test case's row.
    """
    need_stack("openmpi")
    db, refs = tmp_path / "results.db", tmp_path / "refs"
    shutil.copy(quick_matrix.out / "var" / "results.db", db)
    refs.mkdir()
    (refs / "local.yaml").write_text(REQUIREMENT)
    (tmp_path / "second").mkdir()
    second = reframe([*QUICK, "-n", "^Pt2ptCheck.*%transport=ob1-vader.*%mapping=core", "-r"],
                     tmp_path / "second", checks=("pt2pt.py",),
                     env={"SENTINEL_RESULTS_DB": str(db), "SENTINEL_REFERENCES": str(refs)})
    assert second.returncode != 0 and "performance" in second.output, second.output[-3000:]
    out = tmp_path / "report"
    proc = _report(tmp_path, str(second.report_path), "--db", str(db), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    text = (out / "sentinel-report.html").read_text()
    summary = text.split('<section id="summary">')[1].split("</section>")[0]
    first = quick_matrix.report["session_info"]["uuid"][:8]
    assert f"Compared with session {first} of mode quick, started " in summary
    tc, = second.cases("Pt2ptCheck")
    name = tc["display_name"].split(" %build")[0]
    assert re.search(rf"1</span> test cases that fail \(new since the previous session\)"
                     rf".*{re.escape(name)}: .*\(passed then\)", summary), summary
    assert re.search(rf"1</span> requirements not met.*{re.escape(name)} bw_peak: ", summary)
    # the builds (fixtures, ``~partition+environ``) go with the tests that need them
    ran_then = len([c for c in quick_matrix.cases()
                    if c["result"] != "skip" and " ~" not in c["name"]])
    assert re.search(rf"{ran_then - 1}</span> test cases the previous session ran and this "
                     "one did not", summary), summary
    driver, chromium = playwright_chromium()
    with driver as p:
        browser, page = _open(p, chromium, out / "sentinel-report.html", [])
        page.locator("#summary li.FAIL a", has_text=name).first.click()
        row = page.evaluate("location.hash")
        assert row.startswith("#c-local-cpu-openmpi-Pt2ptCheck")
        assert page.evaluate(f"document.getElementById({row[1:]!r}).textContent").startswith(
            "ob1-vader core")
        browser.close()
