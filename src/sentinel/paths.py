"""Where the suite's files are, resolved from the installed package."""

from __future__ import annotations

import functools
import os
import shutil
import sys
from pathlib import Path

from sentinel.errors import SentinelError


@functools.cache
def repo_root() -> Path:
    """The checkout the package was installed from (editable install).

    The benchmark sources and the configuration live beside the package, so a
    non-editable install cannot find them: say so instead of guessing. Found
    once per process (a failure is not kept): every test reads it.
    """
    root = Path(__file__).resolve().parents[2]
    if not (root / "src" / "bench").is_dir():
        raise SentinelError(
            f"cannot find src/bench next to the sentinel package ({root}); "
            "install the suite from its checkout with 'pip install -e .'"
        )
    return root


def bench_dir() -> Path:
    """The C benchmark sources (``src/bench``)."""
    return repo_root() / "src" / "bench"


def references_dir() -> Path:
    """The per-system reference files: ``$SENTINEL_REFERENCES`` or ``config/references``."""
    override = os.environ.get("SENTINEL_REFERENCES")
    return Path(override) if override else repo_root() / "config" / "references"


def launchers_dir() -> Path:
    """Wrapper scripts that give each MPI family an ``mpirun`` on PATH."""
    return repo_root() / "config" / "launchers"


def output_dir() -> Path:
    """Where runs write reports/ and var/: ``$SENTINEL_OUTPUT`` or the checkout."""
    override = os.environ.get("SENTINEL_OUTPUT")
    return Path(override) if override else repo_root()


def results_db() -> Path:
    """ReFrame's results database: ``$SENTINEL_RESULTS_DB`` or ``<output>/var/results.db``."""
    override = os.environ.get("SENTINEL_RESULTS_DB")
    return Path(override) if override else output_dir() / "var" / "results.db"


def baselines_dir(db: Path | None = None) -> Path:
    """The learnt baselines (``sentinel baseline``): ``$SENTINEL_BASELINES`` or beside ``db``.

    Beside the results database (``<its folder>/baselines``, by default
    :func:`results_db`'s): a shared database has its baselines with it.
    """
    override = os.environ.get("SENTINEL_BASELINES")
    return Path(override) if override else (db or results_db()).parent / "baselines"


def reframe_command() -> str:
    """The ``reframe`` installed beside this Python (the venv's), else the one on PATH."""
    exe = Path(sys.executable).parent / "reframe"
    found = str(exe) if exe.exists() else shutil.which("reframe")
    if not found:
        raise SentinelError("the reframe command is not installed (pip install -e .)")
    return found
