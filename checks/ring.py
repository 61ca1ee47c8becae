"""A ring of every rank, over a series of N, on every transport and rank mapping.

Runs ``src/bench/ring`` (the ring exercise of the Orfeo study, Banerjee
2022): each rank sends one message each way around a ring of all ranks,
``laps`` times; a lap is N hops. One test per transport and mapping runs the
series N = 1, 2, 4, ... up to what the partition (or ``max_nodes`` of it)
holds in one job, one launch per N: ``core`` fills each node's cores,
``node`` puts one rank on each node. Every rank's placement is proven for
every launch. It reports the time of a lap at each N and the line
``t = a + b N`` fitted over N >= 2 (a hop's time b, the offset a and the
fit's R^2); the variables are listed, from their declaration, on this
check's page.
"""


from reframe.core.builtins import fixture, variable

from sentinel.analysis import ring
from sentinel.analysis.variables import Values
from sentinel.parsers.sentinel_output import BenchOutput, parse
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.scaling import RankSeries


@selection.simple_test
class RingCheck(RankSeries, TransportMappingTest, PartitionReferences):
    """Time per lap of a ring of N ranks, N = 1, 2, 4, ..., over one transport and mapping."""

    #: Laps per repetition.
    #:
    #: :type: :class:`int`
    laps = variable(int, value=1000)

    #: Timed repetitions, each after a barrier; the median is reported.
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=5)

    #: Untimed laps before the repetitions.
    #:
    #: :type: :class:`int`
    warmup = variable(int, value=10)

    #: Message size in bytes (a multiple of 8).
    #:
    #: :type: :class:`int`
    size = variable(int, value=8)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "ring"})
    spec = ring.SPEC
    bench = "ring"
    bench_options = ("laps", "repetitions", "warmup", "size")
    tags = {"ring", "scaling", "nightly", "acceptance"}
    rotates = True

    def read_output(self) -> dict[int, BenchOutput]:
        """One complete output per launch of the series."""
        self.stdout_path, text = self.stdout_text()
        return self.split_series(parse(text, self.bench), self.stdout_path)

    def expected_variables(self) -> list[str]:
        """A lap time per N and the line over the series."""
        return [*(f"lap_N{n}" for n in self.series), "hop", "lap_offset", "lap_fit_r2"]

    def analyse(self, runs: dict[int, BenchOutput]) -> Values:
        return ring.values(runs, self.stdout_path)
