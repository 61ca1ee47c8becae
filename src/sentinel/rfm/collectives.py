"""The collectives' process-count series: IMB's in one launch, OSU's one launch per count.

IMB runs each benchmark at ``npmin``, 2 ``npmin``, 4 ``npmin``, ... processes
and at the whole world, on the first P ranks. :class:`ImbCountSeries` plans
that series as whole nodes (``npmin`` = the ranks of one node: full nodes x
1, 2, 4, ... nodes and the partition's size), launches IMB once, and proves
every rank's placement with the affinity probe of the same launch: ranks per
node as the mapping asks, no two on one core, and the first P ranks on
exactly ceil(P / ranks per node) nodes, so that each P is the node count it
stands for.

OSU runs one world per launch: :class:`OsuCountSeries` launches the probe
and the OSU program for each N of the same whole-node series, and proves
each launch's placement with the probe launched just before it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sentinel.analysis import collectives
from sentinel.errors import SentinelError
from sentinel.mpi.placement import prefix_span_problems, series_placement_problems
from sentinel.parsers import osu
from sentinel.parsers.imb import ImbOutput
from sentinel.parsers.sentinel_output import BenchOutput, parse, split_launches
from sentinel.rfm.scaling import RankSeries
from sentinel.rfm.threads import partition_topology, ranks_of

#: The file (in the stage directory) listing IMB's message sizes (``-msglen``).
SIZES_FILE = "imb_sizes.txt"


class ImbCountSeries(RankSeries):
    """The series N = whole nodes, measured by one IMB launch with ``-npmin``."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("mapping", "operations", "probe_output", "series", "stdout_text")

    whole_nodes = True
    launch_per_count = False

    def imb_series_options(self, sizes: list[int]) -> list[str]:
        """IMB options for the series and the message sizes (written to :data:`SIZES_FILE`)."""
        with open(os.path.join(self.stagedir, SIZES_FILE), "w") as fp:
            fp.write("".join(f"{size}\n" for size in sizes))
        return ["-npmin", str(self.series[0]), "-msglen", SIZES_FILE]

    def verify_world(self, out: list[ImbOutput]) -> None:
        """The probe saw the whole launch; each launch of IMB ran every operation at every N.

        The repeated launches have the probed one's command line.
        """
        configs = self.probe_output().of("CONFIG")
        ranks = configs[0].integer("ranks") if configs else 0
        if ranks != self.num_tasks:
            raise SentinelError(f"the affinity probe ran in a world of {ranks} rank(s), "
                                f"{self.num_tasks} were launched (MPI/PMI mismatch?)")
        stdout = self.stdout_text()[0]
        for launch in out:
            collectives.require_counts(launch, self.operations, self.series, stdout)

    def verify_placement(self, out: list[ImbOutput]) -> None:
        """Every rank of the launch placed as the mapping asks; each prefix on its nodes."""
        ranks = ranks_of(self.probe_output())
        per_node = self.num_tasks_per_node
        issues = series_placement_problems(self.mapping, ranks, per_node,
                                           partition_topology(self.current_partition), 1,
                                           self.oversubscribe)
        issues += prefix_span_problems(ranks, per_node, self.series)
        if issues:
            raise SentinelError(f"{self.num_tasks}-rank launch: placement {self.mapping} "
                                "not honoured: " + "; ".join(issues))


@dataclass
class OsuSeriesOutput:
    """Per N of an OSU series: the probe's records and OSU's table of each repetition."""

    probes: dict[int, BenchOutput]
    tables: dict[int, list[osu.OsuOutput]]

    def launches(self) -> list[dict[int, osu.OsuOutput]]:
        """The series once per repetition: N -> that repetition's table."""
        count = len(next(iter(self.tables.values())))
        return [{n: runs[i] for n, runs in self.tables.items()} for i in range(count)]


class OsuCountSeries(RankSeries):
    """The whole-node series, one OSU launch per N, each after its own affinity probe."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("probe", "repetitions", "series")

    whole_nodes = True
    probe_each_launch = True
    min_ranks = 2  # "This test requires at least two processes"

    def count_commands(self, n: int, launch: str) -> list[str]:
        """The probe, then the benchmark ``repetitions`` times, with the n-rank launch."""
        return [f"{launch} {self.probe.executable_path}",
                *super().count_commands(n, launch) * self.repetitions]

    def before_largest(self, launch: str) -> list[str]:
        """The probe of the largest launch."""
        return [f"{launch} {self.probe.executable_path}"]

    def osu_series(self, text: str, stdout: str, largest: int) -> OsuSeriesOutput:
        """Each launch's probe and tables; a launch missing or cut short is an error."""
        probes = split_launches(parse(text, "affinity"), stdout, self.series)
        chunks = osu.split(text)
        k = self.repetitions
        if len(chunks) != k * len(self.series):
            raise SentinelError(f"{stdout}: {len(chunks)} OSU output(s), the series "
                                f"{self.series} has {len(self.series)} launches, each "
                                f"repeated {k} time(s) (a launch failed or was cut short?)")
        tables: dict[int, list[osu.OsuOutput]] = {}
        for i, chunk in enumerate(chunks):
            n = self.series[i // k]
            table = osu.parse(chunk, stdout)
            if largest:
                osu.require_sizes(table, largest, f"{stdout} ({n}-rank launch)")
            tables.setdefault(n, []).append(table)
        return OsuSeriesOutput(probes, tables)

    def verify_world(self, out: OsuSeriesOutput) -> None:
        """Each launch's world: the probe before it reported every N (split_launches)."""

    def verify_placement(self, out: OsuSeriesOutput) -> None:
        """Every rank of every launch, from the probe launched just before it."""
        super().verify_placement(out.probes)
