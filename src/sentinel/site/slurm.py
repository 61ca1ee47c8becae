"""What a Slurm controller has: its partitions, node CPUs and PMI-2 client library.

Read with short, time-limited commands (``scontrol``, ``sinfo``, ``ldconfig``)
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
