"""OpenMP placement proof for the threaded checks, from their SENTINEL_THREAD lines."""

from __future__ import annotations

from collections.abc import Sequence

import reframe as rfm
from reframe.core.builtins import parameter, run_after, run_before, variable

from sentinel.errors import SentinelError
from sentinel.mpi.mappings import launcher_settings
from sentinel.mpi.placement import (
    RankPlacement,
    ThreadPlacement,
    Topology,
    parse_cpu_list,
    series_placement_problems,
    thread_problems,
)
from sentinel.mpi.thread_levels import (
    THREAD_LEVELS,
    TOPOLOGY_COMMAND,
    missing_keys,
    same_as_larger,
    thread_counts,
)
from sentinel.parsers.sentinel_output import (
    BenchOutput,
    parse,
    require_complete,
    split_launches,
    unsupported,
)


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
    topology = (proc.num_cores, proc.num_sockets, proc.num_numa_nodes)
    key = missing_keys(*topology).get(test.threads)
    test.skip_if(key is not None,
                 f"threads={test.threads} needs the processor's {key}, which partition "
                 f"{part.fullname} does not set ({TOPOLOGY_COMMAND})")
    counts = thread_counts(*topology)
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


def node_splits(cores: int) -> list[tuple[int, int]]:
    """(ranks, threads) splits filling a node: 1 x C, 2 x C/2, ... C x 1.

    Ranks are the powers of two that divide the node's cores, and the cores.
    """
    ranks = [r for r in (1 << k for k in range(cores.bit_length())) if cores % r == 0]
    return [(r, cores // r) for r in sorted({*ranks, cores})]


class NodeSplits(rfm.RegressionTestPlugin):
    """One node, one launch per ranks x threads split of its cores (the largest rank count last).

    Each launch runs its own OMP_NUM_THREADS, its ranks bound to as many
    cores as they have threads; every rank and thread of every launch is
    proven where it was asked to run.
    """

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("mapping", "placement_options", "transport_info")

    rank_pair = False

    @run_after("setup")
    def plan_splits(self) -> None:
        """The splits of one node of the partition; the job holds the whole node."""
        part = self.current_partition
        self.skip_if(self.mapping != "core",
                     f"the splits fill one node: mapping core only, not {self.mapping}")
        self.splits = node_splits(part.processor.num_cpus or 1)
        self.skip_if(len(self.splits) < 2,
                     f"partition {part.fullname} has 1 CPU per node: no split to compare")
        self.num_tasks = self.num_tasks_per_node = self.splits[-1][0]
        self.num_cpus_per_task = self.num_threads = 1

    @run_before("run", always_last=True)
    def launch_splits(self) -> None:
        """One launch per split, each with its threads and its binding."""
        launcher = self.job.launcher
        base, rest = launcher.options[:len(self.placement_options)], \
            launcher.options[len(self.placement_options):]
        family = self.transport_info.family
        for ranks, threads in self.splits[:-1]:
            opts, env = launcher_settings(family, "core", launcher.registered_name, threads)
            launcher.options = [*opts, *rest]
            self.job.num_tasks, self.job.num_cpus_per_task = ranks, threads
            cmd = launcher.run_command(self.job)
            if launcher.registered_name == "srun":
                cmd += f" --ntasks={ranks} --cpus-per-task={threads}"
            env_words = " ".join(f"{k}={v}" for k, v in {**env,
                                                          "OMP_NUM_THREADS": threads}.items())
            self.prerun_cmds.append(f"env {env_words} {cmd} {self.executable} "
                                    f"{' '.join(self.executable_opts)}")
        launcher.options = [*base, *rest]
        self.job.num_tasks, self.job.num_cpus_per_task = self.num_tasks, 1

    def launches(self) -> int:
        """One launch per split."""
        return len(self.splits)

    def split_outputs(self, out: BenchOutput, stdout: str) -> dict[int, BenchOutput]:
        """One complete output per split, by its rank count."""
        return split_launches(out, stdout, [r for r, _ in self.splits])

    def verify_world(self, runs: dict[int, BenchOutput]) -> None:
        """Each launch's world: :meth:`split_outputs` found every split by its size."""

    def verify_placement(self, runs: dict[int, BenchOutput]) -> None:
        """Every rank on a core set of its own, every thread on a core of its own."""
        topo = partition_topology(self.current_partition)
        for ranks, threads in self.splits:
            run = runs[ranks]
            issues = series_placement_problems("core", ranks_of(run), ranks, topo, threads)
            issues += thread_problems(ranks_of(run), threads_of(run), threads, topo)
            if issues:
                raise SentinelError(f"{ranks} x {threads} launch: placement not honoured: "
                                    + "; ".join(issues))


def mode_and_threads(modes: Sequence[str]) -> type:
    """The ``mode`` (one of ``modes``) and ``threads`` parameters of a threaded check.

    A check lists the class last among its bases: a parameter's place in a
    test's name follows its declaration (the bases' first, in their order,
    then the class's own), and the names are the history's keys
    (``%transport=... %mapping=... %mode=... %threads=...``).
    """

    class ModeAndThreads(rfm.RegressionTestPlugin):
        #: How MPI is called from the threads (the check's modes).
        #:
        #: :type: :class:`str`
        mode = parameter(list(modes), loggable=True)

        #: OpenMP threads per rank, each on its own core, by what they fill:
        #: ``one`` core, a ``numa`` domain, a ``socket``, a ``node``.
        #:
        #: :type: :class:`str`
        threads = parameter(list(THREAD_LEVELS), loggable=True)

    return ModeAndThreads


class ThreadedRanks(rfm.RegressionTestPlugin):
    """Ranks of ``threads`` OpenMP threads, bound one per core, each thread's core verified.

    The check takes its ``threads`` parameter (:data:`THREAD_LEVELS`) from
    :func:`mode_and_threads`.
    """

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("bench",)

    #: The number of threads per rank ``threads`` is on this partition.
    #:
    #: :type: :class:`int`
    #: :default: ``0`` (set at setup)
    num_threads = variable(int, value=0, loggable=True)

    def cores_per_rank(self) -> int:
        """A core per thread: the ``threads`` level on this partition."""
        if not self.num_threads:
            resolve_threads(self)
        return self.num_threads

    @run_before("run")
    def bind_omp_threads(self) -> None:
        """OpenMP threads bound one per core."""
        bind_threads(self)

    def read_output(self) -> BenchOutput:
        """Complete output; a skip when the library lacks the mode's thread level."""
        self.stdout_path, out = threaded_output(self, self.bench)
        require_complete(out, self.stdout_path)
        return out

    def verify_placement(self, out: BenchOutput | dict[int, BenchOutput]) -> None:
        """Every rank where the mapping puts it, every thread on a core of its own.

        ``out`` is one launch's records, or a rank series' launches by their N.
        """
        super().verify_placement(out)
        for n, run in (out.items() if isinstance(out, dict) else [(0, out)]):
            verify_threads(self, run, f"{n}-rank launch: " if n else "")
