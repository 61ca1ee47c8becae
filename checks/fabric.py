"""Fabric health: every node pair of a partition, and the node or link that is slow.

``FabricCheck`` runs ``src/bench/fabric``, one test per mode. Its pairs mode, with one rank on
each node of the partition (or ``nodes`` of it): N - 1 matchings (sets
of node pairs that share no node) hold every pair once, each measured one
way and then the other, the pairs of a matching at once, so the whole
N x N matrix of bandwidth (``size`` bytes) and 8-byte latency costs
2 (N - 1) steps of one job, not N (N - 1) / 2 jobs
(``-S FabricCheck.rounds=neighbours``: the ring neighbours only, 4 steps,
for a quick nightly). The analysis
(:mod:`sentinel.analysis.fabric`) judges each node by the median of its
pairs against the partition's and names the outliers: a node whose pairs
are all slow (``node m2: bandwidth 20.3x below the partition median in 6
of 6 pairs``) and a pair slow while both its nodes are fine. Any outlier
fails the test with its name; the partition-level values are the
variables. The ``aggregate`` mode sums the bandwidth of k = 1 ... N/2
concurrent pairs (each k, and half the nodes in pairs), ``loaded``
compares a ping-pong on an idle fabric with the same while the other nodes
stream (and their ratio; 4 nodes at least), and ``patterns`` runs the
Queen's study's eight permutations and a random one (the MB/s each rank
accepts, on the node and off it), with any mapping. Each of those is the
median of ``repetitions`` measurements with their range.

A pair of the sweep is measured beside its step's other pairs; its suspect
links are then measured again alone (``confirm``), and one slow only beside
the others is listed as cleared (``link m3 <-> m6: bandwidth 2.6x below the
partition median beside the step's other pairs; 812 MB/s alone, within the
factor``), not named.
"""


import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, run_after, variable

from sentinel.analysis import fabric, fabric_modes, fabric_sweep
from sentinel.analysis.variables import Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.integrity import VerifiedPayloads
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.scaling import SpanNodes


@selection.simple_test
class FabricCheck(SpanNodes, TransportMappingTest, PartitionReferences, VerifiedPayloads):
    """Every node pair of the partition over one transport; the slow node or link named."""

    #: The benchmark's mode: ``pairs``, ``aggregate``, ``loaded``, ``patterns``.
    #:
    #: :type: :class:`str`
    mode = parameter(list(fabric.MODES), loggable=True)

    #: ``all``: every node pair; ``neighbours``: the ring neighbours i, i + 1 only.
    #:
    #: :type: :class:`str`
    rounds = variable(typ.Str[r"all|neighbours"], value="all", loggable=True)

    #: Bytes of each bandwidth message.
    #:
    #: :type: :class:`int`
    size = variable(int, value=1048576)

    #: Messages per bandwidth measurement, 8-byte messages per latency one.
    #:
    #: :type: :class:`int`
    iterations = variable(int, value=20)
    latency_iterations = variable(int, value=1000)

    #: Measurements of each figure: passes over the pairs sweep, or
    #: repetitions of each aggregate, loaded and pattern measurement. The
    #: median is reported, in the other modes with its range (coverage
    #: 1 - 2^(1-n): 75 % at 3, 93.75 % at 5).
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=3)

    #: Nodes swept (:class:`SpanNodes`); 0: the whole partition.
    #:
    #: :type: :class:`int`
    nodes = 0

    #: A node or pair is an outlier when its bandwidth is this many times
    #: below the partition median (its latency ``latency_factor`` times
    #: above) and, for a node, its robust z-score is at least ``outlier_z``
    #: (Iglewicz and Hoaglin's 3.5).
    #:
    #: :type: :class:`float`
    bw_factor = variable(float, value=2.0)
    latency_factor = variable(float, value=3.0)
    outlier_z = variable(float, value=3.5)

    #: The most suspect links the pairs sweep measures again alone, the
    #: other nodes idle: a link slow only beside the other pairs of its step
    #: (a shared path; on shared hosts, shared CPUs) is then cleared, not
    #: named (:attr:`cleared`). A link is suspect when it is past half the
    #: factor (in logs) of the partition's level and neither node is slow
    #: as a whole; each costs ``repetitions`` of one stream and one
    #: ping-pong. 0: none, every slow link named as measured.
    #:
    #: :type: :class:`int`
    confirm = variable(int, value=32)

    #: The sweep's pairs, for the report's heatmaps: JSON
    #: ``[[src, dst, MB/s, us], ...]`` by node name.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by sanity)
    fabric_pairs = variable(str, value="", loggable=True)

    #: The named outliers of the last sweep, one per line.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by sanity)
    outliers = variable(str, value="", loggable=True)

    #: Links slow in the sweep and within the factor alone, one per line,
    #: with both figures: listed, not failed.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by sanity)
    cleared = variable(str, value="", loggable=True)

    #: Pairs mode: untimed messages per directed pair of the sweep whose every
    #: byte is checked where it lands, after the sweep (0: none; at most
    #: ``iterations``). A wrong byte fails the test naming the link. The
    #: other modes' traffic crosses the same links and verifies none (the
    #: benchmark refuses ``--verify`` there; they are not given it).
    #:
    #: :type: :class:`int`
    verify = variable(int, value=0)

    #: ``S:D``: the benchmark corrupts one byte of the first verified message
    #: from rank S to rank D on purpose, the test of the verdict, never a
    #: site's setting (``none``).
    #:
    #: :type: :class:`str`
    corrupt_link = variable(typ.Str[r"none|\d+:\d+"], value="none")

    build = fixture(BenchBuild, scope="environment", variables={"bench": "fabric"})
    spec = fabric.SPEC
    bench = "fabric"
    bench_options = ("mode", "rounds", "size", "iterations", "latency_iterations",
                     "repetitions", "confirm", "bw_factor", "latency_factor", "verify",
                     "corrupt_link")
    tags = {"fabric", "nightly", "acceptance"}
    between_nodes = True
    #: A sweep spans the whole partition: it runs as often as the nightly
    #: budget allows (the least recently measured first), not every night.
    may_defer = True

    @run_after("init")
    def verify_the_pairs_sweep(self) -> None:
        """Payloads are verified over the pairs sweep's links; the other modes run none."""
        if self.mode != "pairs":
            self.bench_options = tuple(o for o in type(self).bench_options
                                       if o not in ("verify", "corrupt_link"))

    @run_after("setup")
    def needs_nodes(self) -> None:
        """One rank on each node but for the patterns mode; enough nodes for the mode."""
        self.skip_if(self.mode != "patterns" and self.mapping != "node",
                     f"mode {self.mode} puts one rank on each node: mapping node only, "
                     f"not {self.mapping}")
        nodes = self.num_tasks // self.num_tasks_per_node
        where = self.current_partition.fullname
        self.skip_if(self.mode in ("pairs", "aggregate") and nodes < 2,
                     f"mode {self.mode} needs 2 nodes; partition {where} has {nodes}")
        self.skip_if(self.mode == "loaded" and nodes < 4,
                     f"mode loaded needs 4 nodes (a ping-pong pair and a streaming pair); "
                     f"{nodes} of partition {where} swept")

    def analyse(self, out: BenchOutput) -> Values:
        """The mode's values; the pairs sweep's outliers named (they fail it)."""
        stdout = self.stdout_text()[0]
        if self.mode == "aggregate":
            return fabric_modes.aggregate_values(out, stdout)
        if self.mode == "loaded":
            return fabric_modes.loaded_values(out, stdout)
        if self.mode == "patterns":
            return fabric_modes.pattern_values(out, stdout)
        return self._pairs(out, stdout)

    def _pairs(self, out: BenchOutput, stdout: str) -> Values:
        self.require_intact(out, [self.size], self.verify * len(out.of("FABRIC_PAIR")))
        pairs = fabric_sweep.pairs_of(out, stdout)
        alone = fabric_sweep.alone_of(out, stdout)
        self.fabric_pairs = fabric_sweep.pairs_json(pairs)
        bw = fabric.judge(pairs, True, self.bw_factor, self.outlier_z, alone)
        latency = fabric.judge(pairs, False, self.latency_factor, self.outlier_z, alone)
        found = fabric.findings(bw, latency)
        self.outliers = "\n".join(found)
        self.cleared = "\n".join(fabric.cleared(bw, latency))
        if found:
            raise SentinelError("; ".join(found))
        return fabric.values(pairs, bw, latency)
