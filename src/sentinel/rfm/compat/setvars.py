"""``-S`` values checked before ReFrame loads a test.

ReFrame 4.10 converts ``-S [TEST.]VAR=VALUE`` to the variable's type while it
loads the test file, and catches only a ``TypeError`` there: a value that
does not convert (``-S Pt2ptCheck.max_size=abc``) raises ``ValueError`` and
stops the whole session with a traceback and no run report. The
configuration calls :func:`set_option_problems` first, with the same
conversion ReFrame will apply, so that such a value is one clear error
naming the option, the variable and its type.

The check files are imported here before ReFrame has a runtime, so the
library modules they import generate every variant of the catalogue (a
check's parameters are computed when its base class is imported,
:mod:`sentinel.rfm.compat.generation`). Those modules are forgotten afterwards, so
that ReFrame's own load imports them again and generates only what the
selected system offers.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

from reframe.core.fields import make_convertible

from sentinel.rfm.compat.cmdline import option_values

#: Prefix of the module names the check files are imported under here, apart
#: from the modules ReFrame's loader creates for them later.
_PROBE = "_sentinel_setvar_probe_"


def set_options(argv: list[str]) -> list[tuple[str, str]]:
    """The ``-S``/``--setvar`` arguments of a command line: (as an option, ``NAME=VALUE``)."""
    return [(f"-S {value}", value) for value in option_values(argv, "-S", "--setvar")]


def check_files(argv: list[str], default: list[Path]) -> list[Path]:
    """The suite's check files (``default``) and those of absolute ``-c`` paths.

    ReFrame reads its configuration from inside the configuration's directory,
    so a relative ``-c`` cannot be resolved from here; the suite's own checks
    are always validated.
    """
    given = option_values(argv, "-c", "--checkpath")
    files: dict[Path, None] = {}
    for path in [*default, *(Path(g) for g in given if Path(g).is_absolute())]:
        for f in (sorted(path.glob("*.py")) if path.is_dir() else [path]):
            if f.is_file():
                files[f.resolve()] = None
    return list(files)


def _tests(path: Path) -> Iterator[type]:
    """The test classes a check file registers, from a private import of it."""
    spec = importlib.util.spec_from_file_location(_PROBE + path.stem, path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # ReFrame finds a test's file through it
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - ReFrame's loader reports a broken file itself
        return
    finally:
        del sys.modules[spec.name]
    for obj in vars(module).values():
        if inspect.isclass(obj) and obj.__module__ == module.__name__ \
                and hasattr(obj, "_rfm_var_space"):
            yield obj


def _type_names(var: object) -> str:
    types = getattr(getattr(var, "_p_field", None), "_types", ())
    return " or ".join(getattr(t, "__name__", str(t)) for t in types) or "its type"


def _problem(option: str, test: type, name: str, value: str, path: Path) -> str | None:
    var = test._rfm_var_space[name]
    try:
        copy.deepcopy(var).define(make_convertible(value))
    except (TypeError, ValueError) as err:
        return (f"{option}: {value!r} is not a valid value of {test.__name__}.{name} "
                f"({_type_names(var)}; the test is in {path.name}): {err}")
    return None


#: Library modules a probe may import and keep: the patches of ReFrame, installed once.
_KEPT = ("sentinel.rfm.compat.reframe_fixes",)


def set_option_problems(argv: list[str], default: list[Path]) -> list[str]:
    """Every ``-S`` value of ``argv`` that a test it names could not take."""
    options = set_options(argv)
    if not options:
        return []
    before = set(sys.modules)
    try:
        return _problems(options, argv, default)
    finally:
        for name in set(sys.modules) - before:
            if name.startswith("sentinel.") and name not in _KEPT:
                del sys.modules[name]


def _problems(options: list[tuple[str, str]], argv: list[str], default: list[Path]) -> list[str]:
    tests = [(test, path) for path in check_files(argv, default) for test in _tests(path)]
    found = []
    for option, assignment in options:
        target, _, value = assignment.partition("=")
        test_name, _, name = target.rpartition(".")
        if "." in test_name or value == "@none":
            continue  # a fixture's variable, or ReFrame's "unset": ReFrame checks those
        for test, path in tests:
            if test_name in ("", test.__name__) and name in test._rfm_var_space:
                problem = _problem(option, test, name, value, path)
                if problem:
                    found.append(problem)
                    break
    return found
