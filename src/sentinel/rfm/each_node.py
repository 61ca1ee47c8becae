"""Every node of a partition at once: one allocation, one launch held to each node.

With ``each_node`` (the vet mode), a node-local check (two ranks on one
node, or one node's splits) runs as one batch job over the partition's
nodes (``each_node_nodes`` of them; ``-J nodelist=``/``-J reservation=``
say which): the job body runs once per node of the allocation, all nodes
at once (``each_node_at_once`` at a time, where the site sets it), each in
``nodes/<node>/`` under the check's time limit, with every launch pinned to
that node (``srun --nodes=1 --nodelist=NODE``, Open MPI's ``--host
NODE:n``, Hydra's ``-hosts NODE``) and the node's facts (``ldd``, the
provenance, the host probe) taken on the node itself. A 1,000-node
partition is then one job per check and environment, not one per node,
check and transport (``--distribute``).

Sanity judges each node on its own files through the check's one sanity
path; a node that fails it, or whose value is outside the reference band or
``node_factor`` times worse than the median of the nodes (three or more),
is named in :attr:`node_verdicts` (``node v2: ...``), which fails the test
and which ``sentinel vet`` reads. The test's values are the medians over
the nodes that passed.
"""

from __future__ import annotations

import os
import shlex
import statistics
from collections.abc import Callable, Sequence

import reframe as rfm
from reframe.core.builtins import run_after, variable
from reframe.core.launchers import JobLauncher

from sentinel.analysis.nodes import node_findings
from sentinel.analysis.variables import Values
from sentinel.errors import SentinelError
from sentinel.rfm.files import Here
from sentinel.rfm.placing import partition_nodes
from sentinel.rfm.repetition import Repetition

#: The shell variable holding the node a body runs for.
NODE_VAR = "SENTINEL_NODE"

#: How each scheduler's job script lists its nodes, one per line.
NODE_LISTS = {
    "slurm": 'scontrol show hostnames "$SLURM_JOB_NODELIST"',
    "squeue": 'scontrol show hostnames "$SLURM_JOB_NODELIST"',
    "pbs": 'sort -u "$PBS_NODEFILE"',
    "torque": 'sort -u "$PBS_NODEFILE"',
}


def pin_tokens(launcher: str, family: str, tasks: int) -> list[str]:
    """What holds a launch of ``tasks`` ranks to the node in ``$SENTINEL_NODE``."""
    node = f'"${NODE_VAR}"'
    if launcher == "srun":
        return ["--nodes=1", f"--ntasks={tasks}", f"--nodelist={node}"]
    if launcher in ("mpirun", "mpiexec") and family == "openmpi":
        return ["--host", f"{node}:{tasks}"]
    if launcher in ("mpirun", "mpiexec"):
        return ["-hosts", node]
    raise SentinelError(f"each_node: launcher {launcher!r} cannot be held to one node "
                        "(srun, mpirun and mpiexec can)")


def node_runner(launcher: str, family: str) -> str:
    """A one-task launch on ``$SENTINEL_NODE``, for the node's facts."""
    node = f'"${NODE_VAR}"'
    if launcher == "srun":
        return f"srun --nodes=1 --ntasks=1 --nodelist={node}"
    if family == "openmpi":
        return f"{launcher} -np 1 --host {node}"
    return f"{launcher} -n 1 -hosts {node}"


class _Tasks:
    """A job as a launcher sees it, with at most ``tasks`` ranks."""

    def __init__(self, job, tasks: int):
        self._job, self.num_tasks = job, min(job.num_tasks or tasks, tasks)

    def __getattr__(self, name: str):
        return getattr(self._job, name)


class OnOneNode(JobLauncher):
    """The partition's launcher with every launch held to ``$SENTINEL_NODE``."""

    def __init__(self, inner: JobLauncher, family: str, tasks: int):
        super().__init__()
        self.inner, self.family, self.tasks = inner, family, tasks
        self.registered_name = inner.registered_name
        self.options = list(inner.options)
        self.env_vars = dict(inner.env_vars)
        self.modifier, self.modifier_options = inner.modifier, list(inner.modifier_options)

    def command(self, job) -> list[str]:
        """The inner launcher's command for at most a node's ranks, pinned to the node."""
        sized = _Tasks(job, self.tasks)
        return (self.inner.command(sized)
                + pin_tokens(self.registered_name, self.family, sized.num_tasks))


class PerNode(Repetition):
    """The job body once per node of the allocation, all at once, in ``nodes/<node>/``."""

    directory = "nodes"
    function = "sentinel_node"
    out, err, exit = "rfm_node.out", "rfm_node.err", "rfm_node.exit"

    def wrap(self, test) -> None:
        """As every repetition; the node's time limit kept for its verdict."""
        test.per_node_s = float(test.time_limit)
        super().wrap(test)

    def run_lines(self, test, limit_s: float) -> list[str]:
        """The loop over the allocation's nodes."""
        return self.lines(test.current_partition.scheduler.registered_name, limit_s,
                          test.each_node_at_once)

    def rounds(self, test) -> int:
        """The waves of nodes: one when all run at once."""
        at_once = test.each_node_at_once
        return -(-(test.num_tasks // test.num_tasks_per_node) // at_once) if at_once else 1

    def lines(self, scheduler: str, limit_s: float, at_once: int) -> list[str]:
        """Each node's run in the background, ``at_once`` at a time (0: all); then a wait."""
        if scheduler not in NODE_LISTS:
            raise SentinelError(f"each_node: scheduler {scheduler!r} has no node list this "
                                f"suite reads ({', '.join(sorted(NODE_LISTS))} have)")
        where = f'"{self.directory}/${NODE_VAR}"'
        wait = ([f'while [ "$(jobs -rp | wc -l)" -ge {at_once} ]; do wait -n; done']
                if at_once else [])
        return [f"for {NODE_VAR} in $({NODE_LISTS[scheduler]}); do",
                f"export {NODE_VAR}", f"mkdir -p {where}", *wait,
                f"( {self.run_line(where, '', limit_s)} ) &", "done", "wait"]

    @staticmethod
    def spread(test) -> None:
        """The job takes the nodes; its launcher holds each launch to one of them."""
        nodes = test.each_node_nodes or partition_nodes(test.current_partition)
        per_node = test.num_tasks_per_node or test.num_tasks
        test.num_tasks_per_node = per_node
        test.num_tasks = per_node * nodes
        test.job.launcher = OnOneNode(test.job.launcher, test.transport_info.family, per_node)

    @staticmethod
    def on_node(test, command: str) -> str:
        """``command`` (with its redirections) run on the node the body runs for."""
        runner = node_runner(test.job.launcher.registered_name, test.transport_info.family)
        return f"{runner} bash -c {shlex.quote(command)}"

    def end(self, test, here: Here) -> str:
        """Why a node's run in this job did not end by itself ('' when it did)."""
        run = self.run(test.stagedir, here.node)
        if run.exit_status is None:
            return "the each-node job ended before this node's launch did"
        if run.timed_out:
            return (f"the node's launch ran past its time limit of {test.per_node_s:g} s "
                    f"and was stopped (timeout, exit status {run.exit_status})")
        return ""

    def judge(self, test, launches: Sequence[Here], judge_one: Callable[[], Values],
              own_job: bool) -> None:
        """Judge every node's launch with ``judge_one``; name the nodes that fail.

        ``judge_one()`` is the check's sanity path on the files of
        :meth:`~sentinel.rfm.files.LaunchFiles.files_dir`, returning the
        node's values or raising :class:`SentinelError`; ``own_job``: the
        runs are this job's (a member's end is its packed launch's). The
        nodes' medians become the test's values.
        """
        if not launches:
            raise SentinelError(f"the each-node job started no node's launch "
                                f"({os.path.join(test.stagedir, self.directory)} is empty "
                                "or absent)")
        values: dict[str, dict[str, tuple[float, str]]] = {}
        failed: dict[str, str] = {}
        for here in launches:
            with test.reading(here):
                try:
                    end = self.end(test, here) if own_job else ""
                    if end:
                        raise SentinelError(end)
                    values[here.node] = dict(judge_one())
                except (OSError, SentinelError) as err:
                    failed[here.node] = str(err)
        test.nodes_vetted = " ".join(sorted([*values, *failed]))
        found = [f"node {n}: {why}" for n, why in sorted(failed.items())]
        found += node_findings(values, test.spec, test.judged_entry(), test.node_factor)
        test.node_verdicts = "\n".join(found)
        test.values = _medians(values)
        test.unresolved, test.intervals, test.interval_coverage = {}, {}, {}
        if found:
            raise SentinelError(f"{len({f.split(':')[0] for f in found})} of "
                                f"{len(launches)} node(s) named: " + "; ".join(found[:5])
                                + (f"; and {len(found) - 5} more" if len(found) > 5 else ""))
        test.require_variables()


class EachNode(rfm.RegressionTestPlugin):
    """A node-local check run on every node of the partition in one job."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("spans_nodes",)

    #: Run on every node of the partition (or ``each_node_nodes``) in one
    #: job, one launch held to each node, all at once (the vet mode).
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    each_node = variable(bool, value=False, loggable=True)

    #: Nodes the each-node job takes; 0: the partition's (``extras['num_nodes']``).
    #: ``sentinel vet -w`` and ``--reservation`` set it to their nodes' count.
    #:
    #: :type: :class:`int`
    #: :default: ``0``
    each_node_nodes = variable(int, value=0)

    #: Nodes measured at once; 0: all (a site whose scheduler throttles
    #: job-step creation sets it).
    #:
    #: :type: :class:`int`
    #: :default: ``0``
    each_node_at_once = variable(int, value=0)

    #: A node is named when a value of its is this many times worse than
    #: the median of the nodes (with three nodes or more).
    #:
    #: :type: :class:`float`
    #: :default: ``2.0``
    node_factor = variable(float, value=2.0)

    #: Each node named, one per line: ``node v2: <what failed>``.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by sanity)
    node_verdicts = variable(str, value="", loggable=True)

    #: The nodes whose launch was judged, space-separated.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by sanity)
    nodes_vetted = variable(str, value="", loggable=True)

    #: The time limit of each node's body (set with the job script).
    per_node_s: float = 0.0

    @property
    def node_local(self) -> bool:
        """Whether every launch of the check fits one node (two ranks on it, or its splits)."""
        return not self.spans_nodes and getattr(self, "mapping", "") in ("core", "socket")

    @run_after("setup")
    def runs_on_each_node(self) -> None:
        """Only a node-local check, and only in an allocation of several nodes."""
        if not self.each_node:
            return
        part = self.current_partition
        self.skip_if(not self.node_local,
                     f"each_node runs node-local launches; {type(self).__name__} with mapping "
                     f"{getattr(self, 'mapping', '?')} spans nodes")
        self.skip_if(part.scheduler.registered_name not in NODE_LISTS,
                     f"each_node needs a batch allocation of several nodes; partition "
                     f"{part.fullname} uses the {part.scheduler.registered_name} scheduler")
        if self.each_node_nodes > partition_nodes(part):
            raise SentinelError(f"each_node_nodes is {self.each_node_nodes}; partition "
                                f"{part.fullname} has {partition_nodes(part)} "
                                "(extras['num_nodes'])")


def _medians(values: dict[str, dict[str, tuple[float, str]]]) -> dict[str, tuple[float, str]]:
    """Each variable's median over the nodes that measured it."""
    names: dict[str, str] = {}
    for per_node in values.values():
        for name, (_, unit) in per_node.items():
            names.setdefault(name, unit)
    return {name: (statistics.median(v[name][0] for v in values.values() if name in v), unit)
            for name, unit in names.items()}
