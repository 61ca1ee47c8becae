"""The library's pipeline hooks run in the order ``sentinel.rfm.base.HOOK_ORDER`` declares.

ReFrame runs a stage's hooks in the order of the classes that define them,
so the order is a consequence of each check's bases; this holds it to the
declared one. A check's own hooks (defined in ``checks/``) may come between.
"""

from __future__ import annotations

import pytest

from sentinel.rfm.base import HOOK_ORDER
from tests.offline import check_classes

CLASSES = check_classes()


def _library_hooks(cls: type) -> dict[str, list[str]]:
    """Each stage's hooks defined by the suite's library (not by a check file), in run order."""
    return {stage: [h.__name__ for h in hooks
                    if getattr(h, "__module__", "").startswith("sentinel.")]
            for stage, hooks in cls.pipeline_hooks().items()}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_librarys_hooks_run_in_the_declared_order(name):
    for stage, hooks in _library_hooks(CLASSES[name]).items():
        declared = HOOK_ORDER.get(stage, ())
        unknown = [h for h in hooks if h not in declared]
        assert not unknown, f"{name}: {stage} hooks {unknown} are not in HOOK_ORDER"
        assert hooks == sorted(hooks, key=declared.index), \
            f"{name}: {stage} runs {hooks}; HOOK_ORDER says {declared}"


def test_every_declared_hook_runs_somewhere():
    ran = {h for cls in CLASSES.values() for hooks in _library_hooks(cls).values()
           for h in hooks}
    declared = {h for hooks in HOOK_ORDER.values() for h in hooks}
    assert declared <= ran, f"declared but run by no check: {sorted(declared - ran)}"
