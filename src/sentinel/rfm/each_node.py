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

import contextlib
import os
import shlex
import statistics
from collections.abc import Iterator

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable
from reframe.core.launchers import JobLauncher

from sentinel.analysis.nodes import node_findings
from sentinel.errors import SentinelError
from sentinel.rfm.files import Here
from sentinel.rfm.packing import ERR, OUT, PACKED_DIR, TIMED_OUT
from sentinel.rfm.placing import partition_nodes

#: Where the job puts each node's launch, below its stage directory.
NODES_DIR = "nodes"

#: A node's files in its directory.
NODE_OUT, NODE_ERR, NODE_EXIT = "rfm_node.out", "rfm_node.err", "rfm_node.exit"

#: The shell variable holding the node a body runs for.
NODE_VAR = "SENTINEL_NODE"

_BODY = "sentinel_node"

#: The first line of an each-node job's body: the check's commands become a function.
OPEN_BODY = f"{_BODY}() {{"

#: How each scheduler's job script lists its nodes, one per line.
NODE_LISTS = {
    "slurm": 'scontrol show hostnames "$SLURM_JOB_NODELIST"',
    "squeue": 'scontrol show hostnames "$SLURM_JOB_NODELIST"',
    "pbs": 'sort -u "$PBS_NODEFILE"',
    "torque": 'sort -u "$PBS_NODEFILE"',
}

#: Seconds ``timeout`` waits after TERM before it kills a node's body.
KILL_AFTER_S = 30


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


def node_lines(scheduler: str, limit_s: float, at_once: int) -> list[str]:
    """Job-script lines that close the body and run it for every node of the allocation.

    Each node's body runs in ``nodes/<node>/`` in a subshell under
    ``timeout`` (which stops its launcher and ranks), in the background,
    ``at_once`` at a time (0: all); its exit status is recorded beside its
    output. The job waits for every node.
    """
    if scheduler not in NODE_LISTS:
        raise SentinelError(f"each_node: scheduler {scheduler!r} has no node list this "
                            f"suite reads ({', '.join(sorted(NODE_LISTS))} have)")
    where = f'"{NODES_DIR}/${NODE_VAR}"'
    wait = ([f'while [ "$(jobs -rp | wc -l)" -ge {at_once} ]; do wait -n; done']
            if at_once else [])
    return [
        "}", f"export -f {_BODY}",
        f"for {NODE_VAR} in $({NODE_LISTS[scheduler]}); do",
        f"export {NODE_VAR}", f"mkdir -p {where}", *wait,
        f"( (cd {where} && exec timeout --kill-after={KILL_AFTER_S} {int(limit_s)} "
        f"bash -c {_BODY} > {NODE_OUT} 2> {NODE_ERR}); echo $? > {where}/{NODE_EXIT} ) &",
        "done", "wait",
    ]


def nodes_in(job_stagedir: str) -> list[str]:
    """The nodes an each-node job started a body for."""
    try:
        return sorted(os.listdir(os.path.join(job_stagedir, NODES_DIR)))
    except FileNotFoundError:
        return []


def node_exit(where: str) -> int | None:
    """A node body's exit status; None when the job ended during it."""
    try:
        with open(os.path.join(where, NODE_EXIT)) as fp:
            text = fp.read().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


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


class EachNode(rfm.RegressionTestPlugin):
    """A node-local check run on every node of the partition in one job."""

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

    @run_before("run")
    def spread_over_nodes(self) -> None:
        """The job takes the nodes; its launcher holds each launch to one of them.

        Before the run, once the check has sized its launches (a node's
        splits are planned after setup).
        """
        if not self.each_node or self.from_packed_job:
            return
        nodes = self.each_node_nodes or partition_nodes(self.current_partition)
        per_node = self.num_tasks_per_node or self.num_tasks
        self.num_tasks_per_node = per_node
        self.num_tasks = per_node * nodes
        self.job.launcher = OnOneNode(self.job.launcher, self.transport_info.family, per_node)

    def on_node(self, command: str) -> str:
        """``command`` (with its redirections) run on the node measured, in an each-node job."""
        if not self.each_node or self.from_packed_job:
            return command
        launcher = self.job.launcher
        return f"{node_runner(launcher.registered_name, self.transport_info.family)} " \
               f"bash -c {shlex.quote(command)}"

    def wrap_each_node(self) -> None:
        """The job body once per node, all at once, each under this check's time limit."""
        per_node = self.per_node_s = float(self.time_limit)
        at_once = self.each_node_at_once
        self.prerun_cmds.insert(0, OPEN_BODY)
        self.postrun_cmds += node_lines(self.current_partition.scheduler.registered_name,
                                        per_node, at_once)
        waves = -(-(self.num_tasks // self.num_tasks_per_node) // at_once) if at_once else 1
        self.time_limit = (per_node + KILL_AFTER_S) * waves

    # -- sanity ----------------------------------------------------------

    def node_launches(self) -> list[Here]:
        """Each node's launch files: its own job's, or its packed job's for this transport."""
        if self.from_packed_job:
            job = self.getdep(self.packed_job_name).stagedir
            return [Here(os.path.join(job, NODES_DIR, n, PACKED_DIR, self.transport_name),
                         OUT, ERR) for n in nodes_in(job)]
        return [Here(os.path.join(self.stagedir, NODES_DIR, n), NODE_OUT, NODE_ERR)
                for n in nodes_in(self.stagedir)]

    def node_name(self) -> str:
        """The node being judged ('' outside the each-node sanity)."""
        if not self._here:
            return ""
        parts = self._here.where.split(os.sep)
        return parts[parts.index(NODES_DIR, len(parts) - 4) + 1]

    def launch_roots(self, job_stagedir: str) -> list[str]:
        """Where a packed job's launches are: its stage directory, or each node's directory."""
        if not self.each_node:
            return [job_stagedir]
        return [os.path.join(job_stagedir, NODES_DIR, n) for n in nodes_in(job_stagedir)]

    def launch_root(self, job_stagedir: str) -> str:
        """Where a packed job's launch for the node being judged is (its stage directory)."""
        node = self.node_name()
        return os.path.join(job_stagedir, NODES_DIR, node) if node else job_stagedir

    @contextlib.contextmanager
    def first_node(self) -> Iterator[None]:
        """Read the first node's files meanwhile (an each-node job's facts); else as is."""
        launches = self.node_launches() if self.each_node else []
        self._here = launches[0] if launches else None
        try:
            yield
        finally:
            self._here = None

    def node_end(self, here: Here) -> str:
        """Why a node's body in this job did not end by itself ('' when it did)."""
        if self.from_packed_job:
            return ""  # the packed job's launch status says it
        status = node_exit(here.where)
        if status is None:
            return "the each-node job ended before this node's launch did"
        if status in TIMED_OUT:
            return (f"the node's launch ran past its time limit of {self.per_node_s:g} s "
                    f"and was stopped (timeout, exit status {status})")
        return ""

    def judge_each_node(self, judge_one) -> None:
        """Judge every node's launch with ``judge_one``; name the nodes that fail.

        ``judge_one()`` is the check's sanity path on the files of
        :meth:`files_dir`, returning the node's values or raising
        :class:`SentinelError`. The nodes' medians become the test's values.
        """
        launches = self.node_launches()
        if not launches:
            raise SentinelError(f"the each-node job started no node's launch "
                                f"({os.path.join(self.stagedir, NODES_DIR)} is empty or absent)")
        values: dict[str, dict[str, tuple[float, str]]] = {}
        failed: dict[str, str] = {}
        for here in launches:
            self._here = here
            node = self.node_name()
            try:
                end = self.node_end(here)
                if end:
                    raise SentinelError(end)
                values[node] = dict(judge_one())
            except (OSError, SentinelError) as err:
                failed[node] = str(err)
            finally:
                self._here = None
        self.nodes_vetted = " ".join(sorted([*values, *failed]))
        found = [f"node {n}: {why}" for n, why in sorted(failed.items())]
        found += node_findings(values, self.spec, self.judged_entry(), self.node_factor)
        self.node_verdicts = "\n".join(found)
        self.values = _medians(values)
        self.unresolved, self.intervals, self.interval_coverage = {}, {}, {}
        if found:
            raise SentinelError(f"{len({f.split(':')[0] for f in found})} of "
                                f"{len(launches)} node(s) named: " + "; ".join(found[:5])
                                + (f"; and {len(found) - 5} more" if len(found) > 5 else ""))
        self.require_variables()


def _medians(values: dict[str, dict[str, tuple[float, str]]]) -> dict[str, tuple[float, str]]:
    """Each variable's median over the nodes that measured it."""
    names: dict[str, str] = {}
    for per_node in values.values():
        for name, (_, unit) in per_node.items():
            names.setdefault(name, unit)
    return {name: (statistics.median(v[name][0] for v in values.values() if name in v), unit)
            for name, unit in names.items()}

