"""OpenMP placement proof for the threaded checks, from their SENTINEL_THREAD lines."""

from __future__ import annotations

from sentinel.errors import SentinelError
from sentinel.mpi.placement import (
    RankPlacement,
    ThreadPlacement,
    Topology,
    parse_cpu_list,
    same_as_larger,
    thread_counts,
    thread_problems,
)
from sentinel.parsers.sentinel_output import BenchOutput, parse, unsupported


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


def resolve_threads(test) -> None:
    """``test.num_threads`` from its ``threads`` level and its partition's topology.

    A level with the same count as a larger one (a NUMA domain that is the
    whole socket) is skipped: the larger level measures it.
    """
    if test.threads == "one":
        test.num_threads = 1
        return
    part = test.current_partition
    proc = part.processor
    counts = thread_counts(proc.num_cores, proc.num_sockets, proc.num_numa_nodes,
                           f"partition {part.fullname}")
    same = same_as_larger(test.threads, counts)
    test.skip_if(same is not None,
                 f"threads={test.threads} is {counts[test.threads]} core(s) on partition "
                 f"{part.fullname}, as threads={same}: measured there")
    test.num_threads = counts[test.threads]


def verify_threads(test, out: BenchOutput, what: str = "") -> None:
    """Raise unless every rank ran ``test.num_threads`` threads, one per core."""
    issues = thread_problems(ranks_of(out), threads_of(out), test.num_threads,
                             partition_topology(test.current_partition))
    if issues:
        raise SentinelError(f"{what}OpenMP placement ({test.num_threads} thread(s) per rank, "
                            "OMP_PLACES=cores, OMP_PROC_BIND=close) not honoured: "
                            + "; ".join(issues))


def bind_threads(test) -> None:
    """``test.num_threads`` OpenMP threads per rank, one per core next to the master's.

    Open MPI's mpirun forwards only variables it is told about (``-x``).
    """
    omp = {"OMP_NUM_THREADS": str(test.num_threads), "OMP_PLACES": "cores",
           "OMP_PROC_BIND": "close"}
    test.env_vars.update(omp)
    if test.transport_info.family == "openmpi" and \
            test.job.launcher.registered_name in ("mpirun", "mpiexec"):
        test.job.launcher.options += [x for var in sorted(omp) for x in ("-x", var)]


def threaded_output(test, bench: str) -> tuple[str, BenchOutput]:
    """The job's stdout path and records, or a skip of ``test``.

    The skip says which thread level the mode needs and which the library
    provides, as the benchmark reported them.
    """
    stdout, text = test.stdout_text()
    out = parse(text, bench)
    why = unsupported(out)
    if why:
        test.skip(why)
    return stdout, out
