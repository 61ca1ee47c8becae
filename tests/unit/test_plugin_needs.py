"""Each plugin of the test library declares what it reads of the test it is part of.

A plugin (a ReFrame ``RegressionTestPlugin`` of ``sentinel.rfm``) reads
ReFrame's attributes, its own, and what it names in ``plugin_needs``: the
attributes another part of the test provides. The declaration is held to
the code both ways (what a plugin reads is declared; what it declares, it
reads), and every check that has the plugin provides what it needs.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest
import reframe as rfm

from tests.conftest import ROOT
from tests.offline import check_classes

CLASSES = check_classes()
REFRAME = set(dir(rfm.RunOnlyRegressionTest)) | set(rfm.RunOnlyRegressionTest._rfm_var_space.keys())
RFM = ROOT / "src" / "sentinel" / "rfm"


def _plugins() -> list[tuple[type, ast.ClassDef]]:
    out = []
    for path in sorted([*RFM.glob("*.py"), *(RFM / "compat").glob("*.py")]):
        module = importlib.import_module(".".join(
            ("sentinel", *path.relative_to(ROOT / "src" / "sentinel").with_suffix("").parts)))
        for node in ast.parse(path.read_text()).body:
            cls = getattr(module, node.name, None) if isinstance(node, ast.ClassDef) else None
            if inspect.isclass(cls) and issubclass(cls, rfm.RegressionTestPlugin) \
                    and not issubclass(cls, rfm.RegressionTest):
                out.append((cls, node))
    return out


PLUGINS = _plugins()


def _own(cls: type) -> set[str]:
    """What the plugin and the suite's plugins it derives from define."""
    names = set(cls._rfm_var_space.keys()) | set(cls.param_space.params)
    for base in cls.__mro__:
        if base.__module__.startswith("sentinel."):
            names |= set(vars(base))
    return names


def _self_attributes(node: ast.ClassDef, context: type) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "self"
            and isinstance(n.ctx, context)}


def _read(node: ast.ClassDef) -> set[str]:
    """The attributes of ``self`` the class's code reads and does not set itself."""
    return _self_attributes(node, ast.Load) - _self_attributes(node, ast.Store)


@pytest.mark.parametrize("cls,node", PLUGINS, ids=[c.__name__ for c, _ in PLUGINS])
def test_a_plugin_declares_what_it_reads_of_the_test(cls, node):
    declared = set(vars(cls).get("plugin_needs", ()))
    needed = _read(node) - (_own(cls) - declared) - REFRAME
    undeclared, unread = sorted(needed - declared), sorted(declared - needed)
    assert undeclared == [], f"{cls.__name__} reads undeclared {undeclared}"
    assert unread == [], f"{cls.__name__} declares unread {unread}"


@functools.cache
def _sets(cls: type) -> frozenset[str]:
    """The attributes of ``self`` that the code of class ``cls`` itself sets."""
    try:
        source = inspect.getsource(cls)
    except OSError:
        return frozenset()  # made by make_test (a build variant): its code is its bases'
    return frozenset(_self_attributes(ast.parse(textwrap.dedent(source)).body[0], ast.Store))


def _assigned(cls: type) -> set[str]:
    """The attributes of ``self`` that the suite's classes of ``cls`` set in their code."""
    return {name for base in cls.__mro__
            if base.__module__.startswith("sentinel.") or "@" in base.__module__
            for name in _sets(base)}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_check_provides_what_its_plugins_need(name):
    cls = CLASSES[name]
    provided = (set(dir(cls)) | set(cls._rfm_var_space.keys()) | set(cls.param_space.params)
                | set(cls._rfm_fixture_space.keys()) | _assigned(cls))
    for base in cls.__mro__:
        missing = sorted(set(vars(base).get("plugin_needs", ())) - provided)
        assert not missing, f"{name} lacks {missing}, which {base.__name__} needs"


def test_plugins_are_found():
    assert {c.__name__ for c, _ in PLUGINS} >= {"PlannedLaunches", "PlacementChecks",
                                               "NightlyRotation", "Provenance"}
    assert Path(RFM / "base.py").exists()
