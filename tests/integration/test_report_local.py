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

from tests.integration.conftest import REQUIRED

pytestmark = pytest.mark.integration

SENTINEL = str(Path(sys.executable).parent / "sentinel")
SECTIONS = ("acceptance", "matrix", "curves", "matching", "jacobi", "changes", "trends",
            "variables", "inputs")


def _chromium() -> str:
    path = shutil.which("chromium")
    if path:
        return path
    msg = "chromium is not installed (apt install chromium; make test installs it)"
    if "chromium" in REQUIRED:
        pytest.fail(f"SENTINEL_REQUIRE_STACKS includes chromium, but {msg}")
    pytest.skip(msg)


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
        assert f'<section id="{sid}">' in text
    # Self-contained: every image is embedded, nothing is fetched.
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", text)
    assert text.count('src="data:image/png;base64,') >= 4
    assert "Pt2ptCheck latency on local:cpu" in text and "Jacobi " in text
    ran = [c for c in quick_matrix.cases() if c["result"] == "pass" and c.get("perfvalues")]
    assert len(re.findall(r"<tr><td>local:cpu\+", text)) >= sum(
        len(c["perfvalues"]) for c in ran)


def test_matching_times_are_resolved_with_their_interval_or_a_bound(written):
    _, _, text = written
    section = text.split('<section id="matching">')[1].split("</section>")[0]
    times = re.findall(r"(match_time\w*)(?: = ([-\d.e+]+) ns \[([-\d.e+]+), ([-\d.e+]+)\]"
                       r"| unresolved: &lt; ([\d.e+-]+) ns)", section)
    assert times, section[:2000]
    for name, value, low, high, bound in times:
        if bound:
            assert float(bound) > 0, name
        else:  # a resolved time is positive, inside its interval
            assert 0 < float(low) <= float(value) <= float(high), (name, value, low, high)
    assert not re.search(r"= -\d", section)


def test_report_renders_in_headless_chromium(written, tmp_path):
    _, html, _ = written
    chromium = _chromium()
    shot = tmp_path / "report.png"
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}"]
    proc = subprocess.run([*base, f"--screenshot={shot}", "--window-size=1280,2400",
                           html.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    pixels = image.imread(str(shot))[..., :3]
    ink = (pixels.mean(axis=2) < 0.9).mean()
    assert ink > 0.02, f"screenshot nearly blank: {ink:.2%} of pixels are not white"
    assert pixels.std() > 0.05
    dom = subprocess.run([*base, "--dump-dom", html.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    for heading in ("Acceptance", "Transport matrix", "Latency and bandwidth",
                    "Message matching", "Hybrid Jacobi", "Every performance variable"):
        assert f"<h2>{heading}" in dom


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
    assert "Pt2ptCheck latency on local:cpu" in html
    assert (tmp_path / "sentinel-report.csv").read_text().count("\n") > 100


def test_no_run_report_is_an_error_naming_where_it_looked(tmp_path):
    proc = _report(tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"sentinel report: no run report in {tmp_path / 'reports'}: "
                                   "run reframe first (make run), or name the run reports to use")
