"""Shared fixtures: paths and the loaded ReFrame configuration."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from sentinel.site.detect import PYPI_PREFIXES

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


#: The MPIs installed into prefixes of their own (PyPI's Open MPI 5 and MPICH 5,
#: ``sentinel.site.detect.mpi_prefixes``). A session the tests start sees them
#: only where the test names them (``env={"SENTINEL_MPI_PREFIXES": MPI_PREFIXES}``):
#: the others measure the distribution's MPIs and Intel MPI, as before they came.
MPI_PREFIXES = os.environ.get("SENTINEL_MPI_PREFIXES") or ":".join(
    str(ROOT / p) for p in PYPI_PREFIXES)
os.environ["SENTINEL_MPI_PREFIXES"] = ""


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
