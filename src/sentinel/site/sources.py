"""Release tarballs of the standard benchmarks, for sites without a prebuilt copy.

The last step of the binary lookup (after an explicit directory, the
environment's ``benchmark_dirs`` and PATH): fetch the release tarball, check
its SHA-256 and build it with the environment's MPI wrappers. A site without
network points ``url`` at its own mirror (``file:///...`` or an internal
``https://``) with the tarball's ``sha256``.
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from sentinel.errors import SentinelError


@dataclass(frozen=True)
class Release:
    """One release tarball of a benchmark suite."""

    suite: str
    version: str
    url: str
    sha256: str

    @property
    def filename(self) -> str:
        """The tarball's file name (the last component of the URL)."""
        return Path(urlparse(self.url).path).name


#: The releases built when no prebuilt binaries are found. Checksums as
#: published with the releases (and pinned by Spack and EasyBuild).
RELEASES: dict[str, Release] = {
    "osu": Release(
        "osu", "7.1-1",
        "https://mvapich.cse.ohio-state.edu/download/mvapich/osu-micro-benchmarks-7.1-1.tar.gz",
        "85f4dd8be1df31255e232852769ae5b82e87a5fb14be2f8eba1ae9de8ffe391a"),
    "imb": Release(
        "imb", "2021.3",
        "https://github.com/intel/mpi-benchmarks/archive/IMB-v2021.3.tar.gz",
        "9b58a4a7eef7c0c877513152340948402fd87cb06270d2d81308dc2ef740f4c7"),
}


def release(suite: str, url: str = "", sha256: str = "") -> Release:
    """The release of ``suite``, or the site's own ``url`` (which then needs ``sha256``)."""
    if suite not in RELEASES:
        raise SentinelError(f"no release known for suite '{suite}' (known: {sorted(RELEASES)})")
    default = RELEASES[suite]
    if not url:
        return default
    if not sha256:
        raise SentinelError(f"url {url} for {suite} is set without its sha256: set both, "
                            "so that what is built is what was meant")
    return Release(suite, "site", url, sha256.lower())


def unreachable(url: str, timeout: float = 5.0) -> str | None:
    """Why ``url`` cannot be fetched now, or None when it can."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        path = Path(parsed.path)
        return None if path.is_file() else f"{path} does not exist"
    if parsed.scheme not in ("http", "https"):
        return f"unsupported URL scheme '{parsed.scheme}' (use file, http or https)"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"),
                                    timeout=timeout):
            return None
    except urllib.error.HTTPError as err:
        return f"HTTP {err.code} {err.reason}"
    except (urllib.error.URLError, OSError) as err:
        return str(getattr(err, "reason", err))


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Recipe:
    """How a release is built: a ReFrame build system, its options, then the install.

    ``{prefix}`` in the options and install commands is the install prefix.
    """

    build_system: str            # "Autotools" or "Make"
    options: tuple[str, ...]     # configure options (Autotools) or make options (Make)
    install: tuple[str, ...]     # shell commands after the build


#: OSU is an Autotools package installing below the prefix
#: (``libexec/osu-micro-benchmarks/mpi/...``); IMB's Makefile has no install
#: target, so IMB-MPI1 is copied to ``prefix/bin``.
RECIPES: dict[str, Recipe] = {
    "osu": Recipe("Autotools", ("--prefix={prefix}",), ("make install",)),
    "imb": Recipe("Make", ("TARGET=MPI1",),
                  ("mkdir -p {prefix}/bin", "cp IMB-MPI1 {prefix}/bin/")),
}


def recipe(suite: str, cc: str, cxx: str) -> Recipe:
    """The build recipe of ``suite``; the environment must name its C and C++ wrappers."""
    if suite not in RECIPES:
        raise SentinelError(f"no build recipe for suite '{suite}'")
    if not cc or not cxx:
        raise SentinelError(f"building {suite} needs the environment's C and C++ MPI wrappers "
                            f"(cc='{cc}', cxx='{cxx}'): set 'cc' and 'cxx' in the environment")
    return RECIPES[suite]
