"""Mixed-mode (MPI + OpenMP) micro-benchmarks over every transport and mapping.

EPCC's mixed-mode set (PRACE D7.4.2): barrier, halo exchange, ping-pong and ping-ping with
each rank running ``threads`` OpenMP threads, in the ``serial`` (master
only, outside parallel regions), ``funnelled`` (master inside the region)
and ``multiple`` (every thread communicates) modes. Sizes double from
``min_size`` to ``max_size`` 4-byte elements per thread; each size is timed
for ``target_time`` seconds in all, over ``repetitions`` runs
(:class:`~sentinel.rfm.timing.TimedPoints`: the median, with the interval of
the median). Each benchmark reports seconds per iteration, per size in
bytes of the whole message (all threads' parts).

``HybridCollectivesCheck`` runs EPCC's mixed-mode collectives (reduce,
allreduce, bcast, scatter, gather, alltoall of 4-byte integers, root 0) in
the same modes across ``nodes`` nodes (EPCC ran 4): ``core`` fills each node
with ranks of ``threads`` cores, ``node`` puts one rank on each. Each
collective reports seconds per call, per size in bytes of one rank's part
(all its threads'). In the multiple mode every thread calls the collective with
its own part on its own duplicate of the world communicator.

``BarrierSplitCheck`` times the barrier of one whole node over every ranks
x threads split of its C cores, 1 x C, 2 x C/2, ... C x 1 (EPCC's barrier
on one node; ranks are the powers of two dividing C, and C), one launch per
split in one job, every rank and thread of each placed, one value per split.

The multiple mode needs MPI_THREAD_MULTIPLE: where the library provides
less, the test is skipped with the level it provides.
"""


import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, run_after, run_before, variable

from sentinel.analysis import hybrid
from sentinel.analysis.variables import Values
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.placing import ranks_per_node
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.scaling import SpanNodes
from sentinel.rfm.threads import (
    NodeSplits,
    ThreadedRanks,
    bind_threads,
    mode_and_threads,
    resolve_threads,
    threaded_output,
)
from sentinel.rfm.timing import TimedPoints

#: ``mode``: who calls MPI (``serial``, ``funnelled`` or ``multiple``);
#: ``threads``: OpenMP threads per rank, by what they fill.
HybridModes = mode_and_threads(hybrid.MODES)


@selection.simple_test
class HybridCheck(TimedPoints, ThreadedRanks, TransportMappingTest, PartitionReferences,
                  HybridModes):
    """The mixed-mode micro-benchmarks in one mode, two ranks, one transport and mapping."""

    #: Benchmarks to run.
    #:
    #: :type: :class:`List[str]`
    benchmarks = variable(typ.List[typ.Str["|".join(hybrid.BENCHMARKS)]],
                          value=list(hybrid.BENCHMARKS))

    #: Smallest and largest message, 4-byte elements per thread.
    #:
    #: :type: :class:`int`
    min_size = variable(int, value=1)
    max_size = variable(int, value=4194304)

    #: Allow 2 x ``threads`` beyond a node's cores.
    #:
    #: :type: :class:`bool`
    oversubscribe = variable(bool, value=False)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "hybrid"})
    spec = hybrid.SPEC
    bench = "hybrid"
    bench_options = ("mode", "benchmarks", "min_size", "max_size", "target_time", "repetitions")
    tags = {"hybrid", "nightly", "acceptance"}
    rotates = True

    @run_after("setup")
    def fit_node(self) -> None:
        """Threads from the topology, one core each; skip what a node cannot hold."""
        resolve_threads(self)
        self.num_cpus_per_task = self.num_threads
        part = self.current_partition
        cores = part.processor.num_cpus or 1
        per_node = ranks_per_node(self)
        self.skip_if(not self.oversubscribe and per_node * self.num_threads > cores,
                     f"{per_node} rank(s) x {self.num_threads} threads per node; partition "
                     f"{part.fullname} has {cores} cores per node")

    def analyse(self, out: BenchOutput) -> Values:
        return hybrid.values(out, self.stdout_path, self.benchmarks)


@selection.simple_test
class HybridCollectivesCheck(TimedPoints, ThreadedRanks, SpanNodes, TransportMappingTest,
                             PartitionReferences, HybridModes):
    """The mixed-mode collectives in one mode across ``nodes`` nodes, one transport and mapping."""

    #: Collectives to run.
    #:
    #: :type: :class:`List[str]`
    benchmarks = variable(typ.List[typ.Str["|".join(hybrid.COLLECTIVES)]],
                          value=list(hybrid.COLLECTIVES))

    #: Smallest and largest part of each thread, 4-byte elements (EPCC: up to 262144).
    #:
    #: :type: :class:`int`
    min_size = variable(int, value=1)
    max_collective = variable(int, value=262144)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "hybrid"})
    spec = hybrid.COLLECTIVES_SPEC
    bench = "hybrid"
    bench_options = ("mode", "benchmarks", "min_size", "max_collective", "target_time",
                     "repetitions")
    tags = {"hybrid", "collectives", "scaling", "nightly", "acceptance"}
    rotates = True

    def analyse(self, out: BenchOutput) -> Values:
        return hybrid.values(out, self.stdout_path, self.benchmarks, self.spec)


@selection.simple_test
class BarrierSplitCheck(TimedPoints, NodeSplits, TransportMappingTest, PartitionReferences):
    """The whole node's barrier at every ranks x threads split, in one mode, one transport."""

    #: Who calls MPI: ``serial``, ``funnelled`` or ``multiple``.
    #:
    #: :type: :class:`str`
    mode = parameter(list(hybrid.MODES), loggable=True)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "hybrid"})
    spec = hybrid.SPLITS_SPEC
    bench = "hybrid"
    bench_options = ("mode", "target_time", "repetitions")
    tags = {"hybrid", "nightly", "acceptance"}
    rotates = True

    @run_before("run")
    def barrier_only(self) -> None:
        """The barrier alone; the last launch (C x 1) with one thread a rank."""
        self.executable_opts += ["--benchmarks", "barrier"]
        bind_threads(self)

    def read_output(self) -> dict[int, BenchOutput]:
        """One complete output per split (a skip without the mode's thread level)."""
        self.stdout_path, out = threaded_output(self, "hybrid")
        return self.split_outputs(out, self.stdout_path)

    def analyse(self, runs: dict[int, BenchOutput]) -> Values:
        return hybrid.split_values(runs, self.stdout_path)
