"""Builds of the standard suites (OSU Micro-Benchmarks, Intel MPI Benchmarks).

* ``FetchOsu``/``FetchImb`` download a suite's release tarball once per
  session and check its SHA-256; ``OsuBuild``/``ImbBuild`` build it with the
  environment's wrappers, unless a prebuilt copy is found for that
  environment (then they skip, and so do the checks that use them).
* ``SpackOsuBuild``/``SpackImbBuild`` install OSU or IMB from the
  environment's Spack environment (``+spack`` environments).
"""

from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, run_after, run_before, sanity_function, variable

from sentinel.rfm.build import BuildFixture
from sentinel.rfm.compat.skips import RecordsSkip
from sentinel.rfm.spack_build import SpackRecord, build_with_spack, spack_prefix
from sentinel.site.binaries import find_program
from sentinel.site.sources import file_sha256, recipe, release, unreachable
from sentinel.site.spack import spack_setup


class SuiteProgram(rfm.RegressionTestPlugin):
    """A build of a standard suite, known by one of its programs."""

    #: The suite (``osu``, ``imb``).
    #:
    #: :type: :class:`str`
    #: :default: required
    suite = variable(str)

    #: A program of the suite that the install must contain.
    #:
    #: :type: :class:`str`
    #: :default: required
    program = variable(str)

    def installed_below(self, prefix: str, what: str):
        """Sanity: the suite's program is installed below ``prefix`` (``what`` installed it)."""
        found = find_program(self.program, self.suite, self.current_environ, prefix)
        inside = found.path is not None and found.path.startswith(prefix)
        return sn.assert_true(inside, msg=f"{what} installed no {self.program} below {prefix}")


class FetchRelease(RecordsSkip, rfm.RunOnlyRegressionTest):
    """Download a suite's release tarball (on the machine ReFrame runs on)."""

    #: The suite: a key of :data:`sentinel.site.sources.RELEASES`.
    #:
    #: :type: :class:`str`
    #: :default: required
    suite = variable(str)

    #: The tarball's URL: ``""`` for the release the suite pins, or the
    #: site's own copy (``file://``, an internal mirror), which needs ``sha256``.
    #:
    #: :type: :class:`str`
    url = variable(str, value="")

    #: SHA-256 of the tarball at ``url``.
    #:
    #: :type: :class:`str`
    sha256 = variable(str, value="")

    #: What was fetched (file name) and the checksum it must have.
    #:
    #: :type: :class:`str`
    tarball = variable(str, value="", loggable=True)
    expected_sha256 = variable(str, value="")

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    local = True
    executable = "curl"
    tags = {"build"}

    @run_after("setup")
    def locate(self) -> None:
        """Skip, naming the URL and why, when the tarball cannot be fetched."""
        rel = release(self.suite, self.url, self.sha256)
        why = unreachable(rel.url)
        self.skip_if(why is not None,
                     f"{self.suite} release {rel.url} cannot be fetched ({why}); point "
                     f"-S {type(self).__name__}.url at a reachable copy (file:// or a site "
                     f"mirror) together with -S {type(self).__name__}.sha256")
        self.tarball = rel.filename
        self.expected_sha256 = rel.sha256
        self.executable_opts = ["-fsSL", "--retry", "2", "-o", rel.filename, rel.url]

    @sanity_function
    def verified(self):
        """The tarball arrived and has the expected SHA-256."""
        path = os.path.join(self.stagedir, self.tarball)
        got = file_sha256(path) if os.path.isfile(path) else f"no file {path}"
        return sn.assert_eq(got, self.expected_sha256,
                            msg=f"{self.tarball}: SHA-256 {{0}} is not the expected {{1}}")


class FetchOsu(FetchRelease):
    """The OSU Micro-Benchmarks release tarball."""

    suite = "osu"


class FetchImb(FetchRelease):
    """The Intel MPI Benchmarks release tarball."""

    suite = "imb"


class ReleaseBuild(BuildFixture, SuiteProgram):
    """Build a fetched release with the environment's MPI wrappers.

    A prebuilt :attr:`program` for the environment makes the build unnecessary.
    """

    build_locally = True

    #: Where the build installs the suite (set at setup: ``<stagedir>/install``).
    #:
    #: :type: :class:`str`
    install_prefix = variable(str, value="", loggable=True)

    @run_after("setup")
    def prefer_prebuilt(self) -> None:
        """A prebuilt copy for this environment wins over building one."""
        found = find_program(self.program, self.suite, self.current_environ)
        self.skip_if(found.path is not None,
                     f"a prebuilt {self.program} is used for environment "
                     f"{self.current_environ.name}: {found.path}")
        self.install_prefix = os.path.join(self.stagedir, "install")

    @run_before("compile")
    def set_build(self) -> None:
        """Unpack the tarball; build it (ReFrame passes the environment's cc and cxx); install."""
        env = self.current_environ
        how = recipe(self.suite, env.cc, env.cxx)
        fetched = os.path.join(self.source.stagedir, self.source.tarball)
        self.prebuild_cmds = [f"tar -xzf {fetched} --strip-components=1"]
        self.build_system = how.build_system
        # The environment's wrappers and nothing else (no Fortran: none of the
        # suites needs it, and an unset FC would name a compiler that is absent).
        self.build_system.flags_from_environ = False
        self.build_system.cc, self.build_system.cxx = env.cc, env.cxx
        options = [o.format(prefix=self.install_prefix) for o in how.options]
        if how.build_system == "Autotools":
            self.build_system.config_opts = options
        else:
            self.build_system.options = options
        self.build_system.max_concurrency = 2
        self.postbuild_cmds = [c.format(prefix=self.install_prefix) for c in how.install]

    @sanity_function
    def installed(self):
        """The build installed the suite's program."""
        return self.installed_below(self.install_prefix, f"{self.suite} build")


class OsuBuild(ReleaseBuild):
    """OSU Micro-Benchmarks built from the release tarball."""

    suite = "osu"
    program = "osu_latency"
    source = fixture(FetchOsu, scope="session")


class ImbBuild(ReleaseBuild):
    """Intel MPI Benchmarks (IMB-MPI1) built from the release tarball."""

    suite = "imb"
    program = "IMB-MPI1"
    source = fixture(FetchImb, scope="session")


class SpackSuiteBuild(BuildFixture, SpackRecord, SuiteProgram):
    """Install a standard suite from the environment's Spack environment.

    Only for ``+spack`` environments: the spec (``osu-micro-benchmarks
    ^openmpi``) is one the environment lists, installed once and reused.
    """

    valid_prog_environs = ["+spack"]
    build_system = "Spack"

    @run_before("compile")
    def select_build(self) -> None:
        """``spack install`` of the suite against the environment's MPI."""
        default = spack_setup(self.current_environ).suite_spec(self.suite)
        self.spack_spec = self.spack_spec or default  # -S ...spack_spec=... wins
        build_with_spack(self, self.spack_spec)

    @sanity_function
    def installed(self):
        """Spack installed the suite, with its program, for this environment."""
        if self.is_dry_run():
            return True
        self.install_prefix = spack_prefix(self, self.spack_spec)
        return self.installed_below(self.install_prefix, self.spack_spec)


class SpackOsuBuild(SpackSuiteBuild):
    """OSU Micro-Benchmarks from the environment's Spack environment."""

    suite = "osu"
    program = "osu_latency"


class SpackImbBuild(SpackSuiteBuild):
    """Intel MPI Benchmarks from the environment's Spack environment."""

    suite = "imb"
    program = "IMB-MPI1"
