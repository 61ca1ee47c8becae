"""The embedded default system: whatever this host really has.

Detected at configuration load (cheap reads of /sys and a few short,
time-limited commands), never assumed:

* the CPU topology (sockets, cores) from sysfs;
* Open MPI (``mpicc.openmpi``/``mpirun.openmpi``) and the transports its
  components and libfabric providers offer;
* MPICH (``mpicc.mpich``/``mpiexec.mpich``) and its ch4 device's netmods;
* the MPI of the generic ``mpicc`` first on PATH (a loaded module's);
* Open MPI and MPICH installed from PyPI into prefixes of their own
  (``.venv-openmpi5``, ``.venv-mpich5`` in the checkout, or the prefixes
  ``$SENTINEL_MPI_PREFIXES`` names), with the libfabric and UCX they bundle;
  an installation that builds for the MPI standard ABI (MPICH 5's
  ``mpicc_abi``, ``libmpi_abi``) gets a second environment, ``<name>-abi``;
* Intel MPI installed from PyPI's impi-devel in its own venv: ``.venv-impi``
  in the checkout or ``$SENTINEL_INTEL_MPI_ROOT``;
* OSU Micro-Benchmarks built with one of them: ``$SENTINEL_OSU_OPENMPI``,
  ``$SENTINEL_OSU_MPICH``, ``$SENTINEL_OSU_INTELMPI`` (prefix or build tree);
* Spack: with ``spack`` on PATH (and ``SENTINEL_SPACK`` not ``no``) the Open
  MPI and MPICH environments get the ``spack`` feature and build through
  ``spack-env/debian`` (install tree ``$SENTINEL_SPACK_INSTALL_TREE``,
  default ``<output>/var/spack-install``); the detected MPIs are declared as
  Spack externals (``extras['spack_external']``) that the first Spack build
  writes to ``<output>/var/spack-externals.yaml`` (MPICH's prefix made by
  ``scripts/spack-mpich-prefix.sh`` in the checkout's ``var/mpich-prefix``).
  Loading this file writes nothing and runs no script.

One partition ``cpu`` (local scheduler, ``mpirun`` launcher: each
environment puts its own ``mpirun`` first on PATH) and one environment per
detected MPI installation: the first of a family is named by the family
(``openmpi``), another by family and version (``openmpi-5_0``;
``sentinel.site.names``). When a Slurm controller answers (``scontrol ping``, with the
cluster ``SLURM_CONF`` names; ``SENTINEL_SLURM=no`` disables), one more
partition per Slurm partition, ``slurm-<name>`` (feature ``slurm``, srun
with PMIx for Open MPI and PMI-2 for MPICH and Intel MPI, Open MPI 5's
``mpirun`` and MPICH 5's ``mpiexec`` inside the allocation, ``num_nodes`` and
the CPUs a job gets from ``scontrol -o show nodes``; Intel MPI only where
Slurm's libpmi2 is installed).
Environment features: ``mpi``, the family and every transport name it
offers; checks select on them, never on the system name.
"""

import os
import shutil
import sys
from pathlib import Path

from sentinel.paths import repo_root
from sentinel.rfm.compat.cmdline import pins_jobs_to_nodes
from sentinel.site import detect, detect_cache, slurm

_intel_root = detect.intel_root()
_stacks = detect_cache.local_stacks()  # a detection of the last ten minutes, if any
_gpus = detect.gpus()
# With a GPU, each MPI that takes CUDA buffers gets the "cuda" feature (the
# device-buffer pt2pt runs there); the others say why not.
_cuda_not = {s.name: detect.cuda_awareness(s) for s in _stacks} if _gpus else {}
for _name, _why in _cuda_not.items():
    if _why:
        print(f"mpi-sentinel: {_name}: GPU buffers not tested here: {_why}", file=sys.stderr)


_var = Path(os.environ.get("SENTINEL_OUTPUT", str(repo_root()))) / "var"
_spack = (shutil.which("spack") if os.environ.get("SENTINEL_SPACK", "auto") != "no" else None)


def _spack_external(stack: detect.MpiStack) -> dict | None:
    """The stack as a Spack external (written by the first Spack build, not here)."""
    if stack.family == "openmpi":
        fabrics = ",".join(f for f in ("ucx", "ofi")
                           if any(t.startswith(f) for t in stack.transports))
        spec = f"openmpi@{stack.version}" + (f" fabrics={fabrics}" if fabrics else "")
        return {"spec": spec, "prefix": "/usr"}
    if stack.family == "mpich":
        # In the checkout, not the run's output: spack.lock records the
        # prefix, and a per-run path would make every lock stale.
        return {"spec": f"mpich@{stack.version}",
                "prefix": str(repo_root() / "var" / "mpich-prefix"),
                "prefix_script": str(repo_root() / "scripts" / "spack-mpich-prefix.sh")}
    return None


def _spack_settings() -> tuple[dict, list]:
    """Extras and env_vars of a +spack environment (Debian's Open MPI and MPICH)."""
    tree = os.environ.get("SENTINEL_SPACK_INSTALL_TREE", str(_var / "spack-install"))
    extras = {"spack_env": str(repo_root() / "spack-env" / "debian")}
    env_vars = [["SENTINEL_ROOT", str(repo_root())], ["SENTINEL_SPACK_INSTALL_TREE", tree],
                ["SENTINEL_SPACK_EXTERNALS", str(_var / "spack-externals.yaml")]]
    return extras, env_vars


def _environment(stack: detect.MpiStack) -> dict:
    env_vars = [["PATH", f"{stack.launcher_dir}:$PATH"]]
    for name, value in stack.env_vars.items():
        if name == "LD_LIBRARY_PATH":
            value = f"{value}:${{LD_LIBRARY_PATH:-}}"
        env_vars.append([name, value])
    extras = {"mpi_family": stack.family, "mpi_version": stack.version,
              "detection_notes": "; ".join(stack.notes),
              "dropped_transports": "; ".join(stack.dropped)}
    osu = os.environ.get(f"SENTINEL_OSU_{stack.family.upper()}")
    if osu:  # an OSU install prefix or build tree built with this MPI
        extras["benchmark_dirs"] = {"osu": osu}
    spack = []
    # spack-env/debian declares the distribution's Open MPI and MPICH: the
    # installations named by their family
    if _spack and stack.family in ("openmpi", "mpich") and stack.name == stack.family:
        more, more_vars = _spack_settings()
        extras.update(more, spack_external=_spack_external(stack))
        env_vars += more_vars
        spack = ["spack"]
    return {
        "name": stack.name,
        "target_systems": ["local"],
        "cc": stack.cc,
        "cxx": stack.cxx,
        "features": ["mpi", stack.family, *stack.transports, *spack,
                     *(["cuda"] if _gpus and not _cuda_not.get(stack.name) else [])],
        "env_vars": env_vars,
        "extras": extras,
    }


def _abi_environment(stack: detect.MpiStack) -> dict:
    """The installation's builds for the MPI standard ABI: ``<name>-abi``, feature ``mpi-abi``.

    The same MPI and transports; the benchmarks built with its ``mpicc_abi``
    link ``libmpi_abi``, and each run's linkage check requires that library.
    """
    native = _environment(stack)
    return {**native, "name": f"{stack.name}-abi", "cc": stack.abi_cc,
            "cxx": stack.abi_cxx, "features": [*native["features"], "mpi-abi"],
            "extras": {**native["extras"], "mpi_abi": True}}


environments = [_environment(s) for s in _stacks]
environments += [_abi_environment(s) for s in _stacks if s.abi_cc]
for _stack in _stacks:  # a transport left out is said, never silently untested
    for _why in _stack.dropped:
        print(f"mpi-sentinel: {_stack.name}: not tested here: {_why}", file=sys.stderr)
if os.environ.get("SENTINEL_MPI_PREFIXES"):  # prefixes named, not the checkout's defaults
    for _prefix in detect.mpi_prefixes():
        if not any(Path(s.cc).parent == _prefix / "bin" for s in _stacks):
            print(f"mpi-sentinel: SENTINEL_MPI_PREFIXES: {_prefix} holds no working Open MPI "
                  "(bin/ompi_info) or MPICH (bin/mpichversion): nothing declared from it",
                  file=sys.stderr)
if not _stacks:
    print("mpi-sentinel: no MPI found on this host (looked for mpicc.openmpi, "
          f"mpicc.mpich, {_intel_root}/bin/mpiexec.hydra); "
          "run 'make setup' or load your site's MPI module", file=sys.stderr)
    environments = [{"name": "no-mpi", "target_systems": ["local"]}]

#: How srun starts each family here (``slurm.SRUN_PMI``, its first choice),
#: unless the MPI runs with its own launcher in the allocation
#: (``slurm.OWN_LAUNCHER``: Open MPI 5 and MPICH 5, extras ``launcher``):
#: Intel MPI only where Slurm's PMI-2 client library is installed (Debian:
#: libpmi2-0); a rank that dies ends its launch (``slurm.SRUN_KILL``: without
#: it, 300 s here when Open MPI's TCP BTL segfaulted on a namespaced node).
_SRUN_MPI = {family: f"--mpi={pmis[0]}" for family, pmis in slurm.SRUN_PMI.items()}


def _srun_environments(envs: list[dict], part: slurm.SlurmPartition,
                       pmi2: str | None) -> list[dict]:
    """The environments of a Slurm partition: each family with its srun options."""
    partition, whole = part.name, slurm.whole_nodes(_host, part.cpus_per_node)
    out = []
    for env in envs:
        family = env["extras"]["mpi_family"]
        if family not in _SRUN_MPI or (family == "intelmpi" and not pmi2):
            continue
        env_vars = env["env_vars"] + (
            [["I_MPI_PMI_LIBRARY", pmi2]] if family == "intelmpi" else [])
        own = slurm.own_launcher(family, env["extras"]["mpi_version"], whole)
        launch = ({"launcher": own} if own else
                  {"launcher_options": [_SRUN_MPI[family], slurm.SRUN_KILL]})
        out.append({**env, "target_systems": [f"local:slurm-{partition}"], "env_vars": env_vars,
                    "extras": {**env["extras"], **launch}})
    return out


def _slurm_partition(part: slurm.SlurmPartition, host: dict) -> dict:
    """A ReFrame partition for a Slurm partition that answers on this host."""
    # A node with the host's CPU count is the host; a smaller fake node's job
    # gets some of the host's CPUs, whichever Slurm gives it.
    processor, _ = slurm.job_processor(host, part.cpus_per_node)
    return {
        "name": f"slurm-{part.name}",
        "descr": f"Slurm partition {part.name}: {part.nodes} node(s) x "
                 f"{part.cpus_per_node} CPU(s)",
        "scheduler": "squeue",  # 'slurm' calls sacct, which needs accounting
        "launcher": "srun",
        "access": [f"--partition={part.name}"],
        "environs": [e["name"] for e in environments
                     if f"local:slurm-{part.name}" in e["target_systems"]],
        "features": ["mpi", "slurm"],
        # A job pinned to a node (--distribute, the vet mode) waits while the
        # node finishes another: Slurm calls that ReqNodeNotAvail, which
        # ReFrame would take for a node gone and cancel the job. Elsewhere
        # ReqNodeNotAvail is a node down, and the job is cancelled naming it.
        "sched_options": {"ignore_reqnodenotavail": pins_jobs_to_nodes()},
        "extras": {"num_nodes": part.nodes},
        "processor": processor,
        "max_jobs": 4,
    }


_host = detect.cpu_topology()
_slurm = slurm.slurm() if _stacks and os.environ.get("SENTINEL_SLURM", "auto") != "no" else []
_pmi2 = slurm.slurm_pmi2_library() if _slurm else None
if _slurm and not _pmi2:
    for _env in environments:
        if _env["extras"]["mpi_family"] == "intelmpi":
            _env["extras"]["detection_notes"] = "; ".join(filter(None, [
                _env["extras"]["detection_notes"],
                "not on the Slurm partitions: Slurm's PMI-2 library libpmi2.so is not "
                "installed (apt install libpmi2-0, or set SENTINEL_SLURM_PMI2)"]))
environments += [e for p in _slurm for e in _srun_environments(environments, p, _pmi2)]

system = {
    "name": "local",
    "descr": "This host, as detected (" + (", ".join(
        f"{s.family} {s.version}" for s in _stacks) or "no MPI") + ")",
    "hostnames": [".*"],
    "modules_system": "nomod",
    "partitions": [{
        "name": "cpu",
        "descr": "All cores of this host",
        "scheduler": "local",
        "launcher": "mpirun",
        "environs": [e["name"] for e in environments if "local" in e["target_systems"]],
        "features": (["mpi"] if _stacks else []) + (["gpu"] if _gpus else []),
        "devices": [{"type": "gpu", "num_devices": _gpus}] if _gpus else [],
        "processor": _host,
        "max_jobs": 1,
    }, *(_slurm_partition(p, _host) for p in _slurm)],
}
