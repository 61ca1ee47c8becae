"""Builds through Spack: how a build fixture installs a spec, and what it records.

In ``+spack`` environments a build installs its spec (one the environment's
``spack.yaml`` lists) in that Spack environment; installs are reused across
tests and nights. :class:`SpackRecord` is what such a build records of the
install; :func:`build_with_spack` and :func:`spack_prefix` are the steps a
build fixture takes.
"""

from __future__ import annotations

import os
import shlex

import reframe as rfm
from reframe.core.builtins import run_after, variable

from sentinel.errors import SentinelError
from sentinel.parsers.provenance import not_found
from sentinel.site.spack import externals_commands, install_prefix, installed_spec, spack_setup


def build_with_spack(test: rfm.RegressionTest, spec: str) -> None:
    """Make ``test`` install ``spec`` in its environment's Spack environment."""
    test.build_system = "Spack"
    test.build_system.environment = spack_setup(test.current_environ).env
    # Made when a build first needs them, never when the configuration loads.
    test.prebuild_cmds = externals_commands(test.current_partition.environs)
    # The spec is in the environment's spack.yaml: no `spack add`.
    test.build_system.install_opts = [shlex.quote(spec)]
    test.build_system.emit_load_cmds = False


def spack_prefix(test: rfm.RegressionTest, spec: str) -> str:
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
