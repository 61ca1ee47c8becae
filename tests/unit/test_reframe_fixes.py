"""The patches of ReFrame's internals: installed over the functions they were written for, and
the same results as ReFrame's own."""

from __future__ import annotations

import logging
import warnings

import pytest
import reframe.core.fields as rfm_fields
import reframe.core.launchers.mpi as rfm_launchers
import reframe.core.logging as rfm_logging
from reframe.core.warnings import ReframeDeprecationWarning

from sentinel.rfm.compat import reframe_fixes


def test_every_patched_reframe_function_is_the_one_the_patch_was_written_for():
    # A ReFrame upgrade that changes one of them must be looked at: the patch
    # reads its private fields or repeats its logic.
    assert reframe_fixes.changed() == []
    assert reframe_fixes.install() == ["user_deprecation_warning", "formatMessage",
                                       "SrunLauncher.__init__"]


def test_a_changed_function_is_named_and_its_patch_left_out(monkeypatch):
    name = "reframe.core.launchers.mpi.SrunLauncher.__init__"
    original, _ = reframe_fixes.PATCHED[name]
    monkeypatch.setitem(reframe_fixes.PATCHED, name, (original, "0" * 16))
    assert reframe_fixes.changed() == [name]
    assert "SrunLauncher.__init__" not in reframe_fixes.install()


def test_a_deprecation_warning_still_shows_where_the_filters_show_it():
    reframe_fixes.install()
    assert rfm_fields.user_deprecation_warning is reframe_fixes.user_deprecation_warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReframeDeprecationWarning)
        with pytest.raises(ReframeDeprecationWarning, match="old field"):
            rfm_fields.user_deprecation_warning("old field")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReframeDeprecationWarning)
        rfm_fields.user_deprecation_warning("old field")  # ignored: no stack walk, no error


@pytest.mark.parametrize("fmt", ["%(message)s", "[%(check_name)s] %(check_result)s: %(message)s",
                                 "%(check_#ALL)s"])
def test_a_log_line_is_what_reframes_formatter_writes(fmt):
    reframe_fixes.install()
    record = logging.makeLogRecord({
        "msg": "done", "check_name": "Pt2ptCheck", "check_result": "pass",
        "check_perfvalues": {"local:cpu:bw_peak": (5000.0, 5200.0, -0.1, 0.1, "MB/s", "pass")},
        "check_job_completion_time_unix": 0, "__rfm_check__": object(),
        "__rfm_loggable_attrs__": ["check_name", "check_result"]})
    record.message = record.getMessage()
    formatter = rfm_logging.CheckFieldFormatter(fmt)
    assert formatter.formatMessage(record) == reframe_fixes._REFRAME_FORMAT(formatter, record)


def test_srun_version_is_asked_once_per_process(monkeypatch):
    reframe_fixes.install()
    calls = []

    def run_command(cmd, *args, **kwargs):
        calls.append(cmd)
        raise OSError("no srun here")

    monkeypatch.setattr(rfm_launchers.osext, "run_command", run_command)
    monkeypatch.setattr(reframe_fixes, "_srun_state", {})
    first, second = rfm_launchers.SrunLauncher(), rfm_launchers.SrunLauncher()
    assert calls == ["srun --version"]
    assert vars(first) == vars(second) and second.use_cpus_per_task is True
    assert second.options is not first.options
