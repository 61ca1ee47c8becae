"""Detection of what this host really has: CPU topology and MPI stacks.

Used by ``config/systems/local.py`` at configuration load: only cheap reads of
``/sys`` and a few short, time-limited commands, never assumptions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from reframe.utility import cpuinfo

from sentinel.mpi.transports import (
    DEVELOPMENT_PROVIDERS,
    INTEL_OFI_PROVIDERS,
    OFI_PROVIDERS,
    UCX_CLASSES,
)
from sentinel.paths import launchers_dir, repo_root


def cpu_topology() -> dict:
    """The processor description ReFrame expects: ReFrame's own ``cpuinfo``.

    Sockets, cores, NUMA nodes and caches as masks, read from sysfs (or
    sysctl) the way ``reframe --detect-host-topology`` reads them.
    """
    return cpuinfo.cpuinfo()


def run_command(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Exit status and output (stdout, then stderr) of ``cmd`` within 20 s; 127: not run."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=20,
                           env={**os.environ, **(env or {})})
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, str(err)
    return p.returncode, p.stdout + p.stderr


#: libfabric variables that narrow which providers it offers; exported in the
#: caller's shell they silently shrink the matrix, so detection names them.
FI_SELECTION = ("FI_PROVIDER", "FI_PROVIDER_PATH", "FI_HMEM")


def usable_ofi_providers(fi_info: str | None, candidates: tuple[str, ...],
                         env: dict[str, str] | None = None,
                         dropped: list[str] | None = None) -> list[str]:
    """Providers, among ``candidates``, for which libfabric finds a usable fabric.

    ``fi_info -l`` lists the providers built in; only those are probed with
    ``fi_info -p`` (which fails when the provider has no device here). Each
    candidate left out, and each libfabric variable of the caller's
    environment that narrows the list, is said in ``dropped``.
    """
    if fi_info is None:
        return []
    dropped = [] if dropped is None else dropped
    narrowing = [f"{v}={os.environ[v]}" for v in FI_SELECTION
                 if v in os.environ and v not in (env or {})]
    rc, listing = run_command([fi_info, "-l"], env)
    present = set(re.findall(r"^(\w+):", listing, re.M)) if rc == 0 else set()
    usable = []
    hidden = [f"ofi-{p}" for p in candidates if p not in present]
    if narrowing and hidden:
        dropped.append(f"{', '.join(hidden)}: libfabric lists none of these providers with "
                       f"{', '.join(narrowing)} exported in this shell (unset it to detect "
                       "them)")
    listed = [p for p in candidates if p in present]
    # each fi_info mostly waits on libfabric's provider start-up (about 0.3 s
    # here): the probes overlap, and every ReFrame start pays only one
    with ThreadPoolExecutor(max(len(listed), 1)) as pool:
        probes = list(pool.map(lambda p: run_command([fi_info, "-p", p], env), listed))
    for p, (rc, text) in zip(listed, probes):
        if rc == 0:
            usable.append(p)
        else:
            why = text.strip().splitlines()[-1] if text.strip() else f"exit {rc}"
            under = f" with {', '.join(narrowing)} exported" if narrowing else ""
            dropped.append(f"ofi-{p}: provider {p} has no usable fabric here{under} "
                           f"(fi_info -p {p}: {why})")
    return usable


def production_providers(providers: list[str], notes: list[str]) -> list[str]:
    """Drop libfabric's development providers, noting each one left out."""
    for p in providers:
        if p in DEVELOPMENT_PROVIDERS:
            notes.append(f"OFI provider {p} present, not declared: a development provider "
                         f"(declare ofi-{p} in a site configuration to test it)")
    return [p for p in providers if p not in DEVELOPMENT_PROVIDERS]


@dataclass
class MpiStack:
    """One detected MPI installation and the transports it can offer."""

    family: str
    version: str
    cc: str
    launcher_dir: str
    transports: list[str]
    env_vars: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Transports this installation has but detection left out, each with why.
    dropped: list[str] = field(default_factory=list)
    #: The C++ wrapper ("" when the installation has none).
    cxx: str = ""


def ucx_transports(dropped: list[str]) -> list[str]:
    """The UCX transport classes this node's devices offer, from ``ucx_info -d``.

    Without ``ucx_info`` the classes every UCX build has (shared memory,
    TCP) are declared and the fabric classes named in ``dropped``.
    """
    info = shutil.which("ucx_info")
    rc, out = run_command([info, "-d"]) if info else (127, "")
    if rc != 0:
        dropped.append("ucx-rc, ucx-dc, ucx-ud: not probed: " + (
            f"ucx_info -d failed (exit {rc})" if info else
            "ucx_info is not on PATH (Debian: apt install ucx-utils)"))
        return ["ucx-sm", "ucx-tcp"]
    present = set(re.findall(r"^#\s+Transport:\s*(\S+)", out, re.M))
    return [f"ucx-{c}" for c, names in UCX_CLASSES.items() if names & present]


def _first(*names: str) -> str | None:
    """The first of ``names`` on PATH (a Debian-suffixed name before the generic one)."""
    return next((p for p in map(shutil.which, names) if p), None)


def _launcher_dir(launchers: Path, family: str, debian: str, generic: str) -> str:
    """Where the family's launcher is: the suite's wrapper of Debian's, else the MPI's own."""
    if shutil.which(debian):
        return str(launchers / family)
    found = shutil.which(generic)
    return str(Path(found).parent) if found else ""


def _ompi_components(ompi_info: str) -> set[tuple[str, str]]:
    rc, out = run_command([ompi_info, "--parsable"])
    return set(re.findall(r"^mca:(\w+):(\w+):", out, re.M)) if rc == 0 else set()


def openmpi(launchers: Path) -> MpiStack | None:
    """Open MPI: Debian's (``mpicc.openmpi``, ``mpirun.openmpi``), else the one on PATH."""
    cc, run = _first("mpicc.openmpi", "mpicc"), _first("mpirun.openmpi", "mpirun")
    info = shutil.which("ompi_info")
    if not (cc and run and info):
        return None
    dropped_ofi: list[str] = []
    with ThreadPoolExecutor(1) as pool:  # libfabric's probes overlap ompi_info's
        ofi = pool.submit(usable_ofi_providers, shutil.which("fi_info"), OFI_PROVIDERS,
                          dropped=dropped_ofi)
        comps = _ompi_components(info)
        provs = ofi.result()
    rc, out = run_command([info, "--version"])
    m = re.search(r"Open MPI\)? v?(\S+)", out)
    transports = [f"ob1-{b}" for b in ("tcp", "vader", "sm") if ("btl", b) in comps]
    notes: list[str] = []
    dropped: list[str] = []
    if ("pml", "ucx") in comps:
        transports += ucx_transports(dropped)
    if ("mtl", "ofi") in comps:
        dropped += dropped_ofi
        transports += [f"ofi-{p}" for p in production_providers(provs, notes)]
        if not shutil.which("fi_info"):
            dropped.append("ofi-*: mtl ofi present but fi_info missing: OFI providers not "
                           "detected (apt install libfabric-bin)")
    return MpiStack("openmpi", m.group(1) if m else "unknown", cc,
                    _launcher_dir(launchers, "openmpi", "mpirun.openmpi", "mpirun"), transports,
                    notes=notes, dropped=dropped, cxx=_first("mpicxx.openmpi", "mpicxx") or "")


def mpich(launchers: Path) -> MpiStack | None:
    """MPICH: Debian's (``mpicc.mpich``, ``mpiexec.mpich``), else the one on PATH."""
    cc, run = _first("mpicc.mpich", "mpicc"), _first("mpiexec.mpich", "mpiexec")
    version_cmd = _first("mpichversion.mpich", "mpichversion")
    if not (cc and run and version_cmd):
        return None
    rc, out = run_command([version_cmd])
    ver = re.search(r"MPICH Version:\s*(\S+)", out)
    dev = re.search(r"MPICH Device:\s*(\S+)", out)
    if not ver:  # mpichversion of another MPI (or a broken install)
        return None
    device = dev.group(1) if dev else ""
    transports: list[str] = []
    notes = [f"device {device}"]
    dropped: list[str] = []
    if "ucx" in device:
        transports += ucx_transports(dropped)
    if "ofi" in device:
        provs = usable_ofi_providers(shutil.which("fi_info"), OFI_PROVIDERS, dropped=dropped)
        transports += [f"ofi-{p}" for p in production_providers(provs, notes)]
    return MpiStack("mpich", ver.group(1), cc,
                    _launcher_dir(launchers, "mpich", "mpiexec.mpich", "mpiexec"), transports,
                    notes=notes, dropped=dropped, cxx=_first("mpicxx.mpich", "mpicxx") or "")


def intel_mpi_env(root: Path) -> dict[str, str]:
    """What Intel MPI from PyPI's impi-devel needs to run (see local-stack.md)."""
    return {
        "I_MPI_ROOT": str(root),
        "FI_PROVIDER_PATH": str(root / "lib"),
        "LD_LIBRARY_PATH": f"{root / 'lib'}:{root / 'lib' / 'mpi'}",
    }


def intelmpi(root: Path | None) -> MpiStack | None:
    """Intel MPI installed in its own venv (``make setup`` puts it in .venv-impi)."""
    if root is None or not (root / "bin" / "mpiexec.hydra").exists():
        return None
    env = intel_mpi_env(root)
    dists = sorted(root.glob("lib/python3*/site-packages/impi_rt-*.dist-info"))
    m = re.search(r"impi_rt-(\S+)\.dist-info", dists[-1].name) if dists else None
    fi_info = root / "bin" / "libfabric" / "fi_info"
    notes: list[str] = []
    dropped: list[str] = []
    provs = production_providers(usable_ofi_providers(
        str(fi_info) if fi_info.exists() else None, INTEL_OFI_PROVIDERS, env, dropped), notes)
    transports = ["shm"] + [f"ofi-{p}" for p in provs]
    transports += [f"shm-ofi-{p}" for p in provs if p != "shm"]
    return MpiStack("intelmpi", m.group(1) if m else "unknown", str(root / "bin" / "mpicc"),
                    str(root / "bin"), transports, env_vars=env, notes=notes, dropped=dropped,
                    cxx=str(root / "bin" / "mpicxx"))


#: Where an Intel MPI installation keeps its libfabric's ``fi_info``: PyPI's
#: impi_rt, then oneAPI's layouts.
_INTEL_FI_INFO = ("bin/libfabric/fi_info", "libfabric/bin/fi_info", "opt/mpi/libfabric/bin/fi_info")


def intelmpi_on_path() -> MpiStack | None:
    """The Intel MPI this environment has loaded (``I_MPI_ROOT``, or ``mpiexec.hydra`` on PATH).

    Its variables are the environment's (a module set them), so none are
    recorded; the providers are probed with its own ``fi_info``.
    """
    hydra = shutil.which("mpiexec.hydra")
    root = Path(os.environ["I_MPI_ROOT"]) if os.environ.get("I_MPI_ROOT") else (
        Path(hydra).resolve().parent.parent if hydra else None)
    if root is None or not (root / "bin" / "mpiexec.hydra").exists():
        return None
    rc, out = run_command([str(root / "bin" / "mpiexec.hydra"), "--version"])
    m = re.search(r"Intel\(R\) MPI Library.*Version\s+(\S+)", out)
    if not m:  # MPICH's hydra has the same name
        return None
    fi_info = next((root / f for f in _INTEL_FI_INFO if (root / f).exists()), None)
    notes: list[str] = []
    dropped: list[str] = [] if fi_info else [
        f"ofi-*: no fi_info under {root} ({', '.join(_INTEL_FI_INFO)}): providers not detected"]
    # the installation's own provider path (its module set it) narrows nothing
    own = {"FI_PROVIDER_PATH": os.environ["FI_PROVIDER_PATH"]} if (
        os.environ.get("FI_PROVIDER_PATH", "").startswith(str(root))) else None
    provs = production_providers(usable_ofi_providers(
        str(fi_info) if fi_info else None, INTEL_OFI_PROVIDERS, own, dropped), notes)
    transports = ["shm", *(f"ofi-{p}" for p in provs),
                  *(f"shm-ofi-{p}" for p in provs if p != "shm")]
    return MpiStack("intelmpi", m.group(1), str(root / "bin" / "mpicc"), str(root / "bin"),
                    transports, notes=notes, dropped=dropped, cxx=str(root / "bin" / "mpicxx"))


def path_stacks() -> list[MpiStack]:
    """The MPI installations this process's environment (its PATH, a loaded module) reaches.

    Unlike :func:`local_stacks`, no install location is assumed: what a
    compute node's discovery job reports (``sentinel.site.discover``).
    """
    with ThreadPoolExecutor(3) as pool:
        found = [pool.submit(openmpi, launchers_dir()), pool.submit(mpich, launchers_dir()),
                 pool.submit(intelmpi_on_path)]
        return [s for s in (f.result() for f in found) if s is not None]


def gpus() -> int:
    """NVIDIA GPUs of this host (``nvidia-smi -L``); 0 without the driver's tool."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    rc, out = run_command([smi, "-L"])
    return len(re.findall(r"^GPU \d+:", out, re.MULTILINE)) if rc == 0 else 0


def cuda_awareness(stack: MpiStack) -> str | None:
    """None when the stack's MPI takes CUDA buffers; else why not, from the library itself."""
    if stack.family == "openmpi":
        info = shutil.which("ompi_info")
        rc, out = run_command([info, "--parsable", "--all"]) if info else (127, "no ompi_info")
        if "mpi_built_with_cuda_support:value:true" in out:
            return None
        return "ompi_info does not report mpi_built_with_cuda_support:value:true"
    if stack.family == "mpich":
        version = shutil.which("mpichversion")
        rc, out = run_command([version]) if version else (127, "no mpichversion")
        if re.search(r"--with-cuda\b(?!=no)", out):
            return None
        return "mpichversion shows no --with-cuda configure option"
    return "this suite builds GPU buffers for CUDA-aware Open MPI and MPICH only"


def intel_root() -> Path:
    """Where Intel MPI is looked for: ``$SENTINEL_INTEL_MPI_ROOT``, else ``make setup``'s venv."""
    return Path(os.environ.get("SENTINEL_INTEL_MPI_ROOT", str(repo_root() / ".venv-impi")))


def local_stacks() -> list[MpiStack]:
    """The MPI installations of this host that work: Open MPI, MPICH, Intel MPI, in order."""
    with ThreadPoolExecutor(3) as pool:  # each waits on its own commands
        found = [pool.submit(openmpi, launchers_dir()), pool.submit(mpich, launchers_dir()),
                 pool.submit(intelmpi, intel_root())]
        return [s for s in (f.result() for f in found) if s is not None]
