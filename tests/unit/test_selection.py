"""Which checks a session registers: judged on ReFrame's display names and the classes' tags."""

from __future__ import annotations

import sys

import pytest
from reframe.core import decorators

from sentinel.rfm.compat import selection
from tests.offline import check_classes, offline_runtime


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    with offline_runtime(tmp_path_factory.mktemp("selection")):
        yield check_classes()


def _instances(cls: type, num: int) -> list:
    registry = decorators.TestRegistry()
    registry.add(cls, variant_num=num)
    return [t for t in registry.instantiate_all() if type(t) is cls]


def test_display_names_and_tags_known_without_an_instance_are_the_instances(classes):
    # A ReFrame whose display name or tags come from elsewhere than the class
    # and variant number would make the selection judge wrongly: this fails.
    compared = 0
    for cls in classes.values():
        for num in range(0, cls.num_variants, max(1, cls.num_variants // 6)):
            for test in _instances(cls, num):
                assert selection.variant_display_name(cls, num) == test.display_name
                assert set(test.tags) == set(cls.tags), cls.__name__
                compared += 1
    assert compared > len(classes)


def _selectable(monkeypatch, classes, *argv: str) -> set[str]:
    monkeypatch.setattr(sys, "argv", ["/venv/bin/reframe", "-c", "checks", *argv])
    monkeypatch.delenv("SENTINEL_REGISTER_ALL", raising=False)
    return {name for name, cls in classes.items() if selection.selectable(cls)}


def test_names_and_tags_leave_out_the_classes_no_variant_of_which_they_keep(monkeypatch,
                                                                            classes):
    assert _selectable(monkeypatch, classes, "-n", "RingCheck") == {"RingCheck", "Pt2ptCheck"}
    assert "RingCheck" not in _selectable(monkeypatch, classes, "-x", "RingCheck")
    # ImbCheck and its source variant are tagged imb; only the variant source
    assert {"ImbSourceCheck"} == {n for n in _selectable(monkeypatch, classes, "-t", "source")
                                  if n.startswith("Imb")}
    quick = _selectable(monkeypatch, classes, "--tag", "nightly", "--exclude-tag=osu",
                        "--exclude-tag", "source")
    assert not {n for n in quick if n.startswith("Osu") or n.endswith("SourceCheck")}
    assert {"MatchingCheck", "HybridCheck", "ImbCheck"} <= quick


def test_a_filter_that_keeps_a_variant_keeps_its_class(monkeypatch, classes):
    everything = set(classes) - {n for n in classes if n.endswith("SpackCheck")}
    # one mapping excluded: the other variants remain
    assert "RingCheck" in _selectable(monkeypatch, classes, "-x", "RingCheck.*%mapping=core")
    # a parameter value inside the name
    assert "HybridCheck" in _selectable(monkeypatch, classes, "-n", "%mode=funnelled")
    # filters only an instance answers, re-parameterised checks, no filter at all
    assert _selectable(monkeypatch, classes, "-n", "/1a2b3c4d") >= everything
    assert _selectable(monkeypatch, classes, "-n", "RingCheck@2") >= everything
    assert _selectable(monkeypatch, classes, "-n", "RingCheck", "-P", "laps:1,2") >= everything
    assert _selectable(monkeypatch, classes) >= everything


def test_outside_reframes_command_line_or_when_asked_every_class_registers(monkeypatch, classes):
    monkeypatch.setattr(sys, "argv", ["pytest", "-n", "RingCheck"])
    assert all(selection.selectable(cls) for cls in classes.values())
    monkeypatch.setattr(sys, "argv", ["reframe", "-n", "RingCheck"])
    monkeypatch.setenv("SENTINEL_REGISTER_ALL", "1")
    assert all(selection.selectable(cls) for cls in classes.values())


def test_before_reframes_runtime_every_class_registers(monkeypatch, classes):
    # the configuration checks -S values against every class before the runtime exists
    monkeypatch.setattr(sys, "argv", ["reframe", "-n", "RingCheck", "-S", "laps=2"])
    monkeypatch.setattr(selection, "mode_options", lambda: None)
    assert all(selection.selectable(cls) for cls in classes.values())
