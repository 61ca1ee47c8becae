"""A job body run more than once: the interface of the packed and the each-node job.

A :class:`Repetition` turns a job's body (its pre-run commands, launch and
post-run commands) into a shell function and runs it once per item, each
run in a directory of its own below the stage directory, under the check's
time limit (``timeout``, which stops the run's whole process group: its
launcher and ranks), with its exit status recorded beside its output. The
packed job (:class:`sentinel.rfm.packing.PerTransport`) runs it once per
transport of its environment, one after another; the each-node job
(:class:`sentinel.rfm.each_node.PerNode`) once per node of the allocation,
all at once. What they share is written here; each says only what it runs
over and how.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

#: Exit statuses of ``timeout``: stopped at the limit (TERM), killed after it (KILL).
TIMED_OUT = (124, 137)

#: Seconds ``timeout`` waits after TERM before it kills a run of the body.
KILL_AFTER_S = 30


@dataclass(frozen=True)
class Run:
    """What a repeated job left of one run of its body."""

    #: The run's directory.
    where: str
    #: Whether the job got to it.
    started: bool
    #: Its exit status; None when the job ended during the run.
    exit_status: int | None

    @property
    def timed_out(self) -> bool:
        """Stopped by its time limit."""
        return self.exit_status in TIMED_OUT

    @property
    def ended(self) -> str:
        """How it ended, in a word: ``not launched``, its exit status, or ``None``."""
        return "not launched" if not self.started else str(self.exit_status)


class Repetition(ABC):
    """The job body as a shell function, run once per item in ``<directory>/<item>/``."""

    #: Where the runs go, below the job's stage directory.
    directory: ClassVar[str]
    #: The shell function the body becomes.
    function: ClassVar[str]
    #: A run's stdout, stderr and exit status, in its directory.
    out: ClassVar[str]
    err: ClassVar[str]
    exit: ClassVar[str]

    def wrap(self, test) -> None:
        """Make ``test``'s job body the function, run per item; its time limit covers them all."""
        limit_s = float(test.time_limit)
        test.prerun_cmds.insert(0, f"{self.function}() {{")
        test.postrun_cmds += ["}", f"export -f {self.function}",
                              *self.run_lines(test, limit_s)]
        test.time_limit = (limit_s + KILL_AFTER_S) * self.rounds(test)

    @abstractmethod
    def run_lines(self, test, limit_s: float) -> list[str]:
        """The lines after the function that run it once per item."""

    @abstractmethod
    def rounds(self, test) -> int:
        """How many runs of the body follow one another (the job's time is theirs)."""

    def run_line(self, where: str, exports: str, limit_s: float) -> str:
        """One run of the body in ``where``, ``exports`` first, its exit status recorded."""
        export = f"export {exports} && " if exports else ""
        return (f"(cd {where} && {export}exec timeout --kill-after={KILL_AFTER_S} "
                f"{int(limit_s)} bash -c {self.function} > {self.out} 2> {self.err}); "
                f"echo $? > {where}/{self.exit}")

    def where(self, root: str, item: str) -> str:
        """The directory of ``item``'s run in a job staged in ``root``."""
        return os.path.join(root, self.directory, item)

    def items(self, root: str) -> list[str]:
        """The items a job staged in ``root`` started a run for."""
        try:
            return sorted(os.listdir(os.path.join(root, self.directory)))
        except FileNotFoundError:
            return []

    def run(self, root: str, item: str) -> Run:
        """What the job staged in ``root`` left of ``item``'s run."""
        where = self.where(root, item)
        if not os.path.isdir(where):
            return Run(where, False, None)
        try:
            with open(os.path.join(where, self.exit)) as fp:
                text = fp.read().strip()
        except FileNotFoundError:
            return Run(where, True, None)
        return Run(where, True, int(text) if text.isdigit() else None)
