"""Where the ranks ran: mappings a partition cannot give skip; a run placed otherwise fails."""

from __future__ import annotations

import re

import reframe as rfm
from reframe.core.builtins import run_after

from sentinel.errors import SentinelError
from sentinel.mpi.placement import RankPlacement, placement_problems
from sentinel.parsers.jobend import job_end_causes
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.threads import partition_topology, ranks_of

#: A rank's host in its affinity line, read from a job's stdout as it is.
AFFINITY_HOST = re.compile(r"^SENTINEL_AFFINITY rank=\d+ host=(\S+)", re.MULTILINE)

#: The host of a rank as the launcher reports its end (srun) or the MPI its
#: peers (Open MPI's unreachable-peer message).
LAUNCHED_ON = re.compile(r"^srun: error: (\S+): tasks? \d|is on host: (\S+)", re.MULTILINE)


def partition_nodes(partition) -> int:
    """Nodes of a partition: 1 for the local scheduler, else ``extras['num_nodes']``."""
    if partition.scheduler.registered_name == "local":
        return 1
    if "num_nodes" not in partition.extras:
        raise SentinelError(
            f"partition {partition.fullname}: extras['num_nodes'] is not set; "
            "the 'node' mapping needs to know how many nodes the partition has")
    value = partition.extras["num_nodes"]
    if isinstance(value, bool) or not str(value).strip().isdigit() or int(value) < 1:
        raise SentinelError(f"partition {partition.fullname}: extras['num_nodes'] is "
                            f"{value!r}; expected a whole number of nodes, 1 or more")
    return int(value)


def ranks_per_node(test) -> int:
    """How many of a pair's two ranks share a node under the test's mapping."""
    return 1 if test.mapping == "node" and partition_nodes(test.current_partition) > 1 else 2


def socket_cores(test) -> int:
    """The cores each rank of a pair holds within one socket of its node.

    ``core`` puts both ranks on one socket, ``socket`` and ``node`` each on
    a socket of its own; a node whose sockets are not declared is one
    socket. Threads stay on their rank's socket, as MPI + threads codes
    place them (Open MPI 5 refuses to bind a rank across sockets).
    """
    proc = test.current_partition.processor
    per_socket = (proc.num_cpus or 1) // (proc.num_sockets or 1)
    return max(per_socket // (2 if test.mapping == "core" else 1), 1)


class PlacementChecks(rfm.RegressionTestPlugin):
    """The mapping's skips before the run, and the sanity of where the ranks ran."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = (
        "bench", "job_nodes", "job_output_text", "launch_plan", "launches", "mapping",
        "node_name", "rank_pair", "stdout_text", "transport_info",
    )

    @run_after("setup")
    def skip_impossible_mapping(self) -> None:
        """Skip, with the reason, a mapping this partition cannot give."""
        part = self.current_partition
        cpus = part.processor.num_cpus
        if self.mapping in ("core", "socket") and cpus is not None:
            self.skip_if(cpus < 2, f"mapping {self.mapping} puts 2 ranks on one node; "
                                   f"partition {part.fullname} has {cpus} CPU per node")
        per_socket = part.processor.num_cores_per_socket
        if self.rank_pair and self.mapping == "core" and per_socket is not None:
            self.skip_if(per_socket < 2, f"mapping core puts 2 ranks on two cores of one "
                                         f"socket; partition {part.fullname} has "
                                         f"{per_socket} core per socket")
        if self.mapping == "socket":
            sockets = part.processor.num_sockets
            if sockets is None:
                raise SentinelError(
                    f"partition {part.fullname}: processor topology unknown; set "
                    "'processor' in its config (or run reframe --detect-host-topology)"
                )
            self.skip_if(sockets < 2, f"mapping socket needs 2 sockets; partition "
                                      f"{part.fullname} has {sockets}")
        elif self.mapping == "node":
            nodes = partition_nodes(part)
            self.skip_if(nodes < 2, f"mapping node needs 2 nodes; partition "
                                    f"{part.fullname} has {nodes}")

    def placement_records(self, out) -> BenchOutput:
        """The records with the world size and each rank's affinity (the output itself)."""
        return out

    def launch_placements(self, out) -> list[list[RankPlacement]]:
        """Where the ranks of each launch ran (the affinity lines of each)."""
        launches = out.values() if isinstance(out, dict) else [out]
        return [ranks_of(self.placement_records(o)) for o in launches]

    def verify_one_node(self) -> None:
        """Fail first, naming it, when a transport that cannot cross nodes was made to.

        A launcher wrapper or option that spreads its ranks makes the library
        abort (unreachable peers); the job's end would only say that a task
        died. Proven by the hosts the ranks reported, or where none could
        report, by the nodes of a job whose launch failed.
        """
        t = self.transport_info
        if not t.intra_node:
            return
        try:
            _, text = self.stdout_text()
        except OSError:
            return
        hosts = sorted(set(AFFINITY_HOST.findall(text)))
        # a launch that died before its ranks could report: the launcher's lines name them
        launched = sorted({a or b for a, b in LAUNCHED_ON.findall(self.job_output_text())})
        nodes = ([self.node_name()] if self.node_name() else
                 self.job_nodes().split(",") if self.job_nodes() else [])
        failed = bool(job_end_causes(self.job_output_text(), self.bench, self.launches()))
        where = (f"its ranks ran on {', '.join(hosts)}" if len(hosts) > 1 else
                 f"its launch failed with ranks on {', '.join(launched)}" if len(launched) > 1
                 else f"the job ran on nodes {', '.join(nodes)} and its launch failed"
                 if len(nodes) > 1 and failed else "")
        if where:
            raise SentinelError(f"{t.name} carries traffic within a node only (shared "
                                f"memory), but {where}: a launcher option or wrapper spread "
                                "the ranks over nodes")

    def verify_world(self, out) -> None:
        """Fail unless the benchmark saw the number of ranks that was launched.

        An MPI started with the wrong PMI runs independent singletons that
        each exit 0; only the world size shows it.
        """
        configs = self.placement_records(out).of("CONFIG")
        ranks = configs[0].integer("ranks") if configs else 0
        launched = self.launch_plan.ranks_per_launch(self)
        if ranks != launched:
            raise SentinelError(f"the benchmark ran in a world of {ranks} rank(s), "
                                f"{launched} were launched (MPI/PMI mismatch?)")

    def verify_placement(self, out) -> None:
        """Fail unless ranks 0 and 1 ran where :attr:`mapping` puts them."""
        ranks = ranks_of(self.placement_records(out))
        issues = placement_problems(self.mapping, ranks,
                                    partition_topology(self.current_partition))
        if issues:
            raise SentinelError(f"placement {self.mapping} not honoured: " + "; ".join(issues))
