"""Results history: nightly sessions in the results database, compared by ReFrame.

Three ``--mode nightly`` sessions and one ``--mode quick`` session of one
Pt2ptCheck go into a fresh database. ``--performance-compare`` with the
session filter of docs/history.md then compares the last nightly session with the
median of the earlier nightly ones, leaving the quick session out, and the
nightly end-of-run table does the same for the session that just ran.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import REFRAME, Run, need_stack, reframe

pytestmark = pytest.mark.integration

NAME = "Pt2ptCheck.*transport=ob1-vader.*mapping=core"
# The nightly packs transports: its packed job runs the selected one only.
SMALL = ["-S", "Pt2ptCheck.max_size=1024", "-S", "Pt2ptCheck.modes=standard",
         "-S", "Pt2ptCheck.iterations=100", "-S", "Pt2ptCheck.repetitions=3",
         "-S", "Pt2ptCheck.transports=openmpi/ob1-vader"]
VARIABLE = "latency_8B"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _session(out: Path, mode: str) -> Run:
    run = reframe(["--mode", mode, "-n", NAME, *SMALL, "--system", "local:cpu", "-r"], out,
                  checks=("pt2pt.py",))
    assert run.returncode == 0, run.output[-3000:]
    return run


def _value(run: Run) -> float:
    tc = run.case("Pt2ptCheck", transport="ob1-vader")
    return tc["perfvalues"][f"local:cpu:{VARIABLE}"][0]


def _reframe_query(out: Path, option: str) -> subprocess.CompletedProcess:
    """A reframe query of the results database under ``out`` (nothing run)."""
    env = {**os.environ, "SENTINEL_OUTPUT": str(out)}
    return subprocess.run([REFRAME, "-C", str(ROOT / "config" / "settings.py"), option],
                          capture_output=True, text=True, env=env, timeout=120)


def _row(table: str, variable: str) -> list[str]:
    """The cells of the comparison table's row of ``variable``."""
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) > 2 and cells[2] == variable:
            return cells
    raise AssertionError(f"no row for {variable} in:\n{table[-3000:]}")


def test_nightly_sessions_are_stored_and_compared_with_the_earlier_nights(tmp_path):
    need_stack("openmpi")
    first = _session(tmp_path, "nightly")
    # An empty history: said in one line, not a table of "<no data>" rows.
    assert "mpi-sentinel: no nightly history yet in " in first.output
    assert "<no data>" not in first.output
    earlier = [_value(first), _value(_session(tmp_path, "nightly"))]
    quick = _session(tmp_path, "quick")  # not a nightly session: left out of the comparison
    split = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%z")
    last = _session(tmp_path, "nightly")
    expected = 100 * (_value(last) - statistics.median(earlier)) / statistics.median(earlier)

    # The nightly's command line ends with the change points of the nightly
    # sessions (three nights: too few for a segment on either side, so none).
    changed = subprocess.run([str(Path(REFRAME).parent / "sentinel"), "changes", "--mode",
                              "nightly"], capture_output=True, text=True,
                             env={**os.environ, "SENTINEL_OUTPUT": str(tmp_path)}, timeout=300)
    assert changed.returncode == 0, changed.stderr
    assert ("3 sessions, 0 change points (E-Divisive means and blocks, p <= 0.01)"
            in changed.stdout), changed.stdout
    # reframe itself registers nothing at exit (the configuration only declares)
    assert "change points" not in last.output + quick.output

    # The end-of-run table of the nightly mode: this session against the stored nights.
    cells = _row(last.output, VARIABLE)
    # The table prints values rounded: compare to its precision.
    assert float(cells[4]) == pytest.approx(_value(last), rel=1e-4)
    assert float(cells[5]) == pytest.approx(statistics.median(earlier), rel=1e-4)
    assert float(cells[8]) == pytest.approx(expected, abs=0.01)

    # docs/history.md's comparison, with the split between "last night" and "before".
    nightly = '?mode=="nightly"'
    spec = f"{split}:now{nightly}/now-8d:{split}{nightly}/median:/+result"
    proc = _reframe_query(tmp_path, f"--performance-compare={spec}")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    cells = _row(proc.stdout, VARIABLE)
    assert float(cells[4]) == pytest.approx(_value(last), rel=1e-4)
    assert float(cells[5]) == pytest.approx(statistics.median(earlier), rel=1e-4)
    assert float(cells[8]) == pytest.approx(expected, abs=0.01)
    assert cells[6:8] == ["pass", "pass"]

    listed = _reframe_query(tmp_path, "--list-stored-sessions").stdout
    sessions = [line for line in listed.splitlines() if UUID.search(line)]
    assert len(sessions) == 4, listed
    assert sum("│ nightly " in line for line in sessions) == 3, listed

    # The HTML report draws the same sessions as trends.
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp_path)}
    report = subprocess.run([str(Path(REFRAME).parent / "sentinel"), "report"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "reports" / "sentinel-report.html").read_text()
    # no change point over 4 sessions: the section says so instead of a trend
    assert ("Over the 4 stored sessions that ran these test cases, no change point in their "
            "headline variables") in html
