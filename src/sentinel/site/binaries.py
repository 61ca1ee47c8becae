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
    #: Where the program would be in the first directory the site named
    #: (for --dry-run, which generates scripts without the files present).
    declared: str | None = None

    def reason(self, program: str, environ: str) -> str:
        """Why the program is unavailable, for a skip message."""
        where = ", ".join(self.searched) or "nowhere"
        return f"{program} not found for environment {environ} (looked in: {where})"


#: Where a suite's programs sit below a directory a site names: an install
#: prefix, or a build tree (OSU 5.x builds in mpi/, 7.x in c/mpi/).
LAYOUTS: dict[str, tuple[str, ...]] = {
    "osu": ("", "pt2pt", "collective",
            *(f"{root}/{kind}" for root in ("libexec/osu-micro-benchmarks/mpi", "mpi", "c/mpi")
              for kind in ("pt2pt", "collective"))),
    "imb": ("", "bin"),
}


def _env_path_dirs(env_vars: dict[str, str]) -> list[str]:
    value = env_vars.get("PATH", "")
    return [d for d in value.split(":") if d and not d.startswith("$")]


def find_program(program: str, suite: str, environ, explicit_dir: str = "") -> Found:
    """Locate ``program`` of benchmark ``suite`` (``osu``, ``imb``) for ``environ``."""
    named = [d for d in (explicit_dir, environ.extras.get("benchmark_dirs", {}).get(suite)) if d]
    dirs = [str(Path(d) / sub) if sub else d for d in named for sub in LAYOUTS.get(suite, ("",))]
    dirs += _env_path_dirs(dict(environ.env_vars))
    found = Found(None, declared=str(Path(named[0]) / program) if named else None)
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
