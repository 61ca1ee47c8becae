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
import warnings
import weakref
from collections.abc import Callable

import reframe.core.fields as rfm_fields
import reframe.core.launchers.mpi as rfm_launchers
import reframe.core.logging as rfm_logging
import reframe.core.variables as rfm_variables
import reframe.core.warnings as rfm_warnings
from reframe.core.warnings import ReframeDeprecationWarning

_REFRAME_WARNING = rfm_warnings.user_deprecation_warning
_FORMATTER = rfm_logging.CheckFieldFormatter
_REFRAME_FORMAT = _FORMATTER.formatMessage
_SRUN_INIT = rfm_launchers.SrunLauncher.__init__
_VAR_INJECT = rfm_variables.VarSpace._inject
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


def _inject_known(obj: object, entries: list) -> bool:
    """Each defined variable's default into ``obj``; False where one changed since recorded."""
    values = {}
    for name, var, raw, shared in entries:
        if raw is not _ALIAS and var._p_default_value is not raw:
            return False
        if shared:
            values[name] = raw
        elif var.is_defined():
            values[name] = var.default_value
    obj.__dict__.update(values)
    return True


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
}


def digest(function: Callable) -> str:
    """The first 16 hex digits of the SHA-256 of ``function``'s source."""
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


def changed() -> list[str]:
    """The patched ReFrame functions whose source is not the one the patches were written for."""
    return [name for name, (function, known) in PATCHED.items() if digest(function) != known]


def install() -> list[str]:
    """Use this module's functions where ReFrame calls its own; the patches installed.

    A patch whose ReFrame function (or what it relies on) changed is left out.
    """
    differ = changed()
    ok = {name for name in PATCHED if name not in differ}
    installed = []
    if "reframe.core.warnings.user_deprecation_warning" in ok:
        for module in (rfm_fields, rfm_variables):
            if getattr(module, "user_deprecation_warning", None) is _REFRAME_WARNING:
                module.user_deprecation_warning = user_deprecation_warning
        installed.append("user_deprecation_warning")
    if {"reframe.core.logging.CheckFieldFormatter.formatMessage",
            "reframe.core.logging.CheckFieldFormatter.__init__"} <= ok:
        if _FORMATTER.formatMessage is _REFRAME_FORMAT:
            _FORMATTER.formatMessage = format_message
        installed.append("formatMessage")
    if "reframe.core.launchers.mpi.SrunLauncher.__init__" in ok:
        if rfm_launchers.SrunLauncher.__init__ is _SRUN_INIT:
            rfm_launchers.SrunLauncher.__init__ = srun_launcher_init
        installed.append("SrunLauncher.__init__")
    if {"reframe.core.variables.VarSpace._inject",
            "reframe.core.variables.TestVar.__set_name__"} <= ok:
        if rfm_variables.VarSpace._inject is _VAR_INJECT:
            rfm_variables.VarSpace._inject = var_space_inject
        installed.append("VarSpace._inject")
    return installed
