"""Build fixtures: one place decides how a benchmark source is built.

The wrapper build compiles ``src/bench/<bench>`` with the programming
environment's MPI compiler wrapper (ReFrame passes it as ``CC`` to make).
Used as a fixture with ``scope='environment'``, each benchmark builds once
per partition and environment however many checks run it.
"""

from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function, variable

from sentinel.paths import bench_dir


class BenchBuild(rfm.CompileOnlyRegressionTest):
    """Compile one of the suite's C benchmarks with the environment's wrapper."""

    #: Benchmark to build: a directory under ``src/bench`` and its make target.
    #:
    #: :type: :class:`str`
    #: :default: required
    bench = variable(str)

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    sourcesdir = str(bench_dir())
    build_system = "Make"
    tags = {"build"}

    @run_before("compile")
    def select_target(self) -> None:
        """Build only this benchmark's make target."""
        self.build_system.options = [self.bench]
        self.build_system.max_concurrency = 1

    @property
    def executable_path(self) -> str:
        """Absolute path of the built benchmark."""
        return os.path.join(self.stagedir, self.bench, self.bench)

    @sanity_function
    def binary_built(self):
        """The build produced the executable."""
        return sn.assert_true(
            os.path.exists(self.executable_path),
            msg=f"{self.bench}: build produced no {self.executable_path}",
        )
