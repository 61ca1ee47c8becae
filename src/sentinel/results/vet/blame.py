"""Whose fault a failed test case of a health run is: the node's, or the health check's own.

A health check takes a node out of production; it must do so only for what
it measured of the node, never for its own configuration (the rule of LBNL
NHC, which sites trust with the job). A failure is the **node's** when it
is one of

* a judged value outside its band (the performance stage; measured twice
  before the node is named);
* the transport that carried the traffic not the one requested (the
  library's log: ``transport ... not verified``);
* a rank killed by a signal (a segmentation fault, a bus error, a kill),
  unless the library's own known race killed it (below);
* the host probe outside its band (``host_outside``: the node's CPU or
  memory, before any MPI).

Everything else is the **check's**: a build that failed (or a test whose
build it depends on), ReFrame's or the configuration's errors, a
reference file, a launcher or a library that is missing, an MPI that
refuses to run as root, the scheduler refusing the job, a launch that the
job's output shows to have failed in the MPI library or in Slurm itself
(Open MPI 5.0's ob1 race in ``MPI_Init``,
:data:`~sentinel.parsers.jobend.OB1_INIT_RACE`, a segmentation fault on any
node; Slurm's PMI server rejecting the MPI's request,
:data:`~sentinel.parsers.jobend.PMI2_REQUEST`, after which srun kills the
ranks: neither says anything of this node), and any cause the
suite cannot pin on the node. Those never drain: the health check says it
is broken and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sentinel.analysis.host import SLOWED
from sentinel.parsers.jobend import OB1_INIT_RACE, PMI2_REQUEST

NODE, CHECK = "node", "check"

#: The check's own causes, as :mod:`sentinel.parsers.jobend` and ReFrame say
#: them, each with how to say it; tried before the node's (a refusal to run
#: is no measurement of the node).
_CHECK_CAUSES = (
    (re.compile(r"refused to run as root"), "the MPI refused to run as root"),
    (re.compile(r": no such program"), "a program it runs is missing"),
    (re.compile(r"missing shared library"), "a shared library is missing"),
    (re.compile(r"Slurm refused the job"), "the scheduler refused the job"),
    (re.compile(r"depend", re.IGNORECASE), "a test it depends on (its build) did not pass"),
    (re.compile(re.escape(OB1_INIT_RACE)),
     "the MPI library crashed in a race of its own (open-mpi/ompi issue 11438), not on the node"),
    (re.compile(re.escape(PMI2_REQUEST)),
     "Slurm's PMI server could not parse the MPI's request at start-up, not the node"),
    (re.compile(r"reference file|\.yaml\b|\.json\b|baseline"),
     "its reference or baseline file cannot be used"),
)
#: The node's causes in a failure's message.
_NODE_CAUSES = (
    (re.compile(r"transport \S+ not verified"),
     "the transport that carried the traffic is not the one requested"),
    (re.compile(r"died of signal \d+|: task\(s\) \S+ on \S+: (?:Segmentation fault|Bus error|"
                r"Killed|Illegal instruction)"), "a rank was killed by a signal"),
)
#: ReFrame's phases that run before anything is measured on the node.
_BEFORE_MEASURING = ("init", "setup", "compile", "compile_wait", "startup")


@dataclass(frozen=True)
class Blame:
    """A failed test case's fault: :data:`NODE` or :data:`CHECK`, and the cause in words."""

    fault: str
    cause: str


def blame(tc: dict) -> Blame:
    """Whose fault the failed test case ``tc`` (a run report's entry) is, and why."""
    reason = str(tc.get("fail_reason") or "")
    phase = str(tc.get("fail_phase") or "")
    if tc.get("fixture") or phase in _BEFORE_MEASURING:
        return Blame(CHECK, f"it failed before measuring ({phase or 'its build'})")
    if phase == "performance":
        return Blame(NODE, "a judged value is outside its band")
    for pattern, said in _CHECK_CAUSES:
        if pattern.search(reason):
            return Blame(CHECK, said)
    if tc.get("host_outside") or SLOWED in reason:
        return Blame(NODE, "the host probe is outside its band")
    for pattern, said in _NODE_CAUSES:
        if pattern.search(reason):
            return Blame(NODE, said)
    return Blame(CHECK, "a cause the suite cannot pin on the node")
