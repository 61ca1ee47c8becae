"""Fail loudly and precisely: what a real ReFrame session says about bad input."""

from __future__ import annotations

import re

from tests.integration.conftest import QUICK, need_stack, reframe


def _listed_environs(output: str) -> set[str]:
    return set(re.findall(r"~local:\w+\+(\w+)", output))


def test_prgenv_selects_with_a_mode(tmp_path):
    need_stack("openmpi")
    need_stack("mpich")
    run = reframe([*QUICK, "-p", "openmpi", "-l"], tmp_path, checks=("pt2pt.py",))
    assert run.returncode == 0, run.output
    assert _listed_environs(run.output) == {"openmpi"}


def test_a_bad_setvar_value_is_one_clear_error(tmp_path):
    run = reframe(["-S", "Pt2ptCheck.max_size=abc", "-S", "MatchingCheck.lengths=10,x", "-l"],
                  tmp_path, checks=("pt2pt.py",))
    assert run.returncode == 1
    assert "Traceback" not in run.output
    assert ("-S Pt2ptCheck.max_size=abc: 'abc' is not a valid value of Pt2ptCheck.max_size "
            "(int; the test is in pt2pt.py)") in run.output
    assert "-S MatchingCheck.lengths=10,x: '10,x' is not a valid value" in run.output
