"""Each check's figures come from the family its declaration names.

Data: the real run report of tests/unit/test_report.py (Pt2ptCheck and
MatchingCheck on the two-node Slurm partition).
"""

from __future__ import annotations

import json

import pytest

from sentinel.analysis import variables
from sentinel.analysis.variables import CheckSpec, PerfVar, all_specs
from sentinel.errors import SentinelError
from sentinel.results.report.figures import FAMILIES, by_check, sections
from sentinel.results.report.load import cases_of
from tests.conftest import DATA


def test_every_declared_family_is_drawn():
    for check, spec in all_specs().items():
        if spec.figures:
            assert sections.family(check) is FAMILIES[spec.figures], check


def test_curves_and_series_are_declared_with_the_family_that_draws_them():
    for check, spec in all_specs().items():
        if any(v.curve for v in spec.variables):
            assert spec.figures == "curves", check
        if any(v.scaling for v in spec.variables):
            assert spec.figures == "scaling", check


def test_an_unknown_family_is_an_error_naming_it(monkeypatch):
    monkeypatch.setattr(variables, "_REGISTRY", dict(variables._REGISTRY))
    CheckSpec(checks=("SketchCheck",), variables=(PerfVar("t", "us", variables.LOWER, "a time"),),
              figures="sketches")
    with pytest.raises(SentinelError, match="SketchCheck declares the figure family 'sketches', "
                                            "which the report does not draw"):
        sections.family("SketchCheck")


def test_a_check_without_a_declaration_has_no_figures():
    assert sections.family("BenchBuild") is None


def test_each_section_is_drawn_by_its_own_family():
    cases = cases_of(json.loads((DATA / "run-report-slurm-two.json").read_text()), "r.json")
    words = {"Pt2ptCheck": {"latency against message size", "bandwidth against message size"},
             "MatchingCheck": {"matching time per queue element"}}
    drawn = by_check(cases, [], [], workers=1)
    for (where, check), figures in drawn.items():
        part, env = where.split("+")
        assert {t for t, _ in figures} <= {f"{check} {w}, {env} on {part}" for w in words[check]}
    assert {check for (_, check), figures in drawn.items() if figures} == set(words)
