"""A capability CI requires fails the tests that need it; elsewhere they skip, saying why."""

from __future__ import annotations

import pytest

from tests.integration import conftest


def test_a_capability_present_lets_the_test_run():
    assert conftest.need_capability("netns", None) is None


def test_a_capability_missing_skips_where_not_required(monkeypatch):
    monkeypatch.setattr(conftest, "REQUIRED", {"openmpi"})
    with pytest.raises(pytest.skip.Exception, match="^no veth here$"):
        conftest.need_capability("netns", "no veth here")


@pytest.mark.parametrize("name", ["netns", "tc"])
def test_a_capability_missing_fails_where_ci_requires_it(monkeypatch, name):
    monkeypatch.setattr(conftest, "REQUIRED", {"openmpi", name})
    with pytest.raises(pytest.fail.Exception,
                       match=f"^SENTINEL_REQUIRE_STACKS includes {name}, but no veth here$"):
        conftest.need_capability(name, "no veth here")
