"""The ReFrame compatibility layer: contained, targeted, and the configuration only declares."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import reframe
from reframe.core.fields import TypedField, make_convertible

from sentinel.rfm import compat
from tests.conftest import ROOT

#: The ``sentinel`` command's entry points, which parse their own command line.
ENTRY_POINTS = {"src/sentinel/site/init/command.py", "src/sentinel/site/discover.py"}

#: Loads config/settings.py as ``reframe --mode nightly -r`` does, recording what
#: the suite registers at exit and every database it opens; prints them as JSON.
LOADER = r"""
import atexit, json, runpy, sqlite3, sys
registered, opened = [], []
_register, _connect = atexit.register, sqlite3.connect
def register(func, *a, **k):
    registered.append(f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', func)}")
    return _register(func, *a, **k)
def connect(path, *a, **k):
    opened.append(str(path))
    return _connect(path, *a, **k)
atexit.register, sqlite3.connect = register, connect
sys.argv = ["reframe", "-C", sys.argv[1], "-c", "checks", "--mode", "nightly", "-r"]
runpy.run_path(sys.argv[2], run_name="settings")
print("LOADED " + json.dumps({"registered": registered, "opened": opened}))
"""


def test_the_workarounds_target_the_installed_reframe_series():
    assert reframe.VERSION.startswith(f"{compat.REFRAME_SERIES}."), (
        f"ReFrame {reframe.VERSION} is installed; sentinel.rfm.compat works around ReFrame "
        f"{compat.REFRAME_SERIES}: check each of its modules against the new release "
        "(what each works around is in its docstring), then move REFRAME_SERIES")


def test_reframe_still_lets_a_value_that_does_not_convert_raise_what_it_does_not_catch():
    """What ``compat.setvars`` works around: ReFrame converts a ``-S`` value with the
    type's constructor and catches only ``TypeError``; ``int('abc')`` raises
    ``ValueError``, which stopped a whole session with a traceback."""
    field = TypedField(int)
    field.__set_name__(None, "max_size")
    assert field.__set__(None, make_convertible("64")) == 64
    with pytest.raises(ValueError):
        field.__set__(None, make_convertible("abc"))


#: A test that skips itself with a message, without :class:`~sentinel.rfm.compat.skips.RecordsSkip`.
SKIPPING = """
import reframe as rfm
from reframe.core.builtins import run_after


@rfm.simple_test
class SkipsWithAMessage(rfm.RunOnlyRegressionTest):
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    executable = "true"

    @run_after("setup")
    def leave(self):
        self.skip("the reason of this skip")
"""


def test_reframes_run_report_still_drops_a_skips_message(tmp_path):
    """What ``compat.skips`` works around: the message is on the console, not in the report."""
    (tmp_path / "skipping.py").write_text(SKIPPING)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RFM_")}
    proc = subprocess.run([str(Path(sys.executable).parent / "reframe"), "-c", "skipping.py",
                           "-r", "--report-file", "report.json"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the reason of this skip" in proc.stdout
    report = (tmp_path / "report.json").read_text()
    [case] = json.loads(report)["runs"][0]["testcases"]
    assert case["result"] == "skip"
    assert "the reason of this skip" not in report


def test_the_command_line_is_read_in_one_module():
    readers = sorted(str(p.relative_to(ROOT)) for d in ("src", "config", "checks")
                     for p in (ROOT / d).rglob("*.py") if "sys.argv" in p.read_text())
    assert set(readers) - ENTRY_POINTS == {"src/sentinel/rfm/compat/cmdline.py"}, readers


def test_loading_the_configuration_registers_nothing_at_exit_and_opens_no_database(tmp_path):
    # a results database holding a session, as after a site's first night
    db = tmp_path / "var" / "results.db"
    db.parent.mkdir()
    sqlite3.connect(db).close()
    settings = ROOT / "config" / "settings.py"
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp_path), "RFM_SYSTEM": "local"}
    proc = subprocess.run([sys.executable, "-c", LOADER, str(settings), str(settings)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.split("LOADED ", 1)[1].splitlines()[0])
    ours = [f for f in seen["registered"] if f.startswith(("sentinel", "settings"))]
    assert ours == [], ours
    assert seen["opened"] == [], seen["opened"]


def test_the_nightly_compares_with_past_nights_once_a_database_exists(tmp_path):
    """The configuration asks for ReFrame's end-of-run comparison by the file's presence."""
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp_path), "RFM_SYSTEM": "local"}
    code = ("import runpy, sys, json; sys.argv = ['reframe', '--mode', 'nightly', '-r']; "
            f"m = runpy.run_path({str(ROOT / 'config' / 'common.py')!r}); "
            "print(json.dumps([o for x in m['modes'] if x['name'] == 'nightly' "
            "for o in x['options'] if 'performance-report' in o]))")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == []
    assert "mpi-sentinel: no nightly history yet in " in first.stderr
    (tmp_path / "var" / "results.db").write_bytes(b"")
    later = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=120)
    assert later.returncode == 0, later.stderr
    assert len(json.loads(later.stdout)) == 1 and later.stderr == ""
    assert not (tmp_path / "var" / "results.db").read_bytes()  # never opened nor written
