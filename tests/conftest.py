"""Shared fixtures: paths and the loaded ReFrame configuration."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
#: OSU and IMB outputs captured by this project's own runs (README.md there).
FIXTURES = DATA / "standard"

#: One detection cache for every ReFrame the tests start (each test writes its
#: output elsewhere, and the default cache lies under the output): a start
#: under an environment already seen reuses its detection (sentinel.site.detect_cache).
_DETECT_CACHE = None
if "SENTINEL_DETECT_CACHE" not in os.environ:
    _DETECT_CACHE = tempfile.mkdtemp(prefix="sentinel-detect-")
    os.environ["SENTINEL_DETECT_CACHE"] = _DETECT_CACHE


def pytest_sessionfinish(session, exitstatus) -> None:
    """Remove the session's detection cache."""
    if _DETECT_CACHE:
        shutil.rmtree(_DETECT_CACHE, ignore_errors=True)


def load_settings(path: Path = ROOT / "config" / "settings.py") -> dict:
    spec = importlib.util.spec_from_file_location("sentinel_settings_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.site_configuration


@pytest.fixture(scope="session")
def site_configuration() -> dict:
    return load_settings()
