"""Finding third-party benchmark binaries (OSU, IMB) for an environment.

In order: an explicit directory (a check variable, ``-S``), the
environment's ``extras['benchmark_dirs'][<suite>]``, then the directories the
environment puts on ``PATH`` followed by the caller's ``PATH``. The result
says where it looked, so a skip can name every place.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Found:
    """Where a program is, or every place it was looked for."""

    path: str | None
    searched: list[str] = field(default_factory=list)

    def reason(self, program: str, environ: str) -> str:
        """Why the program is unavailable, for a skip message."""
        where = ", ".join(self.searched) or "nowhere"
        return f"{program} not found for environment {environ} (looked in: {where})"


def _env_path_dirs(env_vars: dict[str, str]) -> list[str]:
    value = env_vars.get("PATH", "")
    return [d for d in value.split(":") if d and not d.startswith("$")]


def find_program(program: str, suite: str, environ, explicit_dir: str = "") -> Found:
    """Locate ``program`` of benchmark ``suite`` (``osu``, ``imb``) for ``environ``."""
    dirs: list[str] = []
    if explicit_dir:
        dirs.append(explicit_dir)
    extra = environ.extras.get("benchmark_dirs", {}).get(suite)
    if extra:
        dirs.append(extra)
    dirs += _env_path_dirs(dict(environ.env_vars))
    found = Found(None)
    for d in dict.fromkeys(d for d in dirs if d):
        found.searched.append(d)
        if _executable(Path(d) / program):
            found.path = str(Path(d) / program)
            return found
    found.searched.append("$PATH")
    on_path = shutil.which(program)
    found.path = str(Path(on_path).resolve()) if on_path else None
    return found


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
