"""A process-count series on prefixes of one world: IMB-MPI1's ``-npmin``.

IMB runs each benchmark at ``npmin``, 2 ``npmin``, 4 ``npmin``, ... processes
and at the whole world, on the first P ranks. :class:`ImbCountSeries` plans
that series as whole nodes (``npmin`` = the ranks of one node: full nodes x
1, 2, 4, ... nodes and the partition's size), launches IMB once, and proves
every rank's placement with the affinity probe of the same launch: ranks per
node as the mapping asks, no two on one core, and the first P ranks on
exactly ceil(P / ranks per node) nodes, so that each P is the node count it
stands for.
"""

from __future__ import annotations

import os

from sentinel.analysis import collectives
from sentinel.errors import SentinelError
from sentinel.mpi.placement import prefix_span_problems, series_placement_problems
from sentinel.parsers.imb import ImbOutput
from sentinel.rfm.scaling import RankSeries
from sentinel.rfm.threads import partition_topology, ranks_of

#: The file (in the stage directory) listing IMB's message sizes (``-msglen``).
SIZES_FILE = "imb_sizes.txt"


class ImbCountSeries(RankSeries):
    """The series N = whole nodes, measured by one IMB launch with ``-npmin``."""

    whole_nodes = True
    launch_per_count = False

    def imb_series_options(self, sizes: list[int]) -> list[str]:
        """IMB options for the series and the message sizes (written to :data:`SIZES_FILE`)."""
        with open(os.path.join(self.stagedir, SIZES_FILE), "w") as fp:
            fp.write("".join(f"{size}\n" for size in sizes))
        return ["-npmin", str(self.series[0]), "-msglen", SIZES_FILE]

    def verify_world(self, out: ImbOutput) -> None:
        """The probe saw the whole launch; IMB ran every operation at every N of the series."""
        configs = self.probe_output().of("CONFIG")
        ranks = configs[0].integer("ranks") if configs else 0
        if ranks != self.num_tasks:
            raise SentinelError(f"the affinity probe ran in a world of {ranks} rank(s), "
                                f"{self.num_tasks} were launched (MPI/PMI mismatch?)")
        collectives.require_counts(out, self.operations, self.series, self.stdout_text()[0])

    def verify_placement(self, out: ImbOutput) -> None:
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
