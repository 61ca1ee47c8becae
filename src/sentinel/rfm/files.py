"""Where sanity reads a launch's files: the stage directory, or one launch of a repeated job.

A test's sanity reads its launch's stdout, stderr and the files the job
wrote beside them (``ldd``, the provenance, the host probe). Its launch plan
(:mod:`sentinel.rfm.launch_plan`) says where each launch's files are: a
:class:`Here`. While one is judged (:meth:`LaunchFiles.reading`), every
reader follows it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

import reframe as rfm


@dataclass(frozen=True)
class Here:
    """The files of one launch: a directory, its output's names, the node it ran on."""

    where: str
    out: str
    err: str
    #: The node, for one launch of an each-node job ('' otherwise).
    node: str = ""


class LaunchFiles(rfm.RegressionTestPlugin):
    """The readers of a launch's files, in the stage directory or the launch being judged."""

    _here: Here | None = None

    @contextlib.contextmanager
    def reading(self, here: Here | None) -> Iterator[None]:
        """Read ``here``'s files meanwhile (None: the stage directory's)."""
        self._here = here
        try:
            yield
        finally:
            self._here = None

    def node_name(self) -> str:
        """The node of the launch being read ('' where it is not one node's)."""
        return self._here.node if self._here else ""

    def files_dir(self) -> str:
        """Where sanity reads the launch's files: the node's directory while it is judged."""
        return self._here.where if self._here else self.stagedir

    def output_names(self) -> tuple[str, str]:
        """The launch's stdout and stderr names in :meth:`files_dir`."""
        if self._here:
            return self._here.out, self._here.err
        return self.stdout.evaluate(), self.stderr.evaluate()

    def stage_text(self, name: str) -> str | None:
        """A file of the stage directory as text; None when it cannot be read."""
        try:
            with open(os.path.join(self.files_dir(), name), errors="replace") as fp:
                return fp.read()
        except OSError:
            return None

    def stdout_text(self) -> tuple[str, str]:
        """The job's stdout: its path (for messages) and its text."""
        path = os.path.join(self.files_dir(), self.output_names()[0])
        with open(path, errors="replace") as fp:
            return path, fp.read()

    def job_output_text(self) -> str:
        """The job's stdout and stderr (scheduler messages, a packed job's own)."""
        text = ""
        for name in self.output_names():
            path = os.path.join(self.files_dir(), name)
            if os.path.exists(path):
                with open(path, errors="replace") as fp:
                    text += fp.read()
        return text
