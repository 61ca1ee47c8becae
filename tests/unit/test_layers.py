"""No module of the library imports from a layer above its own (docs/layout.md)."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "src" / "sentinel"

#: Each layer and the layers it may import (besides itself and the foundation).
ALLOWED = {
    "parsers": set(),
    "mpi": set(),
    "analysis": {"parsers", "mpi"},
    "site": {"mpi"},
    "rfm": {"analysis", "mpi", "parsers", "site"},
    "results": {"analysis", "mpi", "parsers", "site"},
}
FOUNDATION = {"errors", "paths", "__init__"}


def _layer(module: str) -> str:
    """``sentinel.rfm.base`` -> ``rfm``; the foundation's modules are ``foundation``."""
    part = module.split(".")[1] if module.count(".") else "__init__"
    return "foundation" if part in FOUNDATION else part


def _imports(path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {m for m in out if m == "sentinel" or m.startswith("sentinel.")}


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_from_a_layer_above(path):
    own = _layer("sentinel." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
    for imported in _imports(path):
        layer = _layer(imported)
        if own == "foundation":
            assert layer == "foundation", f"{path}: imports {imported}"
        elif layer not in ("foundation", own):
            assert layer in ALLOWED[own], f"{path} ({own}) imports {imported} ({layer})"


def test_every_package_is_a_known_layer():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert packages == set(ALLOWED)
