"""Environment modules for the test cluster: Lmod, and the modules a site's MPIs come as.

``lmod_env(modulepath)`` is the environment of a login shell that
initialised Lmod (``LMOD_CMD``, the exported ``module`` function) with
``MODULEPATH`` set: what ``sentinel init`` and reframe see at a site.
``write_modules`` writes, under a module directory, the modules MPIs are
reached through (Intel MPI of ``make setup``'s ``.venv-impi``; Open MPI 5
and MPICH 5 of its ``.venv-openmpi5`` and ``.venv-mpich5``) and two that
go wrong as a site's do: one whose file does not parse, one that points at
an installation with its launcher missing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

#: Where Debian's lmod package puts the script that defines ``module``.
LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")


def unavailable() -> str | None:
    """Why Lmod cannot be used here, or None."""
    if not LMOD_INIT.exists():
        return f"{LMOD_INIT} not found: Lmod is not installed (apt install lmod)"
    return None


def lmod_env(modulepath: Path, base: dict[str, str]) -> dict[str, str]:
    """``base`` as a shell that sourced Lmod's init with ``MODULEPATH=modulepath`` leaves it."""
    script = f". {LMOD_INIT} >/dev/null 2>&1; export MODULEPATH={modulepath}; env -0"
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], env=base,
                         capture_output=True, check=True, timeout=60).stdout
    return dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)


INTEL = """\
-- Intel MPI from PyPI's impi-devel, as a site installs a vendor MPI
local root = "{root}"
setenv("I_MPI_ROOT", root)
setenv("FI_PROVIDER_PATH", pathJoin(root, "lib"))
prepend_path("LD_LIBRARY_PATH", pathJoin(root, "lib/mpi"))
prepend_path("LD_LIBRARY_PATH", pathJoin(root, "lib"))
prepend_path("PATH", pathJoin(root, "bin"))
"""


#: An MPI installed into a prefix of its own (PyPI's Open MPI 5 and MPICH 5 of
#: ``make setup``): its wrappers carry the prefix's library path themselves.
PREFIX = """\
-- {what}, as a site installs the next version beside its default MPI
prepend_path("PATH", "{bindir}")
"""


def write_modules(directory: Path, intel_root: Path, intel_version: str,
                  prefixes: dict[str, Path] | None = None) -> dict[str, str]:
    """The modules under ``directory``; their names by role (intel, broken, partial).

    ``prefixes``: a module more for each, named by its key (``openmpi/5.0``),
    that puts the prefix's ``bin`` first on PATH; its role is the key.
    """
    names = {"intel": f"intel-mpi/{intel_version}", "broken": "openmpi/9.9",
             "partial": "intel-mpi/2099.0"}
    for name, prefix in (prefixes or {}).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / f"{name}.lua").write_text(PREFIX.format(what=name, bindir=prefix / "bin"))
        names[name] = name
    (directory / "intel-mpi").mkdir(parents=True, exist_ok=True)
    (directory / "openmpi").mkdir(parents=True, exist_ok=True)
    (directory / f"{names['intel']}.lua").write_text(INTEL.format(root=intel_root))
    (directory / f"{names['broken']}.lua").write_text('prepend_path("PATH", "/opt/ompi/bin"\n')
    empty = directory.parent / "intel-partial"
    (empty / "bin").mkdir(parents=True, exist_ok=True)
    (directory / f"{names['partial']}.lua").write_text(f'setenv("I_MPI_ROOT", "{empty}")\n')
    return names
