"""Shared fixtures: paths and the loaded ReFrame configuration."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
#: OSU and IMB outputs captured by this project's own runs (README.md there).
FIXTURES = DATA / "standard"


def load_settings(path: Path = ROOT / "config" / "settings.py") -> dict:
    spec = importlib.util.spec_from_file_location("sentinel_settings_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.site_configuration


@pytest.fixture(scope="session")
def site_configuration() -> dict:
    return load_settings()
