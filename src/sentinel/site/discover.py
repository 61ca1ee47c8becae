"""What one compute node offers, as ``sentinel init``'s discovery job reports it.

``python -m sentinel.site.discover`` prints one JSON object (:data:`SCHEMA`):

* ``processor``: the node's topology as ReFrame detects it
  (``reframe --detect-host-topology``), and ``job_cpus``, the CPUs this job
  may use (fewer than the node's where Slurm reserves some: ``CpuSpecList``);
* ``gpus``: NVIDIA GPUs (``nvidia-smi -L``);
* ``stacks``: each MPI installation reachable here and the transports it
  offers (``ompi_info``, ``ucx_info -d``, ``fi_info``, Intel MPI's own
  ``fi_info``), found three ways: on ``PATH``; through each environment
  module (Lmod or Tcl Environment Modules) whose name is an MPI's, loaded in
  a shell of its own; through Spack (``spack find``);
* ``launch``: Slurm's PMI plugins (``srun --mpi=list``) and the PMI-2
  client library Intel MPI needs under ``srun``;
* ``problems``: what could not be looked at (a module system that errors,
  a module that does not load, an MPI whose tools are missing), each in a
  sentence; the rest of the report stands.

``--path-only`` prints the stacks of this process's environment alone (and
its problems): the form each module's shell runs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from sentinel.site import detect, slurm

#: Version of the report's layout; ``sentinel init`` refuses another.
SCHEMA = 1
#: Module names that are an MPI's (the part before the first ``/``).
MPI_MODULE = re.compile(r"(?i)^(open-?mpi|ompi|hpcx-ompi|mpich|intel-?(oneapi-)?mpi|impi)$")
#: Seconds a module's shell may take to load it and detect what it has.
MODULE_TIMEOUT = 120
#: The Spack packages that are MPIs this suite runs.
SPACK_MPIS = ("openmpi", "mpich", "intel-oneapi-mpi")


def module_system() -> tuple[str, str] | None:
    """ReFrame's name for this shell's module system and the script that defines ``module``."""
    lmod = os.environ.get("LMOD_PKG")
    if lmod and Path(lmod, "init", "bash").exists():
        return "lmod", str(Path(lmod, "init", "bash"))
    home = os.environ.get("MODULESHOME")
    if home and Path(home, "init", "bash").exists():
        return ("lmod" if Path(home, "libexec", "lmod").exists() else "tmod4",
                str(Path(home, "init", "bash")))
    return None


def _shell(init: str, commands: str, timeout: float) -> tuple[int, str]:
    """``commands`` in a bash that sourced the module system's ``init``; status and output."""
    script = f". {shlex.quote(init)} >/dev/null 2>&1\n{commands}\n"
    try:
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], text=True,
                           capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"did not finish within {timeout:g} s"
    return p.returncode, p.stdout + ("\n" + p.stderr if p.stderr else "")


def parse_module_avail(text: str) -> list[str]:
    """Module names from ``module -t avail`` (Lmod or Tcl modules: a name a line)."""
    names = []
    for line in text.splitlines():
        line = re.sub(r"\((default|D)\)$", "", line.strip())
        if line and not line.endswith(":") and not line.startswith("-") and " " not in line:
            names.append(line.rstrip("/"))
    return names


def mpi_modules(init: str, problems: list[str]) -> list[str]:
    """The modules whose name is an MPI's, full names (``openmpi/4.1.4``), latest last."""
    rc, out = _shell(init, "module -t avail 2>&1", 60)
    if rc != 0:
        problems.append(f"module -t avail failed (exit {rc}): {detect.last_line(out)}")
        return []
    names = parse_module_avail(out)
    return [n for n in names if "/" in n and MPI_MODULE.match(n.split("/", 1)[0])]


def _key(stack: dict) -> tuple[str, str]:
    return stack["family"], os.path.realpath(stack["cc"])


def _child_stacks(init: str | None, prepare: str, what: str,
                  problems: list[str]) -> list[dict]:
    """The stacks a shell sees after ``prepare`` (a module load, a Spack prefix on PATH)."""
    me = f"{shlex.quote(sys.executable)} -m sentinel.site.discover --path-only"
    commands = f"{prepare} || exit 97\nexec {me}"
    rc, out = _shell(init or "/dev/null", commands, MODULE_TIMEOUT)
    if rc == 97:
        problems.append(f"{what}: does not load: {detect.last_line(out)}")
        return []
    try:
        found = json.loads(out[out.index("{"):out.rindex("}") + 1]) if rc == 0 else None
    except ValueError:
        found = None
    if not isinstance(found, dict):
        problems.append(f"{what}: detection in its environment failed (exit {rc}): "
                        f"{detect.last_line(out)}")
        return []
    problems += [f"{what}: {p}" for p in found.get("problems", [])]
    return found.get("stacks", [])


def _as_json(stack: detect.MpiStack, gpus: int) -> dict:
    record = asdict(stack)
    # a benchmark beside the compiler wrapper was built with that MPI (Intel MPI ships IMB)
    beside = Path(stack.cc).parent
    record["benchmark_dirs"] = {"imb": str(beside)} if (beside / "IMB-MPI1").is_file() else {}
    if gpus:
        why = detect.cuda_awareness(stack)
        record["cuda"] = why is None
        record["cuda_note"] = why or ""
    return record


def module_stacks(base: list[dict], problems: list[str]) -> tuple[str, list[dict]]:
    """Module system name and the stacks reachable only through an MPI module."""
    found = module_system()
    if found is None:
        return "nomod", []
    kind, init = found
    seen = {_key(s) for s in base}
    stacks = []
    for name in mpi_modules(init, problems):
        before = len(problems)
        new = [s for s in _child_stacks(init, f"module load {shlex.quote(name)}",
                                        f"module {name}", problems) if _key(s) not in seen]
        if not new and len(problems) == before:
            problems.append(f"module {name}: loads, but adds no MPI installation to those on "
                            "PATH: not declared")
        for s in new:
            seen.add(_key(s))
            stacks.append({**s, "source": "module", "modules": [name]})
    return kind, stacks


#: Per family, the program that marks its installation and the ones detection needs beside it.
_MARKERS = {"openmpi": ("ompi_info", ("mpicc", "mpirun")),
            "mpich": ("mpichversion", ("mpicc", "mpiexec"))}


def incomplete(stacks: list[detect.MpiStack]) -> list[str]:
    """An MPI whose marker is on PATH but whose wrappers or launcher are not, in a sentence each."""
    out = []
    for family, (marker, tools) in _MARKERS.items():
        if shutil.which(marker) and not any(s.family == family for s in stacks):
            missing = [t for t in tools if not (shutil.which(t) or shutil.which(f"{t}.{family}"))]
            out.append(f"{family}: {marker} is on PATH but "
                       f"{' and '.join(missing) or 'its wrappers do not work'}"
                       f"{' is not' if len(missing) == 1 else ' are not' if missing else ''}: "
                       "not declared")
    root = os.environ.get("I_MPI_ROOT")
    if root and not any(s.family == "intelmpi" for s in stacks):
        out.append(f"intelmpi: I_MPI_ROOT={root} has no Intel MPI bin/mpiexec.hydra: "
                   "not declared")
    return out


def _path_report(gpus: int) -> dict:
    stacks = detect.path_stacks()
    return {"stacks": [_as_json(s, gpus) for s in stacks], "problems": incomplete(stacks)}


def parse_spack_find(text: str) -> list[tuple[str, str]]:
    """``(name@version, prefix)`` from ``spack find --format '{name}@{version} {prefix}'``."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^(\S+@\S+)\s+(/\S+)$", text, re.M)]


def spack_stacks(base: list[dict], problems: list[str]) -> list[dict]:
    """The MPIs Spack installed, each detected with its prefix first on PATH."""
    spack = shutil.which("spack")
    if spack is None:
        return []
    rc, out = detect.run_command([spack, "find", "--format", "{name}@{version} {prefix}",
                                  *SPACK_MPIS])
    if rc != 0 and "No package matches" not in out:
        problems.append(f"spack find failed (exit {rc}): {detect.last_line(out)}")
        return []
    seen = {_key(s) for s in base}
    stacks = []
    for spec, prefix in parse_spack_find(out):
        path = f"{prefix}/bin"
        prepare = f"export PATH={shlex.quote(path)}:$PATH I_MPI_ROOT=" + (
            shlex.quote(prefix + "/mpi/latest") if spec.startswith("intel") else "")
        for s in _child_stacks(None, prepare, f"spack {spec}", problems):
            if _key(s) not in seen:
                seen.add(_key(s))
                stacks.append({**s, "source": "spack", "spack_spec": spec,
                               "env_vars": {**s["env_vars"], "PATH": f"{path}:$PATH"}})
    return stacks


def pmi_plugins() -> list[str]:
    """Slurm's MPI plugin types on this node (``srun --mpi=list``); none without srun."""
    srun = shutil.which("srun")
    if srun is None:
        return []
    rc, out = detect.run_command([srun, "--mpi=list"])
    return re.findall(r"^\s*(?:srun: )?(\w+)\s*$", out, re.M) if rc == 0 else []


def _pmi2(problems: list[str]) -> str | None:
    try:
        return slurm.slurm_pmi2_library()
    except ValueError as err:  # SENTINEL_SLURM_PMI2 names no file
        problems.append(str(err))
        return None


def report() -> dict:
    """The discovery report of the node it runs on (see the module's description)."""
    gpus = detect.gpus()
    here = _path_report(gpus)
    problems: list[str] = list(here["problems"])
    base = [{**s, "source": "path", "modules": []} for s in here["stacks"]]
    kind, from_modules = module_stacks(base, problems)
    plugins = pmi_plugins()
    return {
        "schema": SCHEMA,
        "hostname": socket.gethostname(),
        "slurm_node": os.environ.get("SLURMD_NODENAME", ""),
        "processor": detect.cpu_topology(),
        "job_cpus": sorted(os.sched_getaffinity(0)),
        "gpus": gpus,
        "modules_system": kind,
        "stacks": [*base, *from_modules, *spack_stacks(base + from_modules, problems)],
        "launch": {"pmi": [p for p in plugins if p != "none"],
                   "pmi2_library": _pmi2(problems) if plugins else None},
        "problems": problems,
    }


def main(argv: list[str]) -> int:
    """Print the report (or, with ``--path-only``, this environment's stacks) as JSON."""
    if argv == ["--path-only"]:
        print(json.dumps(_path_report(detect.gpus())))
    elif not argv:
        print(json.dumps(report(), indent=1))
    else:
        print("usage: python -m sentinel.site.discover [--path-only]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
