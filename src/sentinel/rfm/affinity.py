"""Placement proof for benchmarks that do not report it (OSU, IMB)."""

from __future__ import annotations

import os

import reframe as rfm
from reframe.core.builtins import fixture, run_before

from sentinel.parsers.sentinel_output import BenchOutput, parse, require_complete
from sentinel.rfm.build import BenchBuild


class AffinityProbe(rfm.RegressionTestPlugin):
    """Placement proof for benchmarks that do not report it (OSU, IMB).

    Runs the suite's affinity probe with the same launcher, options and
    environment immediately before the benchmark; its SENTINEL_AFFINITY lines
    validate the mapping the options produce.
    """

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("files_dir", "output_names", "probe")

    probe = fixture(BenchBuild, scope="environment", variables={"bench": "affinity"})

    #: Whether a series launches the probe before each of its launches
    #: itself (one launch per process count), instead of once here.
    probe_each_launch: bool = False

    @run_before("run", always_last=True)
    def launch_probe_first(self) -> None:
        """Prepend the probe launch, built from the final launcher command."""
        if self.probe_each_launch:
            return
        # ReFrame copies these into the job only inside run(), after this
        # hook; the launcher command (mpirun -np N) needs them now.
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        launch = self.job.launcher.run_command(self.job)
        self.prerun_cmds.append(f"{launch} {self.probe.executable_path}")

    def placement_records(self, out) -> BenchOutput:
        """The probe's world size and affinity lines stand for the benchmark's."""
        return self.probe_output()

    def probe_output(self) -> BenchOutput:
        """The probe's records from the job's stdout; truncated is an error."""
        path = os.path.join(self.files_dir(), self.output_names()[0])
        with open(path, errors="replace") as fp:
            out = parse(fp.read(), "affinity")
        require_complete(out, path)
        return out
