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

from sentinel.mpi.transports import DEVELOPMENT_PROVIDERS, INTEL_OFI_PROVIDERS, OFI_PROVIDERS
from sentinel.paths import launchers_dir, repo_root


def cpu_topology() -> dict:
    """The processor description ReFrame expects: ReFrame's own ``cpuinfo``.

    Sockets, cores, NUMA nodes and caches as masks, read from sysfs (or
    sysctl) the way ``reframe --detect-host-topology`` reads them.
    """
    return cpuinfo.cpuinfo()


def _run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
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
    rc, listing = _run([fi_info, "-l"], env)
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
        probes = list(pool.map(lambda p: _run([fi_info, "-p", p], env), listed))
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


def _ompi_components(ompi_info: str) -> set[tuple[str, str]]:
    rc, out = _run([ompi_info, "--parsable"])
    return set(re.findall(r"^mca:(\w+):(\w+):", out, re.M)) if rc == 0 else set()


def openmpi(launchers: Path) -> MpiStack | None:
    """Debian-style Open MPI (``mpicc.openmpi``, ``mpirun.openmpi``)."""
    cc, run, info = (shutil.which(x) for x in ("mpicc.openmpi", "mpirun.openmpi", "ompi_info"))
    if not (cc and run and info):
        return None
    dropped_ofi: list[str] = []
    with ThreadPoolExecutor(1) as pool:  # libfabric's probes overlap ompi_info's
        ofi = pool.submit(usable_ofi_providers, shutil.which("fi_info"), OFI_PROVIDERS,
                          dropped=dropped_ofi)
        comps = _ompi_components(info)
        provs = ofi.result()
    rc, out = _run([info, "--version"])
    m = re.search(r"Open MPI\)? v?(\S+)", out)
    transports = [f"ob1-{b}" for b in ("tcp", "vader", "sm") if ("btl", b) in comps]
    if ("pml", "ucx") in comps:
        transports += ["ucx-sm", "ucx-tcp"]
    notes: list[str] = []
    dropped: list[str] = []
    if ("mtl", "ofi") in comps:
        dropped += dropped_ofi
        transports += [f"ofi-{p}" for p in production_providers(provs, notes)]
        if not shutil.which("fi_info"):
            dropped.append("ofi-*: mtl ofi present but fi_info missing: OFI providers not "
                           "detected (apt install libfabric-bin)")
    return MpiStack("openmpi", m.group(1) if m else "unknown", cc,
                    str(launchers / "openmpi"), transports, notes=notes, dropped=dropped,
                    cxx=shutil.which("mpicxx.openmpi") or "")


def mpich(launchers: Path) -> MpiStack | None:
    """Debian-style MPICH (``mpicc.mpich``, ``mpiexec.mpich``)."""
    cc, run = shutil.which("mpicc.mpich"), shutil.which("mpiexec.mpich")
    version_cmd = shutil.which("mpichversion.mpich") or shutil.which("mpichversion")
    if not (cc and run and version_cmd):
        return None
    rc, out = _run([version_cmd])
    ver = re.search(r"MPICH Version:\s*(\S+)", out)
    dev = re.search(r"MPICH Device:\s*(\S+)", out)
    if not ver:  # mpichversion of another MPI (or a broken install)
        return None
    device = dev.group(1) if dev else ""
    transports: list[str] = []
    notes = [f"device {device}"]
    dropped: list[str] = []
    if "ucx" in device:
        transports += ["ucx-sm", "ucx-tcp"]
    if "ofi" in device:
        provs = usable_ofi_providers(shutil.which("fi_info"), OFI_PROVIDERS, dropped=dropped)
        transports += [f"ofi-{p}" for p in production_providers(provs, notes)]
    return MpiStack("mpich", ver.group(1), cc, str(launchers / "mpich"), transports,
                    notes=notes, dropped=dropped, cxx=shutil.which("mpicxx.mpich") or "")


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


def gpus() -> int:
    """NVIDIA GPUs of this host (``nvidia-smi -L``); 0 without the driver's tool."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    rc, out = _run([smi, "-L"])
    return len(re.findall(r"^GPU \d+:", out, re.MULTILINE)) if rc == 0 else 0


def cuda_awareness(stack: MpiStack) -> str | None:
    """None when the stack's MPI takes CUDA buffers; else why not, from the library itself."""
    if stack.family == "openmpi":
        info = shutil.which("ompi_info")
        rc, out = _run([info, "--parsable", "--all"]) if info else (127, "no ompi_info")
        if "mpi_built_with_cuda_support:value:true" in out:
            return None
        return "ompi_info does not report mpi_built_with_cuda_support:value:true"
    if stack.family == "mpich":
        version = shutil.which("mpichversion")
        rc, out = _run([version]) if version else (127, "no mpichversion")
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


@dataclass(frozen=True)
class SlurmPartition:
    """A Slurm partition: its node count and the CPUs a job gets on its smallest node."""

    name: str
    nodes: int
    cpus_per_node: int


def parse_node_cpus(text: str) -> dict[str, int]:
    """CPUs a job can use per node, from ``scontrol -o show nodes``.

    ``CPUEfctv`` (Slurm 22.05+) leaves out the CPUs reserved by core
    specialisation (``CpuSpecList``); older Slurm reports ``CPUTot`` only.
    """
    cpus = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        count = fields.get("CPUEfctv", fields.get("CPUTot", ""))
        if "NodeName" in fields and count.isdigit():
            cpus[fields["NodeName"]] = int(count)
    return cpus


def parse_sinfo(text: str, node_cpus: dict[str, int]) -> list[SlurmPartition]:
    """Partitions from ``sinfo -h -N -o '%R %N'`` (a line per partition and node)."""
    members: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1] in node_cpus:
            members.setdefault(fields[0], []).append(fields[1])
    return [SlurmPartition(name, len(nodes), min(node_cpus[n] for n in nodes))
            for name, nodes in members.items()]


def slurm() -> list[SlurmPartition]:
    """The partitions of a Slurm controller that answers, else none.

    Detected, not assumed: ``scontrol ping`` must report the controller UP
    (``SLURM_CONF`` selects the cluster as for any Slurm command).
    """
    scontrol, sinfo = shutil.which("scontrol"), shutil.which("sinfo")
    if not (scontrol and sinfo):
        return []
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):
        return []  # Slurm would retry reading it for 60 s before giving up
    rc, out = _run([scontrol, "ping"])
    if rc != 0 or " is UP" not in out:
        return []
    rc, nodes = _run([scontrol, "-o", "show", "nodes"])
    rc2, out = _run([sinfo, "-h", "-N", "-o", "%R %N"])
    return parse_sinfo(out, parse_node_cpus(nodes)) if rc == rc2 == 0 else []


def parse_pmi2_library(ldconfig: str) -> str | None:
    """Slurm's PMI-2 client library from ``ldconfig -p`` output, if installed."""
    m = re.search(r"^\s*libpmi2\.so(?:\.\d+)*\s.*=>\s*(\S+)$", ldconfig, re.MULTILINE)
    return m.group(1) if m else None


def slurm_pmi2_library() -> str | None:
    """Where Slurm's ``libpmi2.so`` is (Debian: libpmi2-0), for Intel MPI under srun.

    ``SENTINEL_SLURM_PMI2`` names it explicitly (a site's Slurm in its own prefix).
    """
    explicit = os.environ.get("SENTINEL_SLURM_PMI2")
    if explicit:
        if not os.path.isfile(explicit):
            raise ValueError(f"SENTINEL_SLURM_PMI2={explicit}: no such file")
        return explicit
    rc, out = _run(["ldconfig", "-p"])
    if rc != 0:
        rc, out = _run(["/sbin/ldconfig", "-p"])
    return parse_pmi2_library(out) if rc == 0 else None
