"""The patches of ReFrame's internals: installed over the functions they were written for, and
the same results as ReFrame's own."""

from __future__ import annotations

import logging
import warnings

import pytest
import reframe as rfm
import reframe.core.fields as rfm_fields
import reframe.core.launchers.mpi as rfm_launchers
import reframe.core.logging as rfm_logging
import reframe.core.variables as rfm_variables
from reframe.core import config, runtime
from reframe.core.builtins import variable
from reframe.core.warnings import ReframeDeprecationWarning

from sentinel.rfm.compat import reframe_fixes


def test_every_patched_reframe_function_is_the_one_the_patch_was_written_for():
    # A ReFrame upgrade that changes one of them must be looked at: the patch
    # reads its private fields or repeats its logic.
    assert reframe_fixes.changed() == []
    assert reframe_fixes.install() == ["user_deprecation_warning", "formatMessage",
                                       "SrunLauncher.__init__", "VarSpace._inject"]


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


@pytest.fixture
def test_class(monkeypatch) -> type:
    """A run-only test with a mutable and an immutable variable, under ReFrame's generic system.

    The runtime is this test's only: the other tests run before ReFrame has one.
    """
    site = config.load_config()
    site.select_subconfig("generic")
    monkeypatch.setattr(runtime, "_runtime_context", None)
    runtime.init_runtime(site)

    class Probe(rfm.RunOnlyRegressionTest):
        sizes = variable(list, value=[1, 2])
        label = variable(str, value="a")
        later = variable(int)
        valid_systems = ["*"]
        valid_prog_environs = ["*"]
        executable = "true"

    return Probe


def _values(test: object) -> dict:
    """The instance's public attributes; an object compared by identity only, by its type."""
    return {k: v if type(v).__eq__ is not object.__eq__ else type(v)
            for k, v in vars(test).items() if not k.startswith("_")}


def test_later_instances_get_the_variables_reframe_gives_the_first(test_class, monkeypatch):
    reframe_fixes.install()
    assert rfm_variables.VarSpace._inject is reframe_fixes.var_space_inject
    first, second = test_class(), test_class()
    # ReFrame's own injection, for comparison
    monkeypatch.setattr(rfm_variables.VarSpace, "_inject", reframe_fixes._VAR_INJECT)
    own = test_class()
    assert _values(second) == _values(own)
    # a mutable default is each instance's own, as ReFrame's deep copy makes it
    assert second.sizes == [1, 2] and second.sizes is not first.sizes
    first.sizes.append(3)
    assert second.sizes == [1, 2] and second.env_vars is not first.env_vars


def test_a_default_changed_on_the_class_reaches_the_next_instance(test_class):
    reframe_fixes.install()
    test_class()
    test_class.later = 3  # a variable without a default, given one on the class
    assert test_class().later == 3
    test_class.label = "b"
    test_class.sizes = [9]
    later = test_class()
    assert (later.label, later.sizes, later.later) == ("b", [9], 3)
