"""What a Slurm controller has: its partitions, node CPUs and PMI-2 client library.

Read with short, time-limited commands (``scontrol``, ``ldconfig``)
at configuration load, and by ``sentinel init``.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from sentinel.site.detect import run_command as _run


@dataclass(frozen=True)
class SlurmPartition:
    """A Slurm partition: its node count and the CPUs a job gets on its smallest node."""

    name: str
    nodes: int
    cpus_per_node: int


#: How ``srun`` starts each MPI family, by preference: Open MPI through PMIx
#: where Slurm has it, MPICH and Intel MPI (with Slurm's ``libpmi2``,
#: ``I_MPI_PMI_LIBRARY``) through PMI-2; without PMI-2 MPICH starts singletons.
SRUN_PMI = {"openmpi": ("pmix", "pmi2"), "mpich": ("pmi2", "pmix"), "intelmpi": ("pmi2",)}
#: A rank that dies ends its launch at once: without it the others wait for
#: it in MPI until Slurm cancels the job at its time limit.
SRUN_KILL = "--kill-on-bad-exit=1"
#: MPIs started by their own launcher inside the Slurm allocation instead of
#: ``srun`` (family and major version: the launcher, environment extra
#: ``launcher``). Measured on this project's rig with Slurm 22.05
#: (docs/slurm.md): under ``srun --mpi=pmix`` Open MPI 5.0's ob1 takes a
#: message before ``MPI_COMM_WORLD`` is set up and crashes in ``MPI_Init``
#: (open-mpi/ompi#11438; 4 of 82 launches, the suite's collectives job 4 of
#: 4), under its ``mpirun`` (PRRTE's daemons started by Slurm) 0 of 52; under
#: ``srun --mpi=pmi2`` Slurm's PMI server splits MPICH 5's long PMI-1 puts
#: (its collectives job 3 of 3), which Hydra's ``mpiexec`` serves itself.
OWN_LAUNCHER = {("openmpi", "5"): "mpirun", ("mpich", "5"): "mpiexec"}


def own_launcher(family: str, version: str, whole: bool) -> str | None:
    """The launcher an MPI runs with inside a Slurm allocation instead of srun (None: srun).

    Only where a job gets its nodes whole (``whole``: :func:`whole_nodes`): the MPI's
    launcher binds ranks by the node's topology, and where Slurm gives a
    job some of a node's CPUs (``CpuSpecList``, a shared node under
    ``task/affinity``) it bound them to CPUs that were not the job's (the
    test cluster's one-CPU nodes: both ranks on CPU 0, Slurm had given the
    second node's job CPU 1); ``srun`` binds within the job's CPUs.
    """
    return OWN_LAUNCHER.get((family, version.split(".")[0])) if whole else None


def whole_nodes(processor: dict, usable: int) -> bool:
    """Whether a job that gets ``usable`` CPUs of a node with ``processor`` gets all of them."""
    return not usable or usable >= processor.get("num_cpus", 0)


def scontrol_fields(line: str) -> dict[str, str]:
    """The ``Key=value`` fields of one line of ``scontrol -o show ...``."""
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


def job_processor(processor: dict, usable: int) -> tuple[dict, str]:
    """A node's processor as a job that gets ``usable`` of its CPUs sees it; a note when fewer.

    A job that gets every CPU sees the node as detected (without the caches,
    which nothing in the suite reads). One that gets fewer (CPUs reserved for
    the system: ``CpuSpecList``) is described with that many CPUs in one
    socket and one NUMA domain, keeping the node's core and socket masks so
    that placement is still checked against real CPU ids.
    """
    topo = {k: v for k, v in processor.get("topology", {}).items() if k != "caches"}
    processor = {**processor, "topology": topo}
    total = processor.get("num_cpus", 0)
    if whole_nodes(processor, usable):
        return processor, ""
    reduced = {**processor, "num_cpus": usable, "num_cpus_per_core": 1,
               "num_cpus_per_socket": usable, "num_sockets": 1,
               "topology": {**topo, "numa_nodes": [hex((1 << usable) - 1)]}}
    return reduced, (f"jobs get {usable} of its {total} CPUs (the others are reserved): "
                     f"described as {usable} CPU(s) in one socket and one NUMA domain")


def node_records(text: str) -> list[dict[str, str]]:
    """Each node's fields, from ``scontrol -o show nodes`` (a line a node)."""
    return [f for f in map(scontrol_fields, text.splitlines()) if "NodeName" in f]


def job_cpus(node: dict[str, str]) -> int:
    """CPUs a job can use on ``node`` (0 when not said).

    ``CPUEfctv`` (Slurm 22.05+) leaves out the CPUs reserved by core
    specialisation (``CpuSpecList``); older Slurm reports ``CPUTot`` only.
    """
    count = node.get("CPUEfctv", node.get("CPUTot", ""))
    return int(count) if count.isdigit() else 0


def members(nodes: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """The nodes of each partition, by the partitions each node names, in first-seen order."""
    out: dict[str, list[dict[str, str]]] = {}
    for node in nodes:
        for name in filter(None, node.get("Partitions", "").split(",")):
            out.setdefault(name, []).append(node)
    return out


def parse_partitions(text: str) -> list[SlurmPartition]:
    """Partitions, their node counts and the CPUs a job gets on their smallest node."""
    found = members([n for n in node_records(text) if job_cpus(n)])
    return [SlurmPartition(name, len(nodes), min(job_cpus(n) for n in nodes))
            for name, nodes in found.items()]


def slurm() -> list[SlurmPartition]:
    """The partitions of a Slurm controller that answers, else none.

    Detected, not assumed: ``scontrol ping`` must report the controller UP
    (``SLURM_CONF`` selects the cluster as for any Slurm command).
    """
    scontrol = shutil.which("scontrol")
    if not scontrol:
        return []
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):
        return []  # Slurm would retry reading it for 60 s before giving up
    rc, out = _run([scontrol, "ping"])
    if rc != 0 or " is UP" not in out:
        return []
    rc, nodes = _run([scontrol, "-o", "show", "nodes"])
    return parse_partitions(nodes) if rc == 0 else []


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
