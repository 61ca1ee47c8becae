"""The host's MPI stacks as a recent detection found them: one detection serves ten minutes.

:func:`sentinel.site.detect.local_stacks` runs ``ompi_info``, ``mpichversion``
and libfabric's probes each time the ``local`` configuration loads (about
0.65 s of a 1.2 s ReFrame start here). Commands that start ReFrame again and
again (``sentinel calibrate --runs``, ``sentinel vet``, ``sentinel plan``,
the test suite) reuse a detection made under the same environment:

* the key is this process's environment (less the variables that only say
  where output goes), the detection code itself, and the path, size and
  modification time of each MPI command detection runs (those of the MPI
  prefixes included): another PATH, a loaded module, an upgraded or newly
  installed MPI or libfabric's ``fi_info`` is a new key;
* a detection older than :data:`TTL_S` is made again: a fabric whose state
  changed (a provider that lost its device) shows within that time.

``SENTINEL_DETECT_CACHE`` is the directory (default ``<output>/var/detect``;
``off`` detects at every load). A cache file that cannot be read or written
only means a new detection.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from sentinel.mpi import transports
from sentinel.paths import output_dir
from sentinel.site import detect, names

#: Seconds a detection is reused.
TTL_S = 600
#: Variables that say where a run writes, not what the host has.
_WHERE = frozenset({"SENTINEL_OUTPUT", "SENTINEL_RESULTS_DB", "SENTINEL_REFERENCES",
                    "SENTINEL_DETECT_CACHE", "SLURM_CONF", "PWD", "OLDPWD", "SHLVL", "_",
                    "PYTEST_CURRENT_TEST"})
#: The commands detection runs or looks for.
_COMMANDS = ("ompi_info", "mpichversion", "fi_info", "ucx_info", "mpiexec.hydra",
             "mpicc.openmpi", "mpicc.mpich", "mpicc", "nvidia-smi")
#: The programs that mark an MPI installed into a prefix of its own.
_PREFIX_MARKERS = ("bin/ompi_info", "bin/mpichversion")


def local_stacks() -> list[detect.MpiStack]:
    """:func:`sentinel.site.detect.local_stacks`, from a detection under the same key if recent."""
    where = cache_dir()
    if where is None:
        return detect.local_stacks()
    path = where / f"stacks-{fingerprint()}.json"
    stacks = _read(path)
    if stacks is None:
        stacks = detect.local_stacks()
        _write(path, stacks)
    return stacks


def cache_dir() -> Path | None:
    """``$SENTINEL_DETECT_CACHE``, ``<output>/var/detect`` by default; None when ``off``."""
    value = os.environ.get("SENTINEL_DETECT_CACHE", "")
    if value.lower() == "off":
        return None
    return Path(value) if value else output_dir() / "var" / "detect"


def fingerprint() -> str:
    """The key of a detection: environment, detection code, intel root and MPI commands."""
    h = hashlib.sha256()
    for name in sorted(os.environ):
        if name not in _WHERE and not name.startswith("RFM_"):
            h.update(f"{name}={os.environ[name]}\0".encode())
    for module in (detect, names, transports):
        h.update(Path(module.__file__).read_bytes())
    root = detect.intel_root()
    places = [shutil.which(c) for c in _COMMANDS] + [str(root / "bin" / "mpiexec.hydra")]
    places += [str(p / m) for p in detect.mpi_prefixes() for m in _PREFIX_MARKERS]
    for place in places:
        h.update(f"{place}:{_stamp(place)}\0".encode())
    return h.hexdigest()[:24]


def _stamp(place: str | None) -> str:
    if place is None:
        return "-"
    try:
        st = os.stat(place)
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}"


def _read(path: Path) -> list[detect.MpiStack] | None:
    """The stacks of a recent detection at ``path``; None when absent, old or unreadable."""
    try:
        age = time.time() - path.stat().st_mtime
        if not 0 <= age <= TTL_S:
            return None
        return [detect.MpiStack(**entry) for entry in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        return None


def _write(path: Path, stacks: list[detect.MpiStack]) -> None:
    """Write atomically: ReFrame processes started at once read whole files only."""
    text = json.dumps([dataclasses.asdict(s) for s in stacks])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
