"""Check files describe what they measure; their variable lists come from the declarations."""

from __future__ import annotations

import ast
import re

import pytest

from sentinel.analysis.variables import all_specs
from tests.conftest import ROOT


def _declared_patterns(spec) -> list[re.Pattern]:
    """Each variable template of ``spec`` as a pattern a docstring would write it in."""
    out = []
    for var in spec.variables:
        parts = re.split(r"\{\w+\}", var.template)
        if len("".join(parts).replace("_", "")) < 2:
            continue  # all placeholders ({point}_{alg}): any two words would match
        # a placeholder as written (<size>, {size}) or a value of it (8)
        out.append(re.compile(r"(?:<\w+>|\{\w+\}|[A-Za-z0-9]+)".join(map(re.escape, parts))))
    return out


@pytest.mark.parametrize("path", sorted((ROOT / "checks").glob("*.py")), ids=lambda p: p.name)
def test_check_docstrings_leave_the_variable_lists_to_the_declarations(path):
    # The check pages list each check's variables from its declaration
    # (docs/_ext/sentinel_pages.py); a list typed in a docstring drifts.
    tree = ast.parse(path.read_text())
    docs = [ast.get_docstring(tree) or ""]
    names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    docs += [ast.get_docstring(n) or "" for n in tree.body if isinstance(n, ast.ClassDef)]
    specs = all_specs()
    patterns = [p for name in names if name in specs for p in _declared_patterns(specs[name])]
    typed = sorted({token for doc in docs for token in re.findall(r"``([^`]+)``", doc)
                    if any(p.fullmatch(token) for p in patterns)})
    assert not typed, f"{path.name} types variable names: {typed}"
