"""Rank mappings and the launcher and scheduler options that realise them.

``core``: two ranks on neighbouring cores of one socket; ``socket``: two
ranks on different sockets of one node; ``node``: one rank on each of two
nodes. Whether a run was placed as asked is :mod:`sentinel.mpi.placement`'s.
"""

from __future__ import annotations

from typing import Mapping

from sentinel.errors import SentinelError

MAPPINGS = ("core", "socket", "node")

_MPIRUN_STYLE = ("mpirun", "mpiexec", "local")

_OPTIONS: Mapping[tuple[str, str], tuple[list[str], dict[str, str]]] = {
    ("openmpi", "core"): (["--map-by", "core", "--bind-to", "core"], {}),
    ("openmpi", "socket"): (["--map-by", "socket", "--bind-to", "core"], {}),
    ("openmpi", "node"): (["--map-by", "node", "--bind-to", "core"], {}),
    ("mpich", "core"): (["-map-by", "core", "-bind-to", "core"], {}),
    ("mpich", "socket"): (["-map-by", "socket", "-bind-to", "core"], {}),
    ("mpich", "node"): (["-ppn", "1", "-bind-to", "core"], {}),
    ("intelmpi", "core"): ([], {"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "compact"}),
    ("intelmpi", "socket"): ([], {"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "scatter"}),
    ("intelmpi", "node"): (["-ppn", "1"], {"I_MPI_PIN_DOMAIN": "core"}),
}

_SRUN: Mapping[str, list[str]] = {
    "core": ["--cpu-bind=cores", "--distribution=block:block"],
    "socket": ["--cpu-bind=cores", "--distribution=block:cyclic"],
    "node": ["--cpu-bind=cores"],
}


#: PBS placement by mapping: ``node`` one chunk (of ``mpiprocs`` ranks) per
#: host, the others all chunks on one host; and every host the job's alone
#: (``excl``): a benchmark shares no node with another job.
_PBS_PLACE: Mapping[str, str] = {"core": "pack:excl", "socket": "pack:excl",
                                 "node": "scatter:excl"}


def scheduler_options(scheduler: str, mapping: str) -> list[str]:
    """Job options that realise ``mapping`` under a PBS Pro / OpenPBS or Torque scheduler.

    ReFrame writes ``-l select=<nodes>:mpiprocs=<ranks per node>:ncpus=..``
    for ``pbs``/``pbspro`` and ``-l nodes=<nodes>:ppn=..`` for ``torque``
    from the test's tasks; PBS then still may put two chunks on one host,
    ``place=scatter`` forbids it. Torque's ``nodes=N`` are N distinct hosts;
    ``-n`` asks for them exclusively. Other schedulers: none (Slurm's
    placement is the launcher's, its exclusivity the partition's access).
    """
    if mapping not in MAPPINGS:
        raise SentinelError(f"unknown mapping {mapping!r} (known: {', '.join(MAPPINGS)})")
    if scheduler in ("pbs", "pbspro"):
        return [f"-l place={_PBS_PLACE[mapping]}"]
    if scheduler == "torque":
        return ["-n"]
    return []


def tasks_per_node(mapping: str) -> int:
    """Ranks per node for a two-rank run under ``mapping``."""
    return 1 if mapping == "node" else 2


def launcher_settings(family: str, mapping: str, launcher: str, cores_per_rank: int = 1,
                      per_node: int = 1) -> tuple[list[str], dict[str, str]]:
    """Launcher options and environment variables that realise ``mapping``.

    With ``cores_per_rank`` > 1 (threaded ranks) each rank is bound to that
    many neighbouring cores; under srun the check sets ``num_cpus_per_task``.
    Mapping ``node`` puts ``per_node`` ranks on each node (under srun the
    job's ``--ntasks-per-node`` does).
    """
    opts, env = _launcher_settings(family, mapping, launcher, cores_per_rank)
    if mapping == "node" and per_node > 1:
        for i in range(1, len(opts)):
            if opts[i - 1] == "-ppn":
                opts[i] = str(per_node)
            elif opts[i - 1] == "--map-by":  # Open MPI: node[:PE=n] -> ppr:k:node[:PE=n]
                opts[i] = f"ppr:{per_node}:{opts[i]}"
    return opts, env


def _launcher_settings(family: str, mapping: str, launcher: str,
                       cores_per_rank: int) -> tuple[list[str], dict[str, str]]:
    if mapping not in MAPPINGS:
        raise SentinelError(f"unknown mapping {mapping!r} (known: {', '.join(MAPPINGS)})")
    if launcher == "srun":
        return list(_SRUN[mapping]), {}
    if launcher not in _MPIRUN_STYLE:
        raise SentinelError(
            f"no placement options for launcher {launcher!r}; "
            f"supported: srun, {', '.join(_MPIRUN_STYLE)}"
        )
    try:
        opts, env = _OPTIONS[(family, mapping)]
    except KeyError:
        raise SentinelError(f"no placement options for MPI family {family!r}") from None
    if cores_per_rank > 1:
        return _threaded(family, mapping, cores_per_rank)
    return list(opts), dict(env)


def _threaded(family: str, mapping: str, cores: int) -> tuple[list[str], dict[str, str]]:
    """Options binding each rank to ``cores`` neighbouring cores."""
    if family == "openmpi":  # Open MPI 4 refuses PE=n with --map-by core: map by slot
        level = "slot" if mapping == "core" else mapping
        return ["--map-by", f"{level}:PE={cores}", "--bind-to", "core"], {}
    # -ppn 1 below: launcher_settings puts the asked ranks per node there
    if family == "mpich":
        where = ["-ppn", "1"] if mapping == "node" else ["-map-by", mapping]
        return [*where, "-bind-to", f"core:{cores}"], {}
    order = {"core": "compact", "socket": "scatter", "node": "compact"}[mapping]
    opts = ["-ppn", "1"] if mapping == "node" else []
    return opts, {"I_MPI_PIN_DOMAIN": "omp", "I_MPI_PIN_ORDER": order}
