"""Third-party suites (OSU, IMB): one base, the builds they come from as plugins.

:class:`StandardSuiteCheck` finds the suite's program, proves placement with
the affinity probe (the suites report none) and goes through the one sanity
path. Where the program comes from is a plugin: prebuilt (the base: a check
variable, the environment's ``benchmark_dirs``, its PATH),
:class:`FromRelease` (built from the release tarball by the check's
``suite_build`` fixture) or :class:`FromSpack` (installed from the
environment's Spack environment by its ``suite_build`` fixture). A check
file adds a suite with one family class and one line per variant.
"""

from __future__ import annotations

from collections import Counter

import reframe as rfm
from reframe.core.builtins import fixture, run_after, variable
from reframe.core.meta import make_test

from sentinel.analysis.fits import median_of
from sentinel.analysis.variables import Values
from sentinel.errors import SentinelError
from sentinel.parsers import imb
from sentinel.parsers.imb import ImbOutput
from sentinel.rfm.affinity import AffinityProbe
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.compat import selection
from sentinel.rfm.compat.generation import offers_feature
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.switches import ProtocolSwitches
from sentinel.site.binaries import find_program


class StandardSuiteCheck(AffinityProbe, TransportMappingTest, PartitionReferences,
                         ProtocolSwitches):
    """One program of a third-party suite over one transport and mapping.

    A family sets :attr:`suite` and names its :attr:`program`.
    """

    #: Directory holding the suite's programs (or its install prefix),
    #: searched first (``-S OsuCheck.suite_dir=/site/osu``).
    #:
    #: :type: :class:`str`
    suite_dir = variable(str, value="")

    #: The program that ran.
    #:
    #: :type: :class:`str`
    program_path = variable(str, value="", loggable=True)

    #: Launches of the program, one after another in the job. Each value is
    #: the median over them with the order-statistics interval of the median
    #: (below 9 launches the range: it covers with probability 1 - 2^(1-n),
    #: 75 % at 3, 93.75 % at 5); 1: one launch, a value without interval.
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=3)

    #: The suite: a key of :mod:`sentinel.site.binaries` and :mod:`sentinel.site.sources`.
    suite: str

    #: The variant that builds the suite from its release tarball (named in
    #: skips; ``""`` where none does).
    release_variant: str

    # A +spack environment takes the suite from its Spack environment (FromSpack).
    environ_features = "-spack"

    @property
    def program(self) -> str:
        """The suite's program this test runs."""
        raise NotImplementedError

    def search_dir(self) -> str:
        """The directory searched first: :attr:`suite_dir`."""
        return self.suite_dir

    def suite_values(self, out) -> tuple[Values, list[int]]:
        """The family's values from one launch's parsed output, and the latency curve's steps."""
        raise NotImplementedError

    def launch_outputs(self, out) -> list:
        """What :meth:`read_output` returned, one item per launch (it returns a list)."""
        return out

    def repeated_launches(self) -> list[str]:
        """The main launch again, ``repetitions - 1`` times, with the same command line."""
        main = " ".join([self.job.launcher.run_command(self.job), self.executable,
                         *self.executable_opts])
        return [main] * (self.repetitions - 1)

    def require_launches(self, outputs: list, stdout: str) -> list:
        """``outputs``, one per launch; fewer means a launch failed or was cut short."""
        if len(outputs) != self.repetitions:
            raise SentinelError(f"{stdout}: {len(outputs)} {self.program} output(s), the job "
                                f"launched it {self.repetitions} time(s) (repetitions): a "
                                "launch failed or was cut short")
        return outputs

    def analyse(self, out) -> Values:
        """The median over the launches of each value; the protocol switches found by most."""
        runs = [self.suite_values(launch) for launch in self.launch_outputs(out)]
        found = Counter(size for _, switches in runs for size in switches)
        self.record_switches(sorted(s for s, n in found.items() if 2 * n > len(runs)))
        return median_of([values for values, _ in runs])

    @run_after("setup")
    def locate_program(self) -> None:
        """Find the program, or skip naming every place looked in."""
        env = self.current_environ
        found = find_program(self.program, self.suite, env, self.search_dir())
        if found.path is None and self.is_dry_run() and found.declared:
            found.path = found.declared  # show the command the site's layout implies
        builds = f"; {self.release_variant} builds it from the release tarball" \
            if self.release_variant else ""
        self.skip_if(found.path is None, f"{found.reason(self.program, env.name)}{builds}")
        self.program_path = self.executable = found.path


class ImbLaunches(rfm.RegressionTestPlugin):
    """IMB-MPI1 in a :class:`StandardSuiteCheck`: its timing options and its outputs."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("require_launches", "stdout_text")

    #: Repetitions per size (IMB ``-iter``; IMB lowers it for large sizes).
    #:
    #: :type: :class:`int`
    iterations = variable(int, value=1000)

    #: Seconds IMB may spend on one size (IMB ``-time``); a size it could not
    #: finish is reported unresolved.
    #:
    #: :type: :class:`float`
    time_per_size = variable(float, value=10.0)

    suite = "imb"
    program = "IMB-MPI1"

    def imb_timing_options(self) -> list[str]:
        """IMB's ``-iter`` and ``-time`` from :attr:`iterations` and :attr:`time_per_size`."""
        return ["-iter", str(self.iterations), "-time", str(self.time_per_size)]

    def read_output(self) -> list[ImbOutput]:
        """The job's IMB outputs, one complete one per launch."""
        stdout, text = self.stdout_text()
        return [imb.parse_complete(chunk, stdout)
                for chunk in self.require_launches(imb.split(text), stdout)]


class FromRelease(rfm.RegressionTestPlugin):
    """Variant: the suite built from its release tarball by the ``suite_build`` fixture.

    Tagged ``source`` by :func:`build_variants` (``-t source`` selects it).
    """

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("suite_build",)

    def search_dir(self) -> str:
        """Where the release build installed the suite."""
        return self.suite_build.install_prefix


def spack_test(cls: type) -> type:
    """``selection.simple_test`` for a :class:`FromSpack` variant, where it runs.

    Registered only where an environment of the selected system has the
    ``spack`` feature: elsewhere ReFrame would instantiate every variant
    (about 2.5 ms each, 405 on the 10-partition example site) for each to
    find no environment.
    """
    return selection.simple_test(cls) if offers_feature("spack") else cls


class FromSpack(rfm.RegressionTestPlugin):
    """Variant: the suite from the environment's Spack environment (``suite_build``).

    Tagged ``spack`` by :func:`build_variants` (``-t spack`` selects it).
    """

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("suite_build",)

    environ_features = "+spack"

    def search_dir(self) -> str:
        """Where Spack installed the suite (a dry run installs nothing: where it would)."""
        build = self.suite_build
        return build.install_prefix or f"$(spack location -i {build.spack_spec})"


def build_variants(check: type, release_build: type, spack_build: type,
                   suite: str) -> tuple[type, type]:
    """``check``'s two build variants, registered in its module.

    ``<Name>SourceCheck``: the suite built from its release tarball by
    ``release_build``, where no prebuilt program is found; ``<Name>SpackCheck``:
    installed from the environment's Spack environment by ``spack_build``
    (registered where an environment offers Spack: :func:`spack_test`).
    """
    stem = check.__name__.removesuffix("Check")
    source, spack = (
        make_test(f"{stem}{kind}Check", (plugin, check),
                  {"suite_build": fixture(build, scope="environment"),
                   "tags": check.tags | {tag},
                   "__doc__": f"{check.__name__} on {suite} {how}."},
                  module=check.__module__)
        for kind, plugin, build, tag, how in (
            ("Source", FromRelease, release_build, "source",
             "built from its release tarball, where no prebuilt one is found"),
            ("Spack", FromSpack, spack_build, "spack",
             "installed from the environment's Spack environment")))
    return selection.simple_test(source), spack_test(spack)
