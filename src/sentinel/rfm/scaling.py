"""A series of launches N = 1, 2, 4, ... in one job: the checks that scale with ranks.

:class:`RankSeries` plans the series from the partition (its nodes, the
cores a rank takes, ``max_ranks``, ``max_nodes``), puts one launch per N in
the job (the largest as the main command), splits the output by launch and
proves every rank's placement in each: ranks per node as the mapping asks,
nodes as the scheduler gave them, no two ranks on one core.
"""

from __future__ import annotations

import os

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable

from sentinel.analysis import jacobi
from sentinel.errors import SentinelError
from sentinel.mpi.placement import series_placement_problems
from sentinel.mpi.transports import declared, pairs_over
from sentinel.parsers.sentinel_output import BenchOutput, split_launches
from sentinel.rfm.placing import partition_nodes
from sentinel.rfm.threads import partition_topology, ranks_of


def powers_to(limit: int) -> list[int]:
    """1, 2, 4, ... up to ``limit``, and ``limit`` itself (at least 1)."""
    out = [1]
    while out[-1] * 2 <= limit:
        out.append(out[-1] * 2)
    if out[-1] != limit and limit > 1:
        out.append(limit)
    return out


def rank_series(per_node: int, nodes: int, limit: int = 0,
                whole_nodes: bool = False) -> list[int]:
    """N of a series on ``nodes`` nodes of ``per_node`` ranks.

    Within a node 1, 2, 4, ... ranks (left out with ``whole_nodes``), then
    full nodes: ``per_node`` x 1, 2, 4, ... nodes and all ``nodes`` when
    that is not a power of two. With ``limit``, the counts below it and
    ``limit`` itself.
    """
    counts = [] if whole_nodes else [n for n in powers_to(per_node) if n < per_node]
    counts += [per_node * k for k in powers_to(nodes)]
    if limit:
        counts = [n for n in counts if n < limit] + [limit]
    return counts


class RankSeries(rfm.RegressionTestPlugin):
    """N = 1, 2, 4, ... ranks, one launch each, in one job."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("mapping",)

    #: Largest N of the series; 0: as many ranks as the partition (or
    #: ``max_nodes`` of it) holds at the cores each rank takes.
    #:
    #: :type: :class:`int`
    max_ranks = variable(int, value=0)

    #: Most nodes the series spans; 0: all of the partition's. The nightly
    #: mode sets 2, acceptance runs the whole partition.
    #:
    #: :type: :class:`int`
    max_nodes = variable(int, value=0)

    #: Allow ``max_ranks`` beyond the partition's cores (ranks share cores).
    #:
    #: :type: :class:`bool`
    oversubscribe = variable(bool, value=False)

    #: Ranks on each node with mapping ``node`` (each with its own cores);
    #: 0: one. The series then counts whole nodes of that many ranks.
    #:
    #: :type: :class:`int`
    ranks_per_node = variable(int, value=0)

    #: Whether the series counts whole nodes only (1 and a full node of
    #: ranks per node x 1, 2, 4, ... nodes), not also 1, 2, 4, ... ranks
    #: within one node.
    whole_nodes: bool = False

    #: The fewest ranks the benchmark runs with (OSU's collectives: 2).
    min_ranks: int = 1

    #: Whether each N is a launch of its own; a benchmark that runs the
    #: series itself on prefixes of one world (IMB ``-npmin``) sets False.
    launch_per_count: bool = True

    rank_pair = False
    spans_nodes = True

    def mixes_levels(self) -> bool:
        """Ranks share a node unless one rank runs on each (mapping ``node``, one per node)."""
        return self.mapping != "node" or self.ranks_per_node > 1

    def cores_per_rank(self) -> int:
        """Cores each rank takes (its threads)."""
        return 1

    @run_after("setup")
    def plan_series(self) -> None:
        """The series' N, and the job's tasks and tasks per node for its largest."""
        part = self.current_partition
        nodes = node_span(self, self.max_nodes)
        cores = max((part.processor.num_cpus or 1) // self.cores_per_rank(), 1)
        per_node = (self.ranks_per_node or 1) if self.mapping == "node" else cores
        self.skip_if(not self.oversubscribe and per_node > cores,
                     f"ranks_per_node {per_node} x {self.cores_per_rank()} core(s) does not "
                     f"fit a node of partition {part.fullname} ({cores} ranks)")
        fits = per_node * nodes
        limit = self.asked_ranks() or fits
        self.skip_if(not self.oversubscribe and limit > fits,
                     f"max_ranks {limit} x {self.cores_per_rank()} core(s) does not fit "
                     f"partition {part.fullname} ({fits} ranks at mapping {self.mapping})")
        self.series = [n for n in rank_series(per_node, nodes, self.asked_ranks(),
                                              self.whole_nodes or self.mapping == "node")
                       if n >= self.min_ranks]
        self.skip_if(not self.series, f"the benchmark needs at least {self.min_ranks} ranks; "
                                      f"partition {part.fullname} holds {limit}")
        self.skip_if(self.mapping != "core" and len(self.series) < 2,
                     f"mapping {self.mapping} needs at least 2 ranks; partition "
                     f"{part.fullname} holds {limit}")
        self.num_tasks = self.series[-1]
        self.num_cpus_per_task = self.cores_per_rank()
        self.num_tasks_per_node = min(self.num_tasks, per_node)

    @run_before("run", always_last=True)
    def launch_series(self) -> None:
        """One launch per N, the largest as the job's main command."""
        self.job.num_cpus_per_task = self.cores_per_rank()
        for n in self.series[:-1] if self.launch_per_count else ():
            self.prerun_cmds += self.count_commands(n, self._launch(n))
        self.executable_opts = [*self.executable_opts, *self.launch_options(self.series[-1])]
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        self.prerun_cmds += self.before_largest(self.job.launcher.run_command(self.job))

    def _launch(self, n: int) -> str:
        """The launcher command for an n-rank step of this job."""
        self.job.num_tasks = n
        self.job.num_tasks_per_node = self.per_node_of(n)
        cmd = self.job.launcher.run_command(self.job)
        if self.job.launcher.registered_name == "srun":
            # A step smaller than the allocation: srun would spread it over
            # every node of the job, one rank each, whatever the mapping.
            nodes = -(-n // self.per_node_of(n))
            cmd += (f" --nodes={nodes} --ntasks={n} --ntasks-per-node={self.per_node_of(n)}"
                    f" --cpus-per-task={self.cores_per_rank()}")
        return cmd

    def launches(self) -> int:
        """One launch per N of the series (one in all where the benchmark runs the series)."""
        return len(self.series) if self.launch_per_count else 1

    def asked_ranks(self) -> int:
        """The largest N asked for (``max_ranks``); 0: what the partition holds."""
        return self.max_ranks

    def per_node_of(self, n: int) -> int:
        """Ranks per node of the n-rank launch."""
        return min(n, self.num_tasks_per_node)

    def count_commands(self, n: int, launch: str) -> list[str]:
        """The job's commands for the n-rank launch (``launch``: its launcher command)."""
        opts = [*self.executable_opts, *self.launch_options(n)]
        return [f"{launch} {self.executable} {' '.join(opts)}"]

    def before_largest(self, launch: str) -> list[str]:
        """Commands before the largest launch, the job's main command (none by default)."""
        return []

    def launch_options(self, n: int) -> list[str]:
        """Benchmark options of the n-rank launch only (none by default)."""
        return []

    def split_series(self, out: BenchOutput, stdout: str) -> dict[int, BenchOutput]:
        """One complete output per launch of the series; a missing one is an error."""
        return split_launches(out, stdout, self.series)

    def verify_world(self, runs: dict[int, BenchOutput]) -> None:
        """Each launch's world: :meth:`split_series` found every N by the size it reports."""

    def verify_transport(self, out) -> None:
        """The transport, unless the whole series is one rank (it talks to no one)."""
        if self.num_tasks > 1:
            super().verify_transport(out)

    def verify_placement(self, runs: dict[int, BenchOutput]) -> None:
        """Every rank of every launch where the mapping puts it."""
        topo = partition_topology(self.current_partition)
        for n, run in runs.items():
            issues = series_placement_problems(self.mapping, ranks_of(run),
                                               self.per_node_of(n), topo,
                                               self.cores_per_rank(), self.oversubscribe)
            if issues:
                raise SentinelError(f"{n}-rank launch: placement {self.mapping} not "
                                    "honoured: " + "; ".join(issues))


class SpanNodes(rfm.RegressionTestPlugin):
    """One launch over ``nodes`` nodes, filled as the mapping asks; every rank proven."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("mapping", "transport_info")

    #: Nodes the launch spans (at most the partition's; 0: all of them; the
    #: EPCC mixed-mode collectives ran on 4).
    #:
    #: :type: :class:`int`
    nodes = variable(int, value=4)

    rank_pair = False
    spans_nodes = True
    #: What the check measures is traffic between nodes: a shared-memory
    #: transport is not held to one node but skipped where a production pair
    #: over it is offered (the pair's on-node traffic is measured there).
    between_nodes = False

    def cores_per_rank(self) -> int:
        """Cores each rank takes (its threads)."""
        return 1

    @run_after("setup")
    def span_nodes(self) -> None:
        """Ranks: a full node's (``core``) or one (``node``) on each of the nodes."""
        part = self.current_partition
        if self.between_nodes:
            pairs = pairs_over(self.transport_info,
                               declared(set(self.current_environ.features)))
            self.skip_if(bool(pairs), f"{self.transport_info.name} carries no traffic between "
                                      f"nodes; its traffic within one is measured over "
                                      f"{', '.join(p.name for p in pairs)}")
        nodes = node_span(self, self.nodes)
        self.skip_if(self.mapping == "node" and nodes < 2,
                     f"mapping node needs 2 nodes; {nodes} of partition {part.fullname} asked")
        cores = max((part.processor.num_cpus or 1) // self.cores_per_rank(), 1)
        self.num_tasks_per_node = 1 if self.mapping == "node" else cores
        self.num_tasks = self.num_tasks_per_node * nodes
        self.num_cpus_per_task = self.cores_per_rank()
        # One rank sends nothing over any transport: there is nothing to verify.
        self.skip_if(self.num_tasks < 2,
                     f"1 rank: {nodes} node(s) of {part.processor.num_cpus or 1} cores, "
                     f"{self.cores_per_rank()} per rank, mapping {self.mapping}")

    def verify_placement(self, out: BenchOutput) -> None:
        """Every rank where the mapping puts it, the nodes as the scheduler gave them."""
        issues = series_placement_problems(self.mapping, ranks_of(out), self.num_tasks_per_node,
                                           partition_topology(self.current_partition),
                                           self.cores_per_rank(),
                                           bool(getattr(self, "oversubscribe", False)))
        if issues:
            raise SentinelError(f"placement {self.mapping} not honoured: " + "; ".join(issues))


def node_span(test, asked: int) -> int:
    """Nodes ``test``'s launches span: ``asked`` (0: all) of its partition's.

    One for a transport that cannot cross nodes, saying so in ``span_note``;
    a pair runs where ranks share nodes and span them.
    """
    part = test.current_partition
    nodes = min(asked or partition_nodes(part), partition_nodes(part))
    t = test.transport_info
    test.skip_if(bool(t.halves) and nodes < 2,
                 f"{t.name} differs from {t.halves[0]} only across nodes; "
                 f"{nodes} node(s) of partition {part.fullname} asked" if t.halves else "")
    if test.held_to_one_node and nodes > 1:
        test.span_note = (f"{t.name} carries traffic within a node only (shared memory): held "
                          f"to one node of the {nodes} asked; the production pairs cross nodes")
        return 1
    return nodes


def node_memory_bytes(partition) -> int | None:
    """A node's memory: ``extras['memory_per_node_gib']``, this host's for the local scheduler.

    None where neither says (the series then is not held to it).
    """
    declared = partition.extras.get("memory_per_node_gib")
    if declared is not None:
        try:
            gib = float(declared)
        except (TypeError, ValueError):
            gib = -1.0
        if isinstance(declared, bool) or not gib > 0:
            raise SentinelError(f"partition {partition.fullname}: extras['memory_per_node_gib'] "
                                f"is {declared!r}; expected a node's memory in GiB, above 0")
        return int(gib * 2**30)
    if partition.scheduler.registered_name == "local":
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return None


def limit_series_to_memory(test) -> None:
    """Drop the launches of a weak-scaling Jacobi series whose grids do not fit a node.

    Skips, naming the sizes, where not even one rank fits; a series cut
    short says so in ``span_note``.
    """
    if test.scaling != "weak" or not test.measures():
        return
    part = test.current_partition
    memory = node_memory_bytes(part)
    if memory is None:
        return
    fits = jacobi.fitting_series(test.series, test.num_tasks_per_node, test.cores_per_rank(),
                                 test.local_size, memory)
    per_core = jacobi.grid_bytes_per_core(test.local_size) / 1e9
    where = (f"L = {test.local_size} takes {per_core:.1f} GB a core; a node of partition "
             f"{part.fullname} has {memory / 2**30:.1f} GiB, {jacobi.MEMORY_SHARE:.0%} of it "
             "for the grids")
    test.skip_if(not fits, f"{where}: no launch fits (-S JacobiCheck.local_size to change L)")
    if fits != test.series:
        test.span_note = "; ".join(filter(None, [
            test.span_note, f"{where}: the series stops at N = {fits[-1]}"]))
        test.series = fits
        test.num_tasks = fits[-1]
        test.num_tasks_per_node = min(test.num_tasks, test.num_tasks_per_node)
