"""From the scheduler's answer and the discovery reports to ``config/systems/<site>.py``.

The file follows the project's conventions (``example_cluster.py``):
partitions selected by features, never by name; every transport an MPI
offers on a partition declared as a feature of that partition's
environment; launcher options per MPI family, or the launcher of an MPI
that runs with its own inside a Slurm allocation; the processor as
ReFrame detected it on the node, reduced to the CPUs a job gets there.
"""

from __future__ import annotations

import pprint
import re
from dataclasses import dataclass, field

from sentinel.mpi.thread_levels import processor_gaps
from sentinel.site.init.jobs import Job
from sentinel.site.init.scheduler import Partition
from sentinel.site.names import environment_name
from sentinel.site.slurm import SRUN_KILL, SRUN_PMI, job_processor, own_launcher, whole_nodes


@dataclass
class Site:
    """The configuration being written and what could not be decided."""

    name: str
    kind: str
    accounting: bool = True
    partitions: list[dict] = field(default_factory=list)
    environments: list[dict] = field(default_factory=list)
    found: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    modules_system: str = "nomod"


def _launch(site: Site, stack: dict, launch: dict, where: str) -> tuple[list[str], list, str]:
    """The srun options and variables of a stack on a partition; why it cannot run, or ""."""
    if site.kind != "slurm":
        return [], [], ""
    plugins = launch.get("pmi", [])
    pmi = next((p for p in SRUN_PMI[stack["family"]] if p in plugins), None)
    if pmi is None:
        return [], [], (f"{stack['family']} {stack['version']} not on {where}: srun offers "
                        f"none of {', '.join(SRUN_PMI[stack['family']])} (srun --mpi=list: "
                        f"{', '.join(plugins) or 'nothing'})")
    env_vars = []
    if stack["family"] == "intelmpi":
        if not launch.get("pmi2_library"):
            return [], [], (f"intelmpi {stack['version']} not on {where}: Slurm's PMI-2 "
                            "library libpmi2.so is not on the node (Debian: libpmi2-0)")
        env_vars.append(["I_MPI_PMI_LIBRARY", launch["pmi2_library"]])
    return [f"--mpi={pmi}", SRUN_KILL], env_vars, ""


def _environment(site: Site, stack: dict, report: dict, where: str) -> dict | str:
    whole = whole_nodes(report.get("processor", {}), len(report.get("job_cpus", [])))
    own = own_launcher(stack["family"], stack["version"], whole) if site.kind == "slurm" \
        else None
    options, env_vars, why = ([], [], "") if own else \
        _launch(site, stack, report.get("launch", {}), where)
    if why:
        return why
    # Debian's suffixed MPIs reach their launcher through the suite's wrappers
    wrapped = stack["source"] == "path" and "/config/launchers/" in stack["launcher_dir"]
    env_vars = [*([["PATH", f"{stack['launcher_dir']}:$PATH"]] if wrapped else []),
                *([k, v] for k, v in stack.get("env_vars", {}).items()), *env_vars]
    extras: dict = {"mpi_family": stack["family"], "mpi_version": stack["version"],
                    "found_through": stack["source"] + (
                        f" {' '.join(stack['modules'])}" if stack["modules"] else "")}
    if options:
        extras["launcher_options"] = options
    if own:
        extras["launcher"] = own
    if stack.get("benchmark_dirs"):
        extras["benchmark_dirs"] = stack["benchmark_dirs"]
    if stack.get("dropped"):
        extras["dropped_transports"] = "; ".join(stack["dropped"])
    return {"cc": stack["cc"], "cxx": stack.get("cxx", ""),
            "modules": list(stack["modules"]),
            "features": ["mpi", stack["family"], *stack["transports"],
                         *(["cuda"] if stack.get("cuda") else [])],
            "env_vars": env_vars, "extras": extras}


def _partition(site: Site, part: Partition, job: Job, report: dict) -> dict:
    processor, note = job_processor(report["processor"], len(report.get("job_cpus", [])))
    where = f"partition {part.name}" + (f" node {job.node}" if job.node else "")
    if note:
        site.undecided.append(f"{where}: {note}")
    gaps = processor_gaps(job.label, processor)
    if gaps:  # a node whose sysfs shows no NUMA domain (a VM, a container)
        site.undecided.append(gaps)
    slurm = site.kind == "slurm"
    gpus = report.get("gpus", 0) or job.shape.gpus
    nodes = len(part.types[job.shape])
    features = ["mpi", *(["gpu"] if gpus else []), *job.shape.features]
    access = ([f"--partition={part.name}", "--exclusive"] if slurm else [f"-q {part.name}"])
    if job.node:  # one shape of several: select it by its features when they tell it apart
        others = [s for s in part.types if s != job.shape]
        own = [f for f in job.shape.features if all(f not in s.features for s in others)]
        if own and slurm:
            access.append(f"--constraint={own[0]}")
        else:
            site.undecided.append(f"{where}: its node type ({job.shape.describe()}) is one of "
                                  f"{len(part.types)} in the partition and no feature tells "
                                  "it apart: jobs may land on another type")
    return {
        "name": job.label,
        "descr": f"{'Slurm partition' if slurm else 'PBS queue'} {part.name}: {nodes} node(s) "
                 f"x {job.shape.describe()}",
        "scheduler": ("slurm" if site.accounting else "squeue") if slurm else "pbspro",
        "launcher": "srun" if slurm else "mpirun",
        "access": access,
        "environs": [],
        "features": features,
        "extras": {"num_nodes": nodes},
        "processor": processor,
        **({"devices": [{"type": "gpu", "num_devices": gpus}]} if gpus else {}),
        "max_jobs": 8,
    }


def build(site: Site, parts: list[Partition], reports: dict[str, tuple[Job, dict]]) -> Site:
    """Fill ``site`` with a partition per discovered node type and an environment per MPI."""
    by_name = {p.name: p for p in parts}
    taken: dict[str, tuple] = {}
    envs: dict[str, dict] = {}
    for label, (job, report) in reports.items():
        part = by_name[job.partition]
        entry = _partition(site, part, job, report)
        target = f"{site.name}:{label}"
        for problem in report.get("problems", []):
            site.undecided.append(f"partition {label}: {problem}")
        for stack in report.get("stacks", []):
            env = _environment(site, stack, report, f"partition {label}")
            if isinstance(env, str):
                site.undecided.append(env)
                continue
            name = environment_name(stack["family"], stack["version"],
                                    (stack["family"], stack["cc"]), taken)
            key = f"{name}\n{pprint.pformat(env)}"
            envs.setdefault(key, {"name": name, "target_systems": [], **env})
            envs[key]["target_systems"].append(target)
            entry["environs"].append(name)
            site.found.append(f"{label}: {stack['family']} {stack['version']} through "
                              f"{env['extras']['found_through']}: {', '.join(stack['transports'])}")
        if report.get("modules_system", "nomod") != "nomod" and any(
                e["modules"] for e in envs.values()):
            site.modules_system = report["modules_system"]
        if not entry["environs"]:
            site.undecided.append(f"partition {label}: no MPI found on node "
                                  f"{report.get('slurm_node') or report.get('hostname')}: "
                                  "left out (load your MPI module in the shell that runs "
                                  "sentinel init, or check MODULEPATH)")
            continue
        site.partitions.append(entry)
    site.environments = _targets(site, list(envs.values()))
    return site


def _targets(site: Site, envs: list[dict]) -> list[dict]:
    """Each environment for the whole system where it is the same on every partition.

    One that differs between partitions keeps its per-partition entries and,
    after them, its first as the system's: ReFrame (4.10) selects the
    system's environments for ``--system SITE:PART`` too, and finds none
    defined for the partitions alone (reframe-hpc/reframe#1453); each
    partition still gets its own entry, the first that names it.
    """
    written = {f"{site.name}:{p['name']}" for p in site.partitions}
    out, fallback = [], {}
    for env in envs:
        env["target_systems"] = [t for t in env["target_systems"] if t in written]
        if not env["target_systems"]:
            continue
        shared = sum(1 for e in envs if e["name"] == env["name"]) == 1
        if shared and set(env["target_systems"]) == written:
            env["target_systems"] = [site.name]
        else:
            fallback.setdefault(env["name"], {**env, "target_systems": [site.name]})
        out.append(env)
    return out + list(fallback.values())


def render(site: Site, when: str, command: str, host: str) -> str:
    """The configuration file's text; ``host``: the login nodes' ``hostnames`` pattern."""
    found = "\n".join(f"* {f}" for f in site.found) or "* nothing"
    undecided = "\n".join(f"* {u}" for u in site.undecided) or "* nothing"
    marker = {"lmod": "LMOD_CMD"}.get(site.modules_system, "MODULESHOME")
    modules = ('"nomod"' if site.modules_system == "nomod" else
               f'"{site.modules_system}" if os.environ.get("{marker}") else "nomod"')
    pinned = site.kind == "slurm"
    partitions, cores = _with_core_calls(site.partitions)
    text = f'''"""{site.name}: written by ``sentinel init`` on {when}; discovered, not typed.

    {command}

Found (partition: MPI, how it is reached, the transports it offers there):

{found}

Not decided, or not written (edit below, or fix and run sentinel init again with --force):

{undecided}

Off the cluster (a laptop, CI) there is no module system and the module
loads are left out of the generated scripts.
"""

import os
{_PINNED_IMPORTS if pinned else ""}

_MODULES_SYSTEM = {modules}

{_ONE_CPU_EACH if cores else ""}
system = {_data({"name": site.name, "descr": f"{site.name} (sentinel init)",
                 "hostnames": [host], "modules_system": "@MODULES@",
                 "partitions": partitions})}

environments = {_data(site.environments)}
{_PINNED if pinned else ""}'''.replace("'@MODULES@'", "_MODULES_SYSTEM")
    return re.sub(r"'@CORES(\d+)@'", r"_one_cpu_each(\1)", text)


def _data(value: object) -> str:
    return pprint.pformat(value, sort_dicts=False, width=96, compact=True)


def _with_core_calls(partitions: list[dict]) -> tuple[list[dict], bool]:
    """The partitions, each one-CPU-a-core mask list a marker the text turns into a call.

    A node of 128 cores would otherwise write 128 masks; a node whose cores
    have several hardware threads keeps its list.
    """
    out, used = [], False
    for part in partitions:
        topo = part.get("processor", {}).get("topology", {})
        cores = topo.get("cores") or []
        if cores and cores == [hex(1 << c) for c in range(len(cores))]:
            topo = {**topo, "cores": f"@CORES{len(cores)}@"}
            part = {**part, "processor": {**part["processor"], "topology": topo}}
            used = True
        out.append(part)
    return out, used


_ONE_CPU_EACH = '''

def _one_cpu_each(cpus: int) -> list[str]:
    """Core masks of a node whose core k is CPU k (one hardware thread each)."""
    return [hex(1 << c) for c in range(cpus)]
'''


_PINNED_IMPORTS = "from sentinel.rfm.compat.cmdline import pins_jobs_to_nodes"
#: A job pinned to a node (``--distribute``, the vet mode) waits while the
#: node is busy: Slurm calls that ReqNodeNotAvail, which is otherwise a node
#: down and cancels the job naming it.
_PINNED = '''
for _partition in system["partitions"]:
    # pinned jobs wait for a busy node; elsewhere ReqNodeNotAvail is a node down
    _partition["sched_options"] = {"ignore_reqnodenotavail": pins_jobs_to_nodes()}
'''
