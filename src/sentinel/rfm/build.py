"""The build every fixture shares, and the build of the suite's own benchmarks.

* ``BuildFixture`` is what all build fixtures share: any partition, and the
  compiler the build used recorded (:attr:`BuildFixture.compiler`).
* ``BenchBuild`` compiles ``src/bench/<bench>`` with the programming
  environment's MPI compiler wrapper (ReFrame passes it as ``CC`` to make),
  or in ``+spack`` environments installs it through Spack; with ``gpu`` for
  the environment's GPU runtime.

The standard suites' builds are in :mod:`sentinel.rfm.standard_build`. Used
as fixtures with ``scope='environment'``, each benchmark builds once per
partition and environment however many checks run it.
"""

from __future__ import annotations

import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable

from sentinel.errors import SentinelError
from sentinel.parsers.provenance import compiler_command, compiler_version, not_found
from sentinel.paths import bench_dir
from sentinel.rfm.compat.skips import RecordsSkip
from sentinel.rfm.gpu_aware import GPU_RUNTIMES, gpu_runtime, require_gpu_aware
from sentinel.rfm.spack_build import SpackRecord, build_with_spack, spack_prefix
from sentinel.site.spack import spack_setup, uses_spack

#: Where a build writes its compiler's ``--version`` (in its stage directory).
COMPILER_FILE = "rfm_compiler.txt"


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
    #: (:func:`~sentinel.rfm.gpu_aware.gpu_runtime`: ``make GPU=cuda`` or ``GPU=rocm``).
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    gpu = variable(bool, value=False)

    #: A directory where built benchmarks are kept and reused: the build then
    #: copies the benchmark and the host probe from there when its key (the
    #: sources, the compiler wrapper's path, version and link line, the make
    #: options) was built before, and keeps what it makes (:func:`cached_make`).
    #: ``sentinel health`` sets it, so that a node's check builds once.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (build at every run)
    build_cache = variable(str, value="")

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
            build_with_spack(self, self.spack_spec)
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
        if self.build_cache:
            (make,) = self.build_system.emit_build_commands(env)  # ReFrame's own make line
            self.build_system = "CustomBuild"
            self.build_system.commands = cached_make(self.bench, self.build_cache,
                                                     env.cc or "cc", make)

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
            self.install_prefix = spack_prefix(self, self.spack_spec)
        return sn.assert_true(
            os.path.exists(self.executable_path),
            msg=f"{self.bench}: build produced no {self.executable_path}",
        )


def cached_make(bench: str, cache: str, compiler: str, make: str) -> list[str]:
    """Shell commands that reuse ``bench`` and the host probe from ``cache``, or ``make`` them.

    ``make`` is the command ReFrame's Make build system would run. The key
    hashes what the binaries depend on: the sources copied into the stage,
    that command (compiler, flags, options), and the ``compiler`` wrapper's
    path, ``--version`` and link line (``-show``, Open MPI's ``--showme``),
    so a new MPI or compiler builds anew. A build is kept in a directory of
    its own, renamed into place whole: nodes sharing the cache never read
    half a build.
    """
    cc = shlex.quote(compiler)
    store = f'{shlex.quote(cache)}/{shlex.quote(bench)}-"$key"'
    built = f"{bench}/{bench} host/host"
    return [
        f"key=$({{ cat Makefile common/* host/*.c {bench}/*.c; echo {shlex.quote(make)}; "
        f"command -v {cc}; {cc} --version; {cc} -show || {cc} --showme; }} 2>&1 "
        "| sha256sum | cut -c1-16)",
        f"if [ -x {store}/{bench} ] && [ -x {store}/host ]; then "
        f"cp -p {store}/{bench} {bench}/{bench} && cp -p {store}/host host/host && "
        f'echo "sentinel: {bench} and host reused from "{store}; '
        f"else {make} && mkdir -p {shlex.quote(cache)} && "
        f'tmp=$(mktemp -d {shlex.quote(cache)}/.new.XXXXXX) && cp -p {built} "$tmp"/ && '
        f'{{ mv -T "$tmp" {store} 2>/dev/null || rm -rf "$tmp"; }}; fi',
    ]


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
