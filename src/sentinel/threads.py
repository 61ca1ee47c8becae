"""OpenMP placement proof for the threaded checks, from their SENTINEL_THREAD lines."""

from __future__ import annotations

from sentinel.errors import SentinelError
from sentinel.mpi.placement import (
    RankPlacement,
    ThreadPlacement,
    Topology,
    parse_cpu_list,
    thread_problems,
)
from sentinel.parsers.sentinel_output import BenchOutput


def partition_topology(partition) -> Topology | None:
    """The partition's core and socket masks, when its config has them."""
    topo = partition.processor.topology
    if topo and topo.get("cores") and topo.get("sockets"):
        return Topology.from_masks(topo["cores"], topo["sockets"])
    return None


def ranks_of(out: BenchOutput) -> list[RankPlacement]:
    """Every SENTINEL_AFFINITY line."""
    return [RankPlacement(r.integer("rank"), r.text("host"), parse_cpu_list(r.text("cpus")))
            for r in out.of("AFFINITY")]


def threads_of(out: BenchOutput) -> list[ThreadPlacement]:
    """Every SENTINEL_THREAD line."""
    return [ThreadPlacement(r.integer("rank"), r.integer("thread"), r.integer("cpu"),
                            parse_cpu_list(r.text("cpus"))) for r in out.of("THREAD")]


def verify_threads(test, out: BenchOutput, what: str = "") -> None:
    """Raise unless every rank ran ``test.threads`` threads, one per core."""
    issues = thread_problems(ranks_of(out), threads_of(out), test.threads,
                             partition_topology(test.current_partition))
    if issues:
        raise SentinelError(f"{what}OpenMP placement ({test.threads} thread(s) per rank, "
                            "OMP_PLACES=cores, OMP_PROC_BIND=close) not honoured: "
                            + "; ".join(issues))
