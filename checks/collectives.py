"""Collectives from one node to the whole partition (IMB-MPI1 over a process-count series).

One test per transport and mapping runs IMB-MPI1 once over the series of
whole nodes: ``core`` fills every node (P = a full node x 1, 2, 4, ...
nodes, and the whole partition, or ``max_nodes`` of it), ``node`` puts one
rank on each (P = 1, 2, 4, ... nodes). IMB measures each P on the first P
ranks (``-npmin``), and the affinity probe of the same launch proves where
every rank ran and that the first P ranks span exactly their nodes.
The operations are those of the Queen's interconnect study (Lyons 2005):
barrier, bcast, scatter, gather, alltoall, alltoallv, reduce, allreduce.

It reports IMB's ``t_avg`` per call for each operation, size of ``sizes``
and process count (the variables are listed, from their declaration, on
this check's page). A count is part of a variable's name, so each has a
reference of its own in ``config/references/`` (the report draws latency
against P per size).

``OsuCollectivesCheck`` measures the same series with OSU, one test per
program (osu_barrier, osu_bcast, osu_scatter, osu_gather, osu_alltoall,
osu_alltoallv, osu_reduce, osu_allreduce) and one launch per P, each after
the affinity probe of the same launch; its variables have the same names.
OSU is looked up as for ``OsuCheck`` (``OsuCollectivesSourceCheck`` builds
it from the release tarball).

Both repeat their launches ``repetitions`` times (3): IMB's one launch
again with the same command line, OSU's launch of each P right after its
probe. Each value is the median over the repetitions with their range (75 %
at 3).

IMB-MPI1 is looked up as for ``ImbCheck``: ``-S CollectivesCheck.suite_dir``,
the environment's ``extras['benchmark_dirs']['imb']``, its PATH (Intel MPI
ships it); ``CollectivesSourceCheck`` builds IMB from its release tarball
and ``CollectivesSpackCheck`` takes it from a ``+spack`` environment.
"""


import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_before, variable

from sentinel.analysis import collectives
from sentinel.analysis.standard import osu_options
from sentinel.analysis.variables import Values
from sentinel.parsers import imb, osu
from sentinel.rfm.collectives import ImbCountSeries, OsuCountSeries, OsuSeriesOutput
from sentinel.rfm.compat import selection
from sentinel.rfm.standard import ImbLaunches, StandardSuiteCheck, build_variants
from sentinel.rfm.standard_build import ImbBuild, OsuBuild, SpackImbBuild, SpackOsuBuild


@selection.simple_test
class CollectivesCheck(ImbCountSeries, ImbLaunches, StandardSuiteCheck):
    """IMB-MPI1 collectives at every whole-node count, over one transport and mapping."""

    #: Collectives to run (IMB-MPI1 benchmark names), in one invocation.
    #:
    #: :type: :class:`List[str]`
    operations = variable(typ.List[typ.Str["|".join(collectives.OPERATIONS)]],
                          value=list(collectives.OPERATIONS))

    #: Message sizes in bytes (IMB ``-msglen``); Barrier has none.
    #:
    #: :type: :class:`List[int]`
    sizes = variable(typ.List[int], value=[8, 65536])

    spec = collectives.SPEC
    release_variant = "CollectivesSourceCheck"
    tags = {"collectives", "scaling", "nightly", "acceptance"}
    rotates = True

    @run_before("run")
    def set_options(self) -> None:
        self.executable_opts = [*self.operations, *self.imb_series_options(self.sizes),
                                *self.imb_timing_options()]

    def expected_variables(self) -> list[str]:
        return collectives.expected(self.operations, self.sizes, self.series)

    def suite_values(self, out: imb.ImbOutput) -> tuple[Values, list[int]]:
        return collectives.values(out, self.operations, self.sizes, self.time_per_size), []


CollectivesSourceCheck, CollectivesSpackCheck = build_variants(
    CollectivesCheck, ImbBuild, SpackImbBuild, "IMB")


@selection.simple_test
class OsuCollectivesCheck(OsuCountSeries, StandardSuiteCheck):
    """One OSU collective at every whole-node count, one launch each, one transport and mapping."""

    #: The OSU collective program.
    #:
    #: :type: :class:`str`
    benchmark = parameter(list(collectives.OSU_PROGRAMS), loggable=True)

    #: Message sizes reported, in bytes (OSU runs every power of two up to the largest).
    #:
    #: :type: :class:`List[int]`
    sizes = variable(typ.List[int], value=[8, 65536])

    #: Timed and warm-up iterations per size (OSU ``-i``, ``-x``; 0 keeps OSU's).
    #:
    #: :type: :class:`int`
    iterations = variable(int, value=0)
    warmup = variable(int, value=0)

    suite = "osu"
    spec = collectives.OSU_SPEC
    release_variant = "OsuCollectivesSourceCheck"
    # The nightly's collectives are IMB's, all operations in one job per
    # transport; OSU's series (a job per program) is the acceptance mode's.
    tags = {"osu", "collectives", "scaling", "acceptance"}
    rotates = True

    @property
    def program(self) -> str:
        """The OSU program name."""
        return self.benchmark

    @run_before("run")
    def set_options(self) -> None:
        self.executable_opts = osu_options(self.benchmark, 0, max(self.sizes),
                                           self.iterations, self.warmup)

    def read_output(self) -> OsuSeriesOutput:
        stdout, text = self.stdout_text()
        largest = 0 if self.benchmark == "osu_barrier" else max(self.sizes)
        return self.osu_series(text, stdout, largest)

    def expected_variables(self) -> list[str]:
        return collectives.osu_expected(self.benchmark, self.sizes, self.series)

    def launch_outputs(self, out: OsuSeriesOutput) -> list[dict[int, osu.OsuOutput]]:
        return out.launches()

    def suite_values(self, out: dict[int, osu.OsuOutput]) -> tuple[Values, list[int]]:
        return collectives.osu_values(out, self.benchmark, self.sizes), []


OsuCollectivesSourceCheck, OsuCollectivesSpackCheck = build_variants(
    OsuCollectivesCheck, OsuBuild, SpackOsuBuild, "OSU")
