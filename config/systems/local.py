"""The embedded default system: whatever this host really has.

Detected at configuration load (cheap reads of /sys and a few short,
time-limited commands), never assumed:

* the CPU topology (sockets, cores) from sysfs;
* Open MPI (``mpicc.openmpi``/``mpirun.openmpi``) and the transports its
  components and libfabric providers offer;
* MPICH (``mpicc.mpich``/``mpiexec.mpich``) and its ch4 device;
* Intel MPI installed from PyPI's impi-devel in its own venv: ``.venv-impi``
  in the checkout or ``$SENTINEL_INTEL_MPI_ROOT``;
* OSU Micro-Benchmarks built with one of them: ``$SENTINEL_OSU_OPENMPI``,
  ``$SENTINEL_OSU_MPICH``, ``$SENTINEL_OSU_INTELMPI`` (prefix or build tree).

One partition ``cpu`` (local scheduler, ``mpirun`` launcher: each
environment puts its own ``mpirun`` first on PATH) and one environment per
detected MPI. Environment features: ``mpi``, the family and every transport
name it offers; checks select on them, never on the system name.
"""

import os
import sys
from pathlib import Path

from sentinel import detect
from sentinel.paths import launchers_dir, repo_root

_intel_root = os.environ.get("SENTINEL_INTEL_MPI_ROOT", str(repo_root() / ".venv-impi"))
_stacks = [s for s in (detect.openmpi(launchers_dir()), detect.mpich(launchers_dir()),
                       detect.intelmpi(Path(_intel_root))) if s]


def _environment(stack: detect.MpiStack) -> dict:
    env_vars = [["PATH", f"{stack.launcher_dir}:$PATH"]]
    for name, value in stack.env_vars.items():
        if name == "LD_LIBRARY_PATH":
            value = f"{value}:${{LD_LIBRARY_PATH:-}}"
        env_vars.append([name, value])
    extras = {"mpi_family": stack.family, "mpi_version": stack.version,
              "detection_notes": "; ".join(stack.notes)}
    osu = os.environ.get(f"SENTINEL_OSU_{stack.family.upper()}")
    if osu:  # an OSU install prefix or build tree built with this MPI
        extras["benchmark_dirs"] = {"osu": osu}
    return {
        "name": stack.family,
        "target_systems": ["local"],
        "cc": stack.cc,
        "cxx": stack.cxx,
        "features": ["mpi", stack.family, *stack.transports],
        "env_vars": env_vars,
        "extras": extras,
    }


environments = [_environment(s) for s in _stacks]
if not _stacks:
    print("mpi-sentinel: no MPI found on this host (looked for mpicc.openmpi, "
          f"mpicc.mpich, {_intel_root}/bin/mpiexec.hydra); "
          "run 'make setup' or load your site's MPI module", file=sys.stderr)
    environments = [{"name": "no-mpi", "target_systems": ["local"]}]

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
        "environs": [e["name"] for e in environments],
        "features": ["mpi"] if _stacks else [],
        "processor": detect.cpu_topology(),
        "max_jobs": 1,
    }],
}
