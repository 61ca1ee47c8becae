"""Congestion: what congestors on the partition's other nodes do to a victim's latency tail.

Runs ``src/bench/congestion`` with one rank on each of ``nodes`` nodes of the
partition (0: all of them, as GPCNeT is meant to run): a fifth of them (at
least two, ``victims``) measure, the others congest. For each congestor
pattern (``alltoall`` among the congestors, ``incast`` of all of them into
one, ``bcast`` from one to all), ``repetitions`` times, the victims measure
quiet (the congestors wait) and loaded (the congestors run the pattern from
before the victims start until after they end): 8-byte round trips on every
victim pair at once, pooled, their 50th and 99th percentiles, and a stream
on each pair. It reports, per pattern:

* the victims' latency percentiles and bandwidth, quiet and loaded (the
  medians of the repetitions with their intervals);
* the congestion impact of each: loaded over quiet (latency) or quiet over
  loaded (bandwidth), the median of the repetitions' own ratios with its
  interval: 1 is none, GPCNeT's congestion impact factor (Chunduri et al.,
  2019);
* the bytes the congestors delivered per second while they ran.

A fabric that keeps its median and loses its tail under load (a switch
without congestion control, an oversubscribed uplink, a misconfigured
adaptive routing) shows in the impact on the 99th percentile, named by
pattern. The victims and the congestors are proven on nodes of their own
(each victim pair across two nodes), and a run whose congestors delivered
nothing measured no congestion and fails, saying so.

The variables are listed, from their declaration, on this check's page.
"""

import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, variable

from sentinel.analysis import congestion
from sentinel.analysis.variables import Values
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.scaling import SpanNodes


@selection.simple_test
class CongestionCheck(SpanNodes, TransportMappingTest, PartitionReferences):
    """A victim's latency percentiles and bandwidth, quiet and beside each congestor pattern."""

    #: The congestor patterns, each measured against the quiet victims.
    #:
    #: :type: :class:`List[str]`
    patterns = variable(typ.List[typ.Str["|".join(congestion.PATTERNS)]],
                        value=list(congestion.PATTERNS))

    #: Nodes the launch spans (:class:`SpanNodes`); 0: the whole partition.
    #:
    #: :type: :class:`int`
    nodes = 0

    #: Ranks (nodes) that measure, an even number; 0: a fifth of the nodes
    #: (at least two); the others congest (at least two).
    #:
    #: :type: :class:`int`
    victims = variable(int, value=0)

    #: Timed 8-byte round trips per victim pair and measurement (at least
    #: 100: the 99th percentile of fewer is their largest).
    #:
    #: :type: :class:`int`
    samples = variable(int, value=2000)

    #: Bytes of each victim stream message, and messages per stream.
    #:
    #: :type: :class:`int`
    size = variable(int, value=1048576)
    bw_iterations = variable(int, value=16)

    #: Bytes each congestor sends in one operation (the all-to-all's blocks
    #: split them among the congestors; a message of the incast; the
    #: broadcast), and operations per burst (the congestors check for the
    #: victims' stop between bursts).
    #:
    #: :type: :class:`int`
    congestor_size = variable(int, value=1048576)
    burst = variable(int, value=8)

    #: Quiet and loaded measurements per pattern, alternated (the medians,
    #: their intervals and the medians of the paired ratios are reported).
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=5)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "congestion"})
    spec = congestion.SPEC
    bench = "congestion"
    bench_options = ("patterns", "victims", "samples", "size", "bw_iterations",
                     "congestor_size", "burst", "repetitions")
    tags = {"congestion", "fabric", "nightly", "acceptance"}
    between_nodes = True
    #: It spans the partition: each case on its night of the week, never
    #: deferred beyond it by the nightly budget.
    rotates = True
    may_defer = False

    @run_after("setup")
    def needs_nodes(self) -> None:
        """One rank on each node, four nodes at least (two victims, two congestors)."""
        self.skip_if(self.mapping != "node",
                     f"victims and congestors on nodes of their own: mapping node only, "
                     f"not {self.mapping}")
        nodes = self.num_tasks // self.num_tasks_per_node
        self.skip_if(nodes < 4, f"2 victim and 2 congestor nodes at least; "
                                f"{nodes} of partition {self.current_partition.fullname}")

    def expected_variables(self) -> list[str]:
        """Every pattern's quiet and loaded figures, its impact and its congestors' rate."""
        return congestion.expected(self.patterns)

    def analyse(self, out: BenchOutput) -> Values:
        return congestion.values(out, self.stdout_text()[0], self.patterns)
