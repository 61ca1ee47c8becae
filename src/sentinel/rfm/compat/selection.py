"""Which check classes a session registers: those its name and tag filters can select.

ReFrame instantiates every variant of every registered check (about 1 ms
each, 4,120 for this suite's checks on a 3-MPI host) and filters the
instances by name and tag afterwards. :func:`simple_test` registers a
class only where the session's filters (``-n``, ``-x``, ``-t``, ``-T``, the
selected mode's and the command line's) keep at least one of its variants,
judged by ReFrame's own filters on ReFrame's own display name of each
variant, computed without instantiating it. The selection is the same;
what it would have dropped is never built.

A class is registered whatever the filters say:

* outside ReFrame's command line (a library, a unit test), before its
  runtime (the configuration checking ``-S`` values), and with
  ``SENTINEL_REGISTER_ALL=1``;
* when a filter names a test by hash (``/1a2b``) or variant (``Name@3``),
  which only an instance has, or the session re-parameterises checks (``-P``)
  or restores a session;
* when another check depends on it by name (``dependency_of``): ReFrame
  resolves dependencies over every generated case, the filtered-out ones
  included.

Tags are judged on the class's ``tags``: the checks declare every tag in the
class (the build variants' ``source`` and ``spack`` included), never in a hook.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import reframe as rfm
from reframe.core.pipeline import RegressionTest
from reframe.frontend import filters

from sentinel.rfm.compat.cmdline import given, has_option, option_values, run_by_reframe
from sentinel.rfm.compat.generation import mode_options

#: Options after which the class-level judgement is not ReFrame's: every class registers.
_UNJUDGED = ("-P", "--parameterize", "--failed", "--restore-session")


def simple_test(cls: type) -> type:
    """ReFrame's ``simple_test`` for ``cls`` where the session can select one of its variants.

    (A check file decorated so still reads as a test file to ReFrame's loader.)
    """
    return rfm.simple_test(cls) if selectable(cls) else cls


def selectable(cls: type) -> bool:
    """Whether the session's name and tag filters keep at least one variant of ``cls``."""
    found = _session_filters()
    if found is None or getattr(cls, "dependency_of", ()):
        return True
    names, excluded, tags, untags = found
    if any(_by_instance(p) for p in names):
        return True
    if not _tags_keep(set(cls.tags), tags, untags):
        return False
    keep = filters.have_any_name(names) if names else None
    drop = [filters.have_not_name(p) for p in excluded if not _by_instance(p)]
    for num in range(cls.num_variants):
        case = SimpleNamespace(check=SimpleNamespace(display_name=variant_display_name(cls, num)))
        if (keep is None or keep(case)) and all(f(case) for f in drop):
            return True
    return False


def variant_display_name(cls: type, num: int) -> str:
    """ReFrame's ``display_name`` of variant ``num`` of ``cls``, without instantiating it.

    ReFrame's property reads only the class, the variant number and whether
    the test is a fixture (it is not: fixtures are not registered).
    """
    bare = object.__new__(cls)
    object.__setattr__(bare, "_rfm_variant_num", num)
    return RegressionTest.display_name.fget(bare)


def _session_filters() -> tuple[list[str], ...] | None:
    """The session's ``-n``, ``-x``, ``-t`` and ``-T`` values; None where they are not judged here.

    ReFrame appends the command line's values of these options to the mode's.

    Not judged: outside ReFrame's command line, with ``SENTINEL_REGISTER_ALL=1``,
    after an option of :data:`_UNJUDGED`, and before the runtime (the
    configuration checking ``-S`` values wants every class).
    """
    if not run_by_reframe() or os.environ.get("SENTINEL_REGISTER_ALL") == "1":
        return None
    if has_option(*_UNJUDGED):
        return None
    mode = mode_options()
    if mode is None:
        return None
    return tuple([*option_values(mode, short, long), *given(short, long)]
                 for short, long in (("-n", "--name"), ("-x", "--exclude"), ("-t", "--tag"),
                                     ("-T", "--exclude-tag")))


def _by_instance(pattern: str) -> bool:
    """A name filter only an instance can answer: a hash or a variant number."""
    return pattern.startswith("/") or "@" in pattern


def _tags_keep(tags: set[str], wanted: list[str], unwanted: list[str]) -> bool:
    """ReFrame's tag filters over a class's tags: every ``-t`` matches one, no ``-T`` any."""
    case = SimpleNamespace(check=SimpleNamespace(tags=tags))
    return (all(filters.have_tag(p)(case) for p in wanted)
            and all(filters.have_not_tag(p)(case) for p in unwanted))
