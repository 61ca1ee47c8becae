"""Where sanity reads a launch's files: the stage directory, or one node's launch.

A test's sanity reads its launch's stdout, stderr and the files the job
wrote beside them (``ldd``, the provenance, the host probe). An each-node
job (:mod:`sentinel.rfm.each_node`) has one such set per node, below its
stage directory: while a node is judged, :attr:`LaunchFiles._here` points
there and every reader follows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import reframe as rfm


@dataclass(frozen=True)
class Here:
    """The files sanity reads: a directory and the names of the launch's output."""

    where: str
    out: str
    err: str


class LaunchFiles(rfm.RegressionTestPlugin):
    """The readers of a launch's files, in the stage directory or the node being judged."""

    _here: Here | None = None

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
