"""Costs of ReFrame 4.10 that a site pays per test and per log line, removed.

ReFrame instantiates every test variant, and for each it sets the deprecated
``variables`` alias of ``env_vars`` with deprecation warnings suppressed.
``user_deprecation_warning`` still walks ``inspect.stack()`` (reading the
source of every frame) before the warnings filter discards the warning:
about 20 ms per variant, two thirds of listing a site of 1,845 checks
(measured with cProfile: 115 of 183 s). Here the walk is skipped when the
active warnings filter would ignore the warning anyway; every warning that
can be shown is raised by ReFrame's own function, unchanged.

ReFrame's log formatter turns every ``check_*`` field of a record into text
(JSON for the non-strings) before it formats the line, whether the format
names the field or not: for a ``%(message)s`` console that was a quarter of
listing the same site (16.5 of 64.8 s under cProfile, 27,322 lines). Here a
line is formatted from the fields its format names; a format that expands
``%(check_#ALL)s`` goes through ReFrame's own path.

ReFrame's ``srun`` launcher runs ``srun --version`` each time a job is set
up (to learn whether Slurm takes ``--cpus-per-task`` on steps): 40 ms a test
case, a third of dry-running the quick mode on a 10-partition site (10.7 of
30.5 s per partition under cProfile). Here it runs once per process and
every later launcher starts from what the first one found.

ReFrame injects a test's variables into each new instance of its class by
setting every variable's descriptor on the class again and type-checking and
converting its default again (``VarSpace._inject``), the same work for every
variant of the class: 40 of 106 s of listing the example big site under
cProfile (5,635 instances, 490,042 conversions). Here the first instance of
a class goes through ReFrame's own injection, and every later instance gets
the defaults it set, each copied as ReFrame copies it (immutable values
shared); a class whose defaults changed since goes through ReFrame's path
again.

ReFrame's test case (``TestCase``) compares, hashes and prints itself by
reading its test's unique name, partition and environment through three
properties and the test's own ``__getattribute__`` each time: listing the
example big site hashes test cases 912,008 times and formats 460,580 of
them into an error message that is not raised (``build_deps``), a third of
the dependency graph's time (py-spy: hash 8.2 %, repr 6.0 %, str 5.1 % of
the listing). Here a test case reads them once: its test is only ever
replaced by a copy with the same name, and the hash is ReFrame's formula,
so every set of test cases iterates in ReFrame's order.

ReFrame works out the partitions and environments a test may run on
(``valid_sysenv_comb``: every partition's and environment's features against
each of the test's specifications) for each test and each fixture it
registers, the same few answers thousands of times (7.8 % of listing the
example big site). Here each is worked out once per system and arguments
(the partitions and environments of a loaded system do not change), and
every caller gets a dictionary and lists of its own.

A mutable default of a test variable (a list, a set, a dictionary) is
deep-copied into each new test; one that holds only immutable values is now
copied directly, which gives the same copy (6.2 % of the listing).

ReFrame fills each log record of a test with every loggable attribute of
the test (``LoggerAdapter._update_check_extras``), asking the test's class
for its loggable attributes and parameters through its metaclass, and
entering and leaving a deprecation filter, once per attribute: 9 % of
dry-running the example big site's nightly. Here the class's list is read
once (it does not change once the class is made) and the attributes are
read under one filter; each value is formatted as ReFrame formats it.

ReFrame's listing (``list_checks``) sends each of its lines through the
logger on its own: 56,167 records for the example big site, 9.8 % of the
listing's time. Here ReFrame's own function writes into a buffer that
hands its lines to the logger at once, in one record, after it returns; the
console shows the same lines.

Each patch is installed (:func:`install`, through
:func:`sentinel.rfm.compat.install`, called once by :mod:`sentinel.rfm.base`)
only over the ReFrame function whose source it was written against
(:data:`PATCHED`, a digest of each): a ReFrame whose function differs keeps
its own, and ``tests/unit/test_reframe_fixes.py`` fails, naming it.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import logging
import os
import warnings
import weakref
from collections.abc import Callable

import reframe.core.environments as rfm_environments
import reframe.core.fields as rfm_fields
import reframe.core.launchers.mpi as rfm_launchers
import reframe.core.logging as rfm_logging
import reframe.core.meta as rfm_meta
import reframe.core.namespaces as rfm_namespaces
import reframe.core.runtime as rfm_runtime
import reframe.core.variables as rfm_variables
import reframe.core.warnings as rfm_warnings
import reframe.frontend.cli as rfm_cli
import reframe.frontend.executors as rfm_executors
import reframe.utility.jsonext as rfm_jsonext
from reframe.core.warnings import ReframeDeprecationWarning

_REFRAME_WARNING = rfm_warnings.user_deprecation_warning
_FORMATTER = rfm_logging.CheckFieldFormatter
_REFRAME_FORMAT = _FORMATTER.formatMessage
_SRUN_INIT = rfm_launchers.SrunLauncher.__init__
_VAR_INJECT = rfm_variables.VarSpace._inject
_CASE = rfm_executors.TestCase
_CASE_OWN = {name: getattr(_CASE, name) for name in ("__hash__", "__eq__", "__repr__", "__str__")}
_LIST_CHECKS = rfm_cli.list_checks
_VALID_SYSENV = rfm_runtime.valid_sysenv_comb
_CHECK_EXTRAS = rfm_logging.LoggerAdapter._update_check_extras
_JSON_DUMP = rfm_jsonext.dump
_META_GETATTRIBUTE = rfm_meta.RegressionTestMeta.__getattribute__
_SNAPSHOT_RESTORE = rfm_environments._EnvironmentSnapshot.restore
#: Per test class: each loggable attribute, its record field and its parameter (or None).
_loggable: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: The system valid_sysenv_comb last answered for, and its answers by arguments.
_sysenv: dict = {"system": None, "known": {}}
#: Per test class: its variable space, and each defined variable's name, the
#: variable, the default ReFrame set and whether that default is immutable.
_injected: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: The default of an alias variable: copied from its target each time.
_ALIAS = object()
_IMMUTABLE = (str, int, float, bool, type(None))
_srun_state: dict = {}  # the first SrunLauncher's attributes, once it has them
#: A record field ReFrame's formatter reads whatever the format names.
_ALWAYS_READ = frozenset({"check_job_completion_time_unix"})


def _ignored() -> bool:
    """Whether the first warnings filter for ReFrame's deprecations ignores them all."""
    for action, message, category, module, lineno in warnings.filters:
        if issubclass(ReframeDeprecationWarning, category):
            return action == "ignore" and message is None and module is None and not lineno
    return False


def user_deprecation_warning(message: str, from_version: str = "0.0.0") -> None:
    """ReFrame's ``user_deprecation_warning``, without its stack walk when ignored."""
    if not _ignored():
        _REFRAME_WARNING(message, from_version)


def format_message(self: rfm_logging.CheckFieldFormatter, record: logging.LogRecord) -> str:
    """ReFrame's ``formatMessage`` on the record's fields that the format names."""
    if self._CheckFieldFormatter__expand_vars:
        return _REFRAME_FORMAT(self, record)
    specs = self._CheckFieldFormatter__specs
    if specs == ["message"]:  # a console's "%(message)s": no field to look up
        return self._CheckFieldFormatter__fmt % {"message": record.message}
    named = _ALWAYS_READ.union(specs)
    fields = {k: v for k, v in record.__dict__.items()
              if not k.startswith("check_") or k in named}
    return _REFRAME_FORMAT(self, logging.makeLogRecord(fields))


def srun_launcher_init(self: rfm_launchers.SrunLauncher) -> None:
    """ReFrame's ``SrunLauncher.__init__``, asking ``srun --version`` once per process."""
    if not _srun_state:
        _SRUN_INIT(self)
        _srun_state.update(copy.deepcopy(vars(self)))
        return
    vars(self).update(copy.deepcopy(_srun_state))


def _immutable(value: object) -> bool:
    """Whether ``value`` can be shared between instances (ReFrame's deep copy returns it)."""
    if isinstance(value, _IMMUTABLE):
        return True
    return isinstance(value, tuple) and all(_immutable(v) for v in value)


def var_space_inject(self: rfm_variables.VarSpace, obj: object, cls: type) -> None:
    """ReFrame's ``VarSpace._inject`` for a class's first instance; its defaults for the others."""
    known = _injected.get(cls)
    if known is not None and known[0] is self and _inject_known(obj, known[1]):
        return
    _VAR_INJECT(self, obj, cls)
    entries = []
    for name, var in self.items():
        # undefined ones too: a default given on the class later is a change
        raw = _ALIAS if var.is_alias() else var._p_default_value
        entries.append((name, var, raw, var.is_defined() and raw is not _ALIAS
                        and _immutable(raw)))
    _injected[cls] = (self, entries)


def _copied(value: object) -> object:
    """``copy.deepcopy(value)``: a flat list, set or dict of immutable values copied directly."""
    kind = type(value)
    if kind is list or kind is set:
        if all(_immutable(v) for v in value):
            return kind(value)
    elif kind is dict:
        if all(_immutable(k) and _immutable(v) for k, v in value.items()):
            return dict(value)
    return copy.deepcopy(value)


def _inject_known(obj: object, entries: list) -> bool:
    """Each defined variable's default into ``obj``; False where one changed since recorded."""
    values = {}
    for name, var, raw, shared in entries:
        if raw is not _ALIAS and var._p_default_value is not raw:
            return False
        if shared:
            values[name] = raw
        elif var.is_defined():
            values[name] = _copied(raw) if raw is not _ALIAS and not var.is_deprecated() \
                else var.default_value
    obj.__dict__.update(values)
    return True


def _case_key(case: rfm_executors.TestCase) -> tuple[str, str, str]:
    """What ReFrame's ``TestCase`` compares: its test's unique name, partition and environment."""
    key = case.__dict__.get("_sentinel_key")
    if key is None:
        key = (case.check.unique_name, case.partition.fullname, case.environ.name)
        case.__dict__["_sentinel_key"] = key
    return key


def case_hash(self: rfm_executors.TestCase) -> int:
    """ReFrame's ``TestCase.__hash__`` (the same value), its fields read once."""
    name, partition, environ = _case_key(self)
    return hash(name) ^ hash(partition) ^ hash(environ)


def case_eq(self: rfm_executors.TestCase, other: object) -> bool:
    """ReFrame's ``TestCase.__eq__``, its fields read once."""
    if not isinstance(other, type(self)):
        return NotImplemented
    return _case_key(self) == _case_key(other)


def case_repr(self: rfm_executors.TestCase) -> str:
    """ReFrame's ``TestCase.__repr__``, read once (a case without a test: ReFrame's)."""
    if self.check is None or self.partition is None or self.environ is None:
        return _CASE_OWN["__repr__"](self)
    text = self.__dict__.get("_sentinel_repr")
    if text is None:
        text = self.__dict__["_sentinel_repr"] = "({!r}, {!r}, {!r})".format(*_case_key(self))
    return text


def case_str(self: rfm_executors.TestCase) -> str:
    """ReFrame's ``TestCase.__str__``, formatted once."""
    text = self.__dict__.get("_sentinel_str")
    if text is None:
        text = self.__dict__["_sentinel_str"] = _CASE_OWN["__str__"](self)
    return text


def valid_sysenv_comb(valid_systems: list[str], valid_prog_environs: list[str],
                      check_systems: bool = True, check_environs: bool = True) -> dict:
    """ReFrame's ``valid_sysenv_comb``, worked out once per system and arguments."""
    system = rfm_runtime.runtime().system
    if _sysenv["system"] is not system:
        _sysenv.update(system=system, known={})
    key = (tuple(valid_systems), tuple(valid_prog_environs), check_systems, check_environs)
    known = _sysenv["known"].get(key)
    if known is None:
        known = _sysenv["known"][key] = _VALID_SYSENV(valid_systems, valid_prog_environs,
                                                      check_systems, check_environs)
    return {partition: list(environs) for partition, environs in known.items()}


def _loggable_of(cls: type) -> list[tuple[str, str, object]]:
    """The class's loggable attributes (constant once it is made), with field and parameter."""
    known = _loggable.get(cls)
    if known is None:
        params = cls.raw_params
        known = [(attr, f"check_{alt or attr}", params[attr] if attr in params else None)
                 for attr, alt in cls.loggable_attrs()]
        _loggable[cls] = known
    return known


def update_check_extras(self: rfm_logging.LoggerAdapter) -> None:
    """ReFrame's ``LoggerAdapter._update_check_extras``, the test's class read once."""
    check = self.check
    if check is None:
        return
    attrs = _loggable_of(type(check))
    with rfm_warnings.suppress_deprecations():
        values = [getattr(check, attr, None) for attr, _, _ in attrs]
    extra = self.extra
    names = extra["__rfm_loggable_attrs__"]
    for (_, key, param), val in zip(attrs, values):
        names.append(key)
        extra[key] = param.format(val) if param is not None else val
    extra["check_info"] = check.info()
    extra["check_job_completion_time"] = rfm_logging._format_time_rfc3339(
        extra["check_job_completion_time_unix"], r"%FT%T%:z")


def json_dump(obj: object, fp: object, **kwargs: object) -> None:
    """ReFrame's ``jsonext.dump`` without indentation, by Python's C encoder: the same JSON."""
    kwargs.pop("indent", None)
    fp.write(rfm_jsonext.dumps(obj, **kwargs))


def meta_getattribute(cls: type, name: str) -> object:
    """``RegressionTestMeta.__getattribute__``: an injected variable's name goes to ``__getattr__``.

    ReFrame's, with its variable space's size and injected names read directly
    instead of through a method and a property.
    """
    try:
        var_space = type.__getattribute__(cls, "_rfm_var_space")
    except AttributeError:
        var_space = None
    if var_space is not None and var_space._namespace and name in var_space._injected_vars:
        raise AttributeError("delegate variable lookup to __getattr__")
    return type.__getattribute__(cls, name)


def snapshot_restore(self: rfm_environments._EnvironmentSnapshot) -> None:
    """ReFrame's ``_EnvironmentSnapshot.restore``: the same environment, only changes written."""
    saved = self._env_vars
    for name in [name for name in os.environ if name not in saved]:
        del os.environ[name]
    for name, value in saved.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


class _Buffered:
    """A printer whose ``info`` lines are kept until :meth:`flush`; the rest goes to ``printer``."""

    def __init__(self, printer: object) -> None:
        self._printer = printer
        self._lines: list[str] = []

    def info(self, line: str) -> None:
        self._lines.append(line)

    def __getattr__(self, name: str) -> object:
        return getattr(self._printer, name)

    def flush(self) -> None:
        if self._lines:
            self._printer.info("\n".join(self._lines))
            self._lines.clear()


def list_checks(testcases: list, printer: object, *args: object, **kwargs: object) -> None:
    """ReFrame's ``list_checks``, its lines handed to the printer in one record."""
    buffered = _Buffered(printer)
    try:
        _LIST_CHECKS(testcases, buffered, *args, **kwargs)
    finally:
        buffered.flush()


#: The ReFrame functions patched, by name: the digest of the source each patch
#: was written against (ReFrame 4.10.4), and what the patch relies on besides
#: (``CheckFieldFormatter.__init__`` sets the private fields format_message reads).
PATCHED: dict[str, tuple[Callable, str]] = {
    "reframe.core.warnings.user_deprecation_warning": (_REFRAME_WARNING, "6eb33cb3c9a98461"),
    "reframe.core.logging.CheckFieldFormatter.formatMessage": (_REFRAME_FORMAT,
                                                               "377bb58e507bdd94"),
    "reframe.core.logging.CheckFieldFormatter.__init__": (_FORMATTER.__init__,
                                                          "3ff46a53e262e1d1"),
    "reframe.core.launchers.mpi.SrunLauncher.__init__": (_SRUN_INIT, "886462b03a72cb4c"),
    "reframe.core.variables.VarSpace._inject": (_VAR_INJECT, "d29b5c875f0464e0"),
    "reframe.core.variables.TestVar.__set_name__": (rfm_variables.TestVar.__set_name__,
                                                    "dfa5f7c82feb460e"),
    **{f"reframe.frontend.executors.TestCase.{name}": (getattr(_CASE, name), known)
       for name, known in (("__hash__", "dcc8fa67a6665ef0"), ("__eq__", "32be90a4c66f9f04"),
                           ("__repr__", "e2b2fe7790a536ee"), ("__str__", "b4bd306b53ef4f0e"),
                           ("__init__", "74698fd4a1dfe14f"), ("prepare", "84715e427bcd525b"),
                           ("clone", "e0c89f56a0496024"))},
    "reframe.frontend.cli.list_checks": (_LIST_CHECKS, "e4d26359c473501a"),
    "reframe.core.runtime.valid_sysenv_comb": (_VALID_SYSENV, "712828892123511b"),
    "reframe.utility.jsonext.dump": (_JSON_DUMP, "1c9b1713702c0bb0"),
    "reframe.core.meta.RegressionTestMeta.__getattribute__": (_META_GETATTRIBUTE,
                                                              "5e66d8a0f19505db"),
    "reframe.core.variables.VarSpace.injected_vars": (
        rfm_variables.VarSpace.injected_vars.fget, "96f557b94cc32da7"),
    "reframe.core.namespaces.LocalNamespace.__len__": (rfm_namespaces.LocalNamespace.__len__,
                                                       "6ac6b99ea918ab5d"),
    "reframe.core.environments._EnvironmentSnapshot.restore": (_SNAPSHOT_RESTORE,
                                                               "95a17c543883b55c"),
    "reframe.core.logging.LoggerAdapter._update_check_extras": (_CHECK_EXTRAS, "82975cd94e37dc4d"),
    "reframe.core.meta.RegressionTestMeta.loggable_attrs": (
        rfm_meta.RegressionTestMeta.loggable_attrs, "9e88df914a78bfe7"),
    "reframe.core.runtime._is_valid_part": (rfm_runtime._is_valid_part, "aa11afb0e1178db0"),
    "reframe.core.runtime._is_valid_env": (rfm_runtime._is_valid_env, "0d9b1b70092bb09e"),
}


def digest(function: Callable) -> str:
    """The first 16 hex digits of the SHA-256 of ``function``'s source."""
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


def changed() -> list[str]:
    """The patched ReFrame functions whose source is not the one the patches were written for."""
    return [name for name, (function, known) in PATCHED.items() if digest(function) != known]


def _patches() -> list[tuple[str, set[str], list[tuple[object, str, object, object]]]]:
    """Each patch: its name, the :data:`PATCHED` functions it was written against, its swaps.

    A swap is where, which attribute, ReFrame's function and this module's.
    """
    executors = "reframe.frontend.executors.TestCase."
    case = [(_CASE, name, _CASE_OWN[name], ours) for name, ours in (
        ("__hash__", case_hash), ("__eq__", case_eq), ("__repr__", case_repr),
        ("__str__", case_str))]
    return [
        ("user_deprecation_warning", {"reframe.core.warnings.user_deprecation_warning"},
         [(module, "user_deprecation_warning", _REFRAME_WARNING, user_deprecation_warning)
          for module in (rfm_fields, rfm_variables)]),
        ("formatMessage", {"reframe.core.logging.CheckFieldFormatter.formatMessage",
                           "reframe.core.logging.CheckFieldFormatter.__init__"},
         [(_FORMATTER, "formatMessage", _REFRAME_FORMAT, format_message)]),
        ("SrunLauncher.__init__", {"reframe.core.launchers.mpi.SrunLauncher.__init__"},
         [(rfm_launchers.SrunLauncher, "__init__", _SRUN_INIT, srun_launcher_init)]),
        ("VarSpace._inject", {"reframe.core.variables.VarSpace._inject",
                              "reframe.core.variables.TestVar.__set_name__"},
         [(rfm_variables.VarSpace, "_inject", _VAR_INJECT, var_space_inject)]),
        ("TestCase", {executors + name for name in ("__hash__", "__eq__", "__repr__", "__str__",
                                                    "__init__", "prepare", "clone")}, case),
        ("list_checks", {"reframe.frontend.cli.list_checks"},
         [(rfm_cli, "list_checks", _LIST_CHECKS, list_checks)]),
        ("valid_sysenv_comb", {f"reframe.core.runtime.{name}" for name in (
            "valid_sysenv_comb", "_is_valid_part", "_is_valid_env")},
         [(rfm_runtime, "valid_sysenv_comb", _VALID_SYSENV, valid_sysenv_comb)]),
        ("_update_check_extras", {"reframe.core.logging.LoggerAdapter._update_check_extras",
                                  "reframe.core.meta.RegressionTestMeta.loggable_attrs"},
         [(rfm_logging.LoggerAdapter, "_update_check_extras", _CHECK_EXTRAS,
           update_check_extras)]),
        ("jsonext.dump", {"reframe.utility.jsonext.dump"},
         [(rfm_jsonext, "dump", _JSON_DUMP, json_dump)]),
        ("RegressionTestMeta.__getattribute__", {
            "reframe.core.meta.RegressionTestMeta.__getattribute__",
            "reframe.core.variables.VarSpace.injected_vars",
            "reframe.core.namespaces.LocalNamespace.__len__"},
         [(rfm_meta.RegressionTestMeta, "__getattribute__", _META_GETATTRIBUTE,
           meta_getattribute)]),
        ("_EnvironmentSnapshot.restore", {"reframe.core.environments._EnvironmentSnapshot.restore"},
         [(rfm_environments._EnvironmentSnapshot, "restore", _SNAPSHOT_RESTORE,
           snapshot_restore)]),
    ]


def install() -> list[str]:
    """Use this module's functions where ReFrame calls its own; the patches installed.

    A patch whose ReFrame function (or what it relies on) changed is left out.
    """
    differ = set(changed())
    installed = []
    for name, written_for, swaps in _patches():
        if written_for & differ:
            continue
        for owner, attribute, reframes, ours in swaps:
            if getattr(owner, attribute, None) is reframes:
                setattr(owner, attribute, ours)
        installed.append(name)
    return installed
