"""Build fixtures: one place decides how a benchmark source is built.

* ``BenchBuild`` compiles ``src/bench/<bench>`` with the programming
  environment's MPI compiler wrapper (ReFrame passes it as ``CC`` to make),
  or in ``+spack`` environments installs it through Spack.
* ``SpackOsuBuild``/``SpackImbBuild`` install OSU or IMB from the
  environment's Spack environment (``+spack`` environments).
* ``FetchOsu``/``FetchImb`` download a standard suite's release tarball once
  per session and check its SHA-256; ``OsuBuild``/``ImbBuild`` build it with
  the environment's wrappers, unless a prebuilt copy is found for that
  environment (then they skip, and so do the checks that use them).

Used as fixtures with ``scope='environment'``, each benchmark builds once per
partition and environment however many checks run it.
"""

from __future__ import annotations

import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, run_after, run_before, sanity_function, variable

from sentinel.errors import SentinelError
from sentinel.parsers.provenance import compiler_command, compiler_version, not_found
from sentinel.paths import bench_dir
from sentinel.site.binaries import find_program
from sentinel.site.sources import file_sha256, recipe, release, unreachable
from sentinel.site.spack import (
    externals_commands,
    install_prefix,
    installed_spec,
    spack_setup,
    uses_spack,
)

#: Where a build writes its compiler's ``--version`` (in its stage directory).
COMPILER_FILE = "rfm_compiler.txt"


def _build_with_spack(test: rfm.RegressionTest, spec: str) -> None:
    """Make ``test`` install ``spec`` in its environment's Spack environment."""
    test.build_system = "Spack"
    test.build_system.environment = spack_setup(test.current_environ).env
    # Made when a build first needs them, never when the configuration loads.
    test.prebuild_cmds = externals_commands(test.current_partition.environs)
    # The spec is in the environment's spack.yaml: no `spack add`.
    test.build_system.install_opts = [shlex.quote(spec)]
    test.build_system.emit_load_cmds = False


def _spack_prefix(test: rfm.RegressionTest, spec: str) -> str:
    """Where Spack installed ``spec`` for ``test``'s environment."""
    env_vars = {**os.environ, **{k: os.path.expandvars(v) for k, v in
                                 test.current_environ.env_vars.items()}}
    return install_prefix(spack_setup(test.current_environ), spec, env_vars)


class SpackRecord(rfm.RegressionTestPlugin):
    """What a build recorded of its Spack install (empty for wrapper builds)."""

    #: The Spack spec installed. Empty: the default of the build
    #: (``sentinel-bench bench=<b> ^<mpi>``, ``osu-micro-benchmarks ^<mpi>``);
    #: ``-S SpackOsuBuild.spack_spec='osu-micro-benchmarks@7.4 ^openmpi'``
    #: installs another one, which the Spack environment must list.
    #:
    #: :type: :class:`str`
    spack_spec = variable(str, value="", loggable=True)

    #: Where Spack installed it (known after the build).
    #:
    #: :type: :class:`str`
    install_prefix = variable(str, value="", loggable=True)

    #: What Spack installed, from its ``spec.json``: ``name@version
    #: %compiler /hash`` (a changed hash: something it depends on changed).
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set after a Spack build's sanity)
    spack_installed = variable(str, value="", loggable=True)

    @run_after("sanity")
    def record_spack_install(self) -> None:
        """The concrete spec and compiler Spack recorded of the install."""
        if not self.install_prefix or not self.spack_spec or self.is_dry_run():
            return
        try:
            spec = installed_spec(self.install_prefix)
        except SentinelError as err:
            self.spack_installed = self.compiler = not_found(str(err))
            return
        self.spack_installed = spec.concrete
        self.compiler = (f"{spec.compiler} (Spack)" if spec.compiler
                         else not_found(f"Spack's spec.json of {self.install_prefix} "
                                        "names no compiler"))


class RecordsSkip(rfm.RegressionTestPlugin):
    """A test whose skip keeps its message in the run report (``skip_reason``).

    ReFrame 4.10's run report has no field for a skip's message; the report
    groups skips by it, and names it for the tests skipped because this one
    was (their dependents). Mixed in before ReFrame's test class, so that
    its ``skip`` is the one called.
    """

    #: Why the test case was skipped ('' when it was not).
    #:
    #: :type: :class:`str`
    skip_reason = variable(str, value="", loggable=True)

    def skip(self, msg: str | None = None) -> None:
        """Skip the test case, keeping ``msg`` in the run report (``skip_reason``)."""
        self.skip_reason = msg or ""
        super().skip(msg)


class BuildFixture(RecordsSkip, rfm.CompileOnlyRegressionTest):
    """What every build fixture shares: any partition, and no sources copied by ReFrame.

    Copies are made by hand where needed: a Spack dev build leaves links to its
    stages in src/bench, which a copy of the whole directory would follow.
    """

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    sourcesdir = None
    tags = {"build"}

    #: The compiler the build used: ``<cc>: <first line of its --version>``
    #: (a Spack build: the compiler Spack recorded), or ``not found (<why>)``.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set after the build's sanity)
    compiler = variable(str, value="", loggable=True)

    @property
    def compiler_name(self) -> str:
        """The C compiler the build runs: the environment's ``cc``."""
        return self.current_environ.cc or "cc"

    @property
    def by_spack(self) -> bool:
        """Whether Spack builds it (its spec is set before the compile stage)."""
        return bool(getattr(self, "spack_spec", ""))

    @run_before("compile", always_last=True)
    def ask_compiler_version(self) -> None:
        """After a wrapper build, write the compiler's ``--version`` to :data:`COMPILER_FILE`."""
        if not self.by_spack:
            # Absolute: a suite's install commands may change directory.
            path = os.path.join(self.stagedir, COMPILER_FILE)
            self.postbuild_cmds.append(compiler_command(self.compiler_name, path))

    @run_after("sanity")
    def record_compiler(self) -> None:
        """:attr:`compiler` from what a wrapper build wrote (a Spack build records its own)."""
        if self.by_spack or self.is_dry_run():
            return
        try:
            with open(os.path.join(self.stagedir, COMPILER_FILE), errors="replace") as fp:
                text = fp.read()
        except OSError as err:
            self.compiler = not_found(f"{COMPILER_FILE}: {err.strerror}")
            return
        self.compiler = compiler_version(text, self.compiler_name)


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


class BenchBuild(BuildFixture, SpackRecord):
    """Compile one of the suite's C benchmarks.

    In a ``+spack`` environment through Spack (``sentinel-bench bench=<bench>
    ^<mpi>`` of its Spack environment; installs are reused across tests and
    nights), elsewhere with the environment's MPI wrapper.
    """

    #: Benchmark to build: a directory under ``src/bench`` and its make target.
    #:
    #: :type: :class:`str`
    #: :default: required
    bench = variable(str)

    #: Build for GPU buffers with the environment's GPU runtime
    #: (:func:`gpu_runtime`: ``make GPU=cuda`` or ``GPU=rocm``).
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    gpu = variable(bool, value=False)

    build_system = "Make"

    @run_after("setup")
    def require_gpu_runtime(self) -> None:
        """Skip, with the reason, a GPU build in an environment whose MPI is not GPU-aware."""
        if self.gpu:
            require_gpu_aware(self)

    @run_before("compile")
    def select_build(self) -> None:
        """Spack where the environment has it, else this benchmark's make target."""
        env = self.current_environ
        if uses_spack(env) and self.gpu:
            raise SentinelError(f"environment {env.name}: the sentinel-bench Spack package has "
                                "no GPU variant; build the GPU pt2pt with the MPI wrapper "
                                "(an environment without the 'spack' feature)")
        if uses_spack(env):
            # -S spack_spec=... (e.g. a compiler or variant) wins over the default.
            self.spack_spec = self.spack_spec or spack_setup(env).bench_spec(self.bench)
            _build_with_spack(self, self.spack_spec)
            return
        src = bench_dir()
        self.prebuild_cmds = [
            "cp -R " + " ".join(shlex.quote(str(src / part))
                                for part in ("Makefile", "common", "host", self.bench)) + " .",
            # A binary built in the checkout is not necessarily this MPI's.
            "make clean",
        ]
        self.build_system.options = [self.bench, *(gpu_make_options(env) if self.gpu else [])]
        self.build_system.max_concurrency = 1

    @property
    def executable_path(self) -> str:
        """Absolute path of the built benchmark."""
        return self.program(self.bench)

    @property
    def host_probe_path(self) -> str:
        """Absolute path of the host probe built with it (``src/bench/host``)."""
        return self.program("host")

    def program(self, name: str) -> str:
        """Absolute path of the program ``name`` this build made."""
        if self.install_prefix:
            return os.path.join(self.install_prefix, "bin", name)
        return os.path.join(self.stagedir, name, name)

    @sanity_function
    def binary_built(self):
        """The build produced the executable (Spack: where Spack installed it)."""
        if self.spack_spec and not self.is_dry_run():
            self.install_prefix = _spack_prefix(self, self.spack_spec)
        return sn.assert_true(
            os.path.exists(self.executable_path),
            msg=f"{self.bench}: build produced no {self.executable_path}",
        )


#: An environment's GPU-aware MPI, by feature: the make variable for each.
GPU_RUNTIMES = {"cuda": "CUDA_HOME", "rocm": "ROCM_PATH"}


def gpu_runtime(environ) -> str | None:
    """``cuda`` or ``rocm``: the GPU runtime the environment's MPI is aware of (its features)."""
    found = [name for name in GPU_RUNTIMES if name in environ.features]
    return found[0] if found else None


def require_gpu_aware(test) -> None:
    """Skip ``test``, with the reason, where its environment's MPI is not GPU-aware."""
    env = test.current_environ
    test.skip_if(gpu_runtime(env) is None,
                 f"environment {env.name} declares no GPU-aware MPI (feature "
                 f"{' or '.join(GPU_RUNTIMES)}): device buffers need one")


def gpu_make_options(environ) -> list[str]:
    """``GPU=cuda CUDA_HOME=<extras['gpu_home']>`` for src/bench's Makefile.

    Without ``extras['gpu_home']`` the ``CUDA_HOME`` / ``ROCM_PATH`` a module
    exported holds, else the Makefile's default (``/usr/local/cuda``, ``/opt/rocm``).
    """
    runtime = gpu_runtime(environ)
    if runtime is None:
        raise SentinelError(f"environment {environ.name} declares no GPU-aware MPI "
                            f"(feature {' or '.join(GPU_RUNTIMES)})")
    home = environ.extras.get("gpu_home")
    return [f"GPU={runtime}", *([f"{GPU_RUNTIMES[runtime]}={home}"] if home else [])]


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
        _build_with_spack(self, self.spack_spec)

    @sanity_function
    def installed(self):
        """Spack installed the suite, with its program, for this environment."""
        if self.is_dry_run():
            return True
        self.install_prefix = _spack_prefix(self, self.spack_spec)
        return self.installed_below(self.install_prefix, self.spack_spec)


class SpackOsuBuild(SpackSuiteBuild):
    """OSU Micro-Benchmarks from the environment's Spack environment."""

    suite = "osu"
    program = "osu_latency"


class SpackImbBuild(SpackSuiteBuild):
    """Intel MPI Benchmarks from the environment's Spack environment."""

    suite = "imb"
    program = "IMB-MPI1"
