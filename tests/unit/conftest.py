"""Every unit test reads no learnt baseline but the ones it writes itself."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_learnt_baseline(tmp_path_factory, monkeypatch):
    """``SENTINEL_BASELINES`` at an empty folder: the checkout's var/ is never read."""
    monkeypatch.setenv("SENTINEL_BASELINES", str(tmp_path_factory.mktemp("baselines")))
