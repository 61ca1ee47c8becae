"""Which MPI a benchmark binary really runs with, from ``ldd`` in the job.

A binary built with one MPI's wrapper and launched by another starts as
singletons or crashes in ways that do not name the cause. The job runs
``ldd`` on the executable with the run-time environment; this module reads
that output and identifies the MPI library it resolves to.

The soname alone does not tell MPICH from Intel MPI (both ship the MPICH ABI,
``libmpi.so.12``), so the library file is identified by the version string
each implementation embeds, read from the path ``ldd`` resolved. The soname
decides only when that file cannot be read here (a path local to compute
nodes). A binary with no MPI library in ``ldd`` (static MPI) is identified
from its own bytes.

A binary built for the MPI standard ABI (MPI 5.0; MPICH 5's ``mpicc_abi``)
links ``libmpi_abi.so.1``, which any implementation may provide: its family
is told by the version string alone, and such a binary must run with that
library, not a native one.
"""

from __future__ import annotations

import mmap
import os
import re
from dataclasses import dataclass
from functools import lru_cache

#: Version strings embedded in each implementation's library, most specific
#: first: Intel MPI is derived from MPICH and also contains "MPICH".
MARKERS: tuple[tuple[str, bytes], ...] = (
    ("intelmpi", b"Intel(R) MPI Library"),
    ("openmpi", b"Open MPI"),
    ("mpich", b"MPICH"),
)

#: Families the MPICH ABI soname (``libmpi.so.12``) can belong to.
MPICH_ABI = ("mpich", "intelmpi")

_MPI_LIB = re.compile(r"^(libmpi(?:ch|_cray|_intel|_abi)?\.so(?:\.\d+)*)$")
#: The soname of the MPI standard ABI's library.
ABI_SONAME = "libmpi_abi.so"
_LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(.*?)\s*(?:\(0x[0-9a-f]+\))?\s*$")


@dataclass(frozen=True)
class Linkage:
    """The MPI library a binary resolved to, and what it was identified as."""

    soname: str
    path: str | None
    family: str | None
    how: str

    def describe(self) -> str:
        """``libmpi.so.40 => /usr/lib/... (openmpi, version string)``."""
        where = self.path or "not found"
        return f"{self.soname} => {where} ({self.family or 'unidentified'}, {self.how})"


def mpi_libraries(ldd_text: str) -> list[tuple[str, str | None]]:
    """The MPI libraries in an ``ldd`` output: (soname, resolved path or None)."""
    found = []
    for line in ldd_text.splitlines():
        m = _LDD_LINE.match(line)
        if not m or not _MPI_LIB.match(m.group(1)):
            continue
        target = m.group(2)
        found.append((m.group(1), None if target == "not found" else target))
    return found


def resolved(ldd_text: str) -> str:
    """The MPI libraries ``ldd`` resolved, ``libmpi.so.40 => /lib/.../libmpi.so.40``; '' if none."""
    return "; ".join(f"{soname} => {path or 'not found'}"
                     for soname, path in mpi_libraries(ldd_text))


@lru_cache(maxsize=64)
def _identify_file(path: str, _mtime: float, _size: int) -> str | None:
    with open(path, "rb") as fp:
        if _size == 0:
            return None
        with mmap.mmap(fp.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for family, marker in MARKERS:
                if data.find(marker) >= 0:
                    return family
    return None


def identify_file(path: str) -> str | None:
    """The MPI family whose version string the file holds, or None.

    Raises OSError when the file cannot be read.
    """
    st = os.stat(path)
    return _identify_file(os.path.realpath(path), st.st_mtime, st.st_size)


def _by_soname(soname: str) -> str | None:
    if soname.startswith("libmpich") or soname.startswith("libmpi_cray"):
        return "mpich"
    if soname.startswith("libmpi.so.40"):
        return "openmpi"
    return None


def identify(soname: str, path: str | None) -> Linkage:
    """Identify one resolved MPI library: by its version string, else its soname."""
    if path is not None:
        try:
            family = identify_file(path)
        except OSError as err:
            family, how = _by_soname(soname), f"soname; {path} unreadable here: {err.strerror}"
        else:
            how = "version string" if family else "no known version string"
        return Linkage(soname, path, family, how)
    return Linkage(soname, None, None, "not found at run time")


def linkage_problems(family: str, ldd_text: str, executable: str,
                     abi: bool = False) -> tuple[str, list[str]]:
    """Check that ``executable`` runs with ``family``'s MPI.

    ``abi``: the binary was built for the MPI standard ABI, and must run
    with ``family``'s ``libmpi_abi``. Returns a description of what was found
    and the problems (empty: verified).
    """
    if "not a dynamic executable" in ldd_text or "statically linked" in ldd_text:
        return _static(family, executable)
    if not ldd_text.strip():
        return "nothing", [f"ldd printed nothing for {executable}"]
    libs = [identify(soname, path) for soname, path in mpi_libraries(ldd_text)]
    if not libs:
        first = ldd_text.strip().splitlines()[0]
        if "=>" not in ldd_text:
            return "nothing", [f"ldd could not inspect {executable}: {first}"]
        return _static(family, executable)
    issues = [_problem(family, lib) for lib in libs] + _abi_problems(abi, libs)
    return "; ".join(lib.describe() for lib in libs), [i for i in issues if i]


def _abi_problems(abi: bool, libs: list[Linkage]) -> list[str]:
    """A standard-ABI binary must run with an ABI library, and a native one without."""
    native = [lib.soname for lib in libs if not lib.soname.startswith(ABI_SONAME)]
    if abi and native:
        return [f"built for the MPI standard ABI, but it runs with the native "
                f"{', '.join(native)}"]
    if not abi and len(native) < len(libs):
        return [f"the environment builds natively, but the binary runs with {ABI_SONAME}"]
    return []


def _problem(family: str, lib: Linkage) -> str | None:
    if lib.path is None:
        return f"{lib.soname} is not found at run time (LD_LIBRARY_PATH of the environment?)"
    if lib.family is None and lib.soname.startswith("libmpi.so.12") and family in MPICH_ABI:
        return None  # the MPICH ABI, unreadable here: both families are plausible
    if lib.family is None:
        return f"{lib.soname} => {lib.path} is not identifiable as any of " + \
            ", ".join(f for f, _ in MARKERS) + f" ({lib.how})"
    if lib.family != family:
        return (f"the binary runs with {lib.family}'s {lib.soname} ({lib.path}); "
                f"the environment is {family}")
    return None


def _static(family: str, executable: str) -> tuple[str, list[str]]:
    try:
        found = identify_file(executable)
    except OSError as err:
        return "static", [f"cannot read {executable} to identify its MPI: {err.strerror}"]
    desc = f"static executable ({found or 'no MPI version string'})"
    if found is None:
        return desc, [f"{executable} links no MPI library and embeds no MPI version string"]
    if found != family:
        return desc, [f"the static binary embeds {found}'s MPI; the environment is {family}"]
    return desc, []
