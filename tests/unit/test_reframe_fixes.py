"""The patches of ReFrame's internals: installed over the functions they were written for, and
the same results as ReFrame's own."""

from __future__ import annotations

import copy
import io
import json
import logging
import os
import warnings

import pytest
import reframe as rfm
import reframe.core.environments as rfm_environments
import reframe.core.fields as rfm_fields
import reframe.core.launchers.mpi as rfm_launchers
import reframe.core.logging as rfm_logging
import reframe.core.meta as rfm_meta
import reframe.core.runtime as rfm_runtime
import reframe.core.variables as rfm_variables
import reframe.frontend.cli as rfm_cli
import reframe.frontend.dependencies as dependencies
import reframe.frontend.executors as rfm_executors
import reframe.utility.jsonext as rfm_jsonext
from reframe.core import config, runtime
from reframe.core.builtins import run_after, variable
from reframe.core.warnings import ReframeDeprecationWarning

from sentinel.rfm.compat import reframe_fixes


def test_every_patched_reframe_function_is_the_one_the_patch_was_written_for():
    # A ReFrame upgrade that changes one of them must be looked at: the patch
    # reads its private fields or repeats its logic.
    assert reframe_fixes.changed() == []
    assert reframe_fixes.install() == ["user_deprecation_warning", "formatMessage",
                                       "SrunLauncher.__init__", "VarSpace._inject", "TestCase",
                                       "list_checks", "valid_sysenv_comb",
                                       "_update_check_extras", "jsonext.dump",
                                       "RegressionTestMeta.__getattribute__",
                                       "_EnvironmentSnapshot.restore"]


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


@pytest.fixture
def two_cases(test_class) -> tuple[list, dict]:
    """Test cases of two tests, the second depending on the first, and their graph."""
    class Second(test_class):
        @run_after("init")
        def after_first(self):
            self.depends_on("Probe")

    reframe_fixes.install()
    cases = rfm_executors.generate_testcases([test_class(), Second()])
    graph, skipped = dependencies.build_deps(cases)
    assert not skipped
    return dependencies.toposort(graph), graph


def _case_texts(case) -> tuple:
    own = reframe_fixes._CASE_OWN
    return own["__hash__"](case), own["__repr__"](case), own["__str__"](case)


def test_a_test_case_hashes_compares_and_prints_as_reframes_own(two_cases):
    cases, _ = two_cases
    assert rfm_executors.TestCase.__hash__ is reframe_fixes.case_hash
    for case in cases:
        assert (hash(case), repr(case), str(case)) == _case_texts(case)
        same = case.clone()
        assert same == case and hash(same) == hash(case) and same is not case
        assert reframe_fixes._CASE_OWN["__eq__"](same, case) is True
    first, second = cases
    assert first != second and reframe_fixes._CASE_OWN["__eq__"](first, second) is False
    assert (first == "text") is False  # NotImplemented, as ReFrame's
    second.prepare()  # the test is replaced by a copy: the same name, the same case
    assert (hash(second), repr(second), str(second)) == _case_texts(second)


class _Capture:
    """A printer that keeps what ``info`` is given."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def info(self, text: str) -> None:
        self.said.append(text)


def test_the_listing_shows_the_lines_reframes_own_shows(two_cases):
    cases, _ = two_cases
    own, ours = _Capture(), _Capture()
    reframe_fixes._LIST_CHECKS(cases, own)
    assert rfm_cli.list_checks is reframe_fixes.list_checks
    rfm_cli.list_checks(cases, ours)
    assert len(ours.said) == 1 and ours.said[0] == "\n".join(own.said)
    assert any(line.startswith("- Second") for line in own.said)
    assert any(line.lstrip().startswith("^Probe") for line in own.said)


@pytest.mark.parametrize("systems,environs", [(["*"], ["*"]), (["generic:default"], ["builtin"]),
                                              (["+gpu"], ["*"]), (["*"], ["+mpi", "-cuda"]),
                                              (["%cores=4"], ["builtin"])])
def test_valid_combinations_are_reframes_and_each_callers_own(test_class, systems, environs):
    reframe_fixes.install()
    assert rfm_runtime.valid_sysenv_comb is reframe_fixes.valid_sysenv_comb
    expected = reframe_fixes._VALID_SYSENV(systems, environs)
    first = rfm_runtime.valid_sysenv_comb(systems, environs)
    assert first == expected
    for environs_of_partition in first.values():
        environs_of_partition.clear()  # a caller changing its answer changes no other's
    assert rfm_runtime.valid_sysenv_comb(systems, environs) == expected


@pytest.mark.parametrize("value", [[], ["*"], [1, "a", None, (2, 3)], {"A": "1"}, {1, 2},
                                   [[1], [2]], {"k": ["v"]}, [{"a": 1}]])
def test_a_default_is_copied_as_deepcopy_copies_it(value):
    copied = reframe_fixes._copied(value)
    assert copied == copy.deepcopy(value) and copied is not value
    if isinstance(value, list) and value and isinstance(value[0], (list, dict)):
        assert copied[0] is not value[0]  # nested: a deep copy still


def test_a_tests_log_record_has_the_fields_reframes_own_gives(test_class):
    reframe_fixes.install()
    assert rfm_logging.LoggerAdapter._update_check_extras is reframe_fixes.update_check_extras
    test = test_class()
    ours, own = rfm_logging.LoggerAdapter(check=test), rfm_logging.LoggerAdapter(check=test)
    ours._update_check_extras()
    reframe_fixes._CHECK_EXTRAS(own)
    assert ours.extra == own.extra and "check_sizes" in ours.extra
    ours._update_check_extras()  # ReFrame's: the list of fields grows on each record
    reframe_fixes._CHECK_EXTRAS(own)
    assert ours.extra == own.extra


def test_a_test_dumped_as_json_reads_back_as_reframes_own_dump(test_class):
    reframe_fixes.install()
    assert rfm_jsonext.dump is reframe_fixes.json_dump
    test = test_class()
    ours, own = io.StringIO(), io.StringIO()
    rfm_jsonext.dump(test, ours, indent=2)
    reframe_fixes._JSON_DUMP(test, own, indent=2)
    assert json.loads(ours.getvalue()) == json.loads(own.getvalue())
    assert json.loads(ours.getvalue())["sizes"] == [1, 2]


def test_a_test_class_attribute_reads_as_reframes_metaclass_reads_it(test_class):
    reframe_fixes.install()
    assert rfm_meta.RegressionTestMeta.__getattribute__ is reframe_fixes.meta_getattribute
    assert test_class.label == "a" and test_class.sizes == [1, 2]  # variables: their default
    assert test_class.executable == "true" and callable(test_class.setup)
    own = reframe_fixes._META_GETATTRIBUTE
    for name in ("label", "sizes", "later", "valid_systems"):
        with pytest.raises(AttributeError):
            own(test_class, name)
        with pytest.raises(AttributeError):
            reframe_fixes.meta_getattribute(test_class, name)
    assert reframe_fixes.meta_getattribute(test_class, "setup") == own(test_class, "setup")


def test_a_restored_environment_is_the_snapshots(monkeypatch):
    reframe_fixes.install()
    monkeypatch.setenv("SENTINEL_KEPT", "1")
    monkeypatch.setenv("SENTINEL_CHANGED", "before")
    monkeypatch.delenv("SENTINEL_ADDED", raising=False)
    saved = rfm_environments.snapshot()
    monkeypatch.setenv("SENTINEL_CHANGED", "after")
    monkeypatch.setenv("SENTINEL_ADDED", "new")
    monkeypatch.delenv("SENTINEL_KEPT")
    saved.restore()
    assert dict(os.environ) == dict(saved.env_vars)
    assert os.environ["SENTINEL_CHANGED"] == "before" and "SENTINEL_ADDED" not in os.environ
