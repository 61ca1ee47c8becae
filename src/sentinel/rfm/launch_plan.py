"""The launch plan: which job runs a test case's launches, where, and where sanity reads them.

Every test case has one (:attr:`PlannedLaunches.launch_plan`), chosen from
its parameters and mode when it is set up (:meth:`LaunchPlan.of`):

* **alone**: its own job runs its launches once, in its stage directory;
* **a packed job** (``transport=<family>/all`` with ``pack_transports``):
  its job runs the body once per transport of its environment
  (:class:`~sentinel.rfm.packing.PerTransport`); it measures nothing of its
  own, its members do;
* **a member** of a packed job: no job of its own, its transport's launch
  in the packed job taken as its own (a retry runs its own job: alone);
* any of them **on each node** (``each_node``): the body once per node of
  the allocation (:class:`~sentinel.rfm.each_node.PerNode`), every node's
  launch judged on its own.

The packed and the each-node job are the two
:class:`~sentinel.rfm.repetition.Repetition` s of a job body; a packed job
on each node runs one inside the other. Nothing outside this module and
those two asks whether a test case is packed or on each node: the job
body, the sanity path, placement, provenance, references and the rotation
ask its plan.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass

import reframe.utility.udeps as udeps
from reframe.core import runtime
from reframe.core.builtins import run_before

from sentinel.analysis.host import HOST_AFTER_FILE, HOST_FILE
from sentinel.parsers.jobend import job_end_causes
from sentinel.rfm.each_node import EachNode, PerNode
from sentinel.rfm.files import Here, LaunchFiles
from sentinel.rfm.packing import PackedTransports, PerTransport, why_not_run
from sentinel.rfm.provenance import LDD_FILE, PROVENANCE_FILE
from sentinel.rfm.repetition import Repetition

_PACKED = PerTransport()


@dataclass(frozen=True)
class LaunchPlan:
    """How one test case's launches run, and where sanity reads each of them."""

    #: This job runs the body once per transport of its environment (a packed job).
    per_transport: PerTransport | None = None
    #: The packed job whose launch of this transport this test case takes ('': none).
    member_of: str = ""
    #: The body runs once per node of the allocation.
    per_node: PerNode | None = None

    @classmethod
    def of(cls, test, current_run: int | None = None) -> LaunchPlan:
        """``test``'s plan: from its transport, ``pack_transports``, ``each_node`` and the run.

        ``current_run``: ReFrame's (0: the first; a retry's is more), read from
        its runtime unless given.
        """
        if current_run is None:
            current_run = runtime.runtime().current_run
        member = test.in_packed_job and current_run == 0
        return cls(per_transport=PerTransport() if test.is_packed_job else None,
                   member_of=test.packed_job_name if member else "",
                   per_node=PerNode() if test.each_node else None)

    @property
    def measures(self) -> bool:
        """Whether the test case's values are its own (a packed job's are its members')."""
        return self.per_transport is None

    @property
    def describe(self) -> str:
        """The plan in words (``a member of X on each node``)."""
        what = ("a packed job" if self.per_transport else
                f"a member of {self.member_of}" if self.member_of else "alone")
        return what + (" on each node" if self.per_node else "")

    def repetitions(self) -> list[Repetition]:
        """The repetitions of the body, innermost first."""
        return [r for r in (self.per_transport, self.per_node) if r is not None]

    # -- the variants --------------------------------------------------------

    def why_not_run(self, test) -> str:
        """Why this variant does not run ('' when it does): a packed job only when packing."""
        if self.per_transport:
            return "" if test.pack_transports else "a packed job runs only with pack_transports"
        return why_not_run(test, test.transport_info)

    def features(self, test) -> tuple[str, ...]:
        """The environment features it needs: its family's (a packed job), or its transport's."""
        t = test.transport_info
        if self.per_transport:
            return (f"+{t.family}",)
        return (f"+{t.family}", *(f"+{f}" for f in t.features))

    # -- the job -----------------------------------------------------------

    def depend(self, test) -> None:
        """A member depends on its packed job (same partition and environment)."""
        if self.member_of:
            test.depends_on(self.member_of, udeps.by_case)

    def size_job(self, test) -> None:
        """An each-node job takes the nodes; its launcher holds each launch to one."""
        if self.per_node and not self.member_of:
            self.per_node.spread(test)

    def on_node(self, test, command: str) -> str:
        """``command`` run on the node measured (an each-node job's), else as it is."""
        if self.per_node and not self.member_of:
            return self.per_node.on_node(test, command)
        return command

    def write_job(self, test, body: Callable[[], None]) -> None:
        """The job body (``body()`` adds to the launch), repeated as planned.

        A member writes none: its job shows its launch in the packed job.
        """
        if self.member_of:
            self._take_launch(test)
            return
        body()
        for repetition in self.repetitions():
            repetition.wrap(test)

    def _take_launch(self, test) -> None:
        """Make this launch's output, errors, ``ldd`` and node facts its own."""
        test.prerun_cmds, test.postrun_cmds = [], []
        test.executable = "sh"
        test.executable_opts = ["-c", shlex.quote(
            f"cat {_PACKED.out} 2>/dev/null; cat {_PACKED.err} >&2 2>/dev/null; true")]
        if test.is_dry_run() or self.per_node:
            return  # an each-node member reads each node's launch where it is
        where = _PACKED.where(test.getdep(self.member_of).stagedir, test.transport_name)
        for name in (_PACKED.out, _PACKED.err, LDD_FILE, PROVENANCE_FILE, HOST_FILE,
                     HOST_AFTER_FILE):
            if os.path.exists(os.path.join(where, name)):
                shutil.copy(os.path.join(where, name), test.stagedir)

    def launch_job(self, test):
        """The ReFrame job that ran the launches (a member's: its packed job's)."""
        return test.getdep(self.member_of).job if self.member_of else test.job

    # -- where sanity reads ------------------------------------------------

    def launches(self, test) -> list[Here]:
        """Each launch's files: one, or one per node."""
        own = Here(test.stagedir, test.stdout.evaluate(), test.stderr.evaluate())
        if not self.per_node:
            return [own]
        job = test.getdep(self.member_of).stagedir if self.member_of else test.stagedir
        nodes = self.per_node.items(job)
        if self.member_of:
            return [Here(_PACKED.where(self.per_node.where(job, n), test.transport_name),
                         _PACKED.out, _PACKED.err, n) for n in nodes]
        return [Here(self.per_node.where(job, n), self.per_node.out, self.per_node.err, n)
                for n in nodes]

    def first_launch(self, test):
        """A context reading the first launch's files (an each-node job's facts)."""
        launches = self.launches(test)
        return test.reading(launches[0] if launches and self.per_node else None)

    def ranks_per_launch(self, test) -> int:
        """The ranks one launch started (an each-node job's: a node's)."""
        return test.num_tasks_per_node if self.per_node else test.num_tasks

    def judge(self, test) -> None:
        """The sanity path once per launch; a packed job's: that it launched its transports."""
        if self.per_transport:
            roots = ([self.per_node.where(test.stagedir, n)
                      for n in self.per_node.items(test.stagedir)]
                     if self.per_node else [test.stagedir])
            self.per_transport.verify(test, roots)
        elif self.per_node:
            self.per_node.judge(test, self.launches(test), lambda: test.sanity_path.judge(test),
                                own_job=not self.member_of)
        else:
            test.sanity_path.judge(test)

    def launch_causes(self, test) -> list[str]:
        """Why a member's launch in its packed job has no complete result ([] otherwise)."""
        if not self.member_of:
            return []
        job = test.getdep(self.member_of)
        node = test.node_name()
        root = self.per_node.where(job.stagedir, node) if self.per_node and node else \
            job.stagedir
        return _PACKED.causes(_PACKED.run(root, test.transport_name), job.display_name,
                              f"{float(test.time_limit):g} s",
                              job_end_causes(job.job_output_text()))


class PlannedLaunches(EachNode, LaunchFiles, PackedTransports):
    """The launch plan of a test case, chosen when it is set up (its dependencies: at init)."""

    _launch_plan: LaunchPlan | None = None

    @property
    def launch_plan(self) -> LaunchPlan:
        """The plan of this test case's launches."""
        if self._launch_plan is None:
            self._launch_plan = LaunchPlan.of(self)
        return self._launch_plan

    @run_before("setup")
    def choose_launch_plan(self) -> None:
        """Choose the plan for this run: a member's retry runs its own job."""
        self._launch_plan = LaunchPlan.of(self)
        self.local = bool(self._launch_plan.member_of)

    @run_before("run")
    def size_job(self) -> None:
        """An each-node job takes its nodes (before the launcher's options are added)."""
        self.launch_plan.size_job(self)

    def measures(self) -> bool:
        """Whether this test case's values are its own (not a packed job's)."""
        return self.launch_plan.measures

    def night_name(self) -> str:
        """The name that picks a rotating check's night: a packed job's for its members."""
        return self.packed_job_name if self.pack_transports else self.unique_name
