"""OSU Micro-Benchmarks over every transport and rank mapping.

One test per OSU benchmark (one tuple parameter generates them all, as in
ReFrame's hpctestlib): osu_latency, osu_bw, osu_bibw, osu_mbw_mr,
osu_allreduce, osu_bcast, osu_alltoall, osu_barrier. Performance variables:

* latency benchmarks: ``latency_8B`` and ``latency_<largest>B`` (us);
  osu_barrier: ``latency``; osu_latency also the whole curve
  ``latency_<size>B``, the fit ``t = lambda + size/b`` (``fit_lambda``,
  ``fit_bw``) and the protocol switch sizes (``protocol_switches``);
* bandwidth benchmarks: ``bw_peak`` (MB/s); osu_bw also the curve
  ``bw_<size>B``; osu_mbw_mr also ``msg_rate_peak``.

The binaries are looked up in ``-S OsuCheck.osu_dir``, the environment's
``extras['benchmark_dirs']['osu']`` (an install prefix or a build tree: 5.x
``mpi/``, 7.x ``c/mpi/``), then the environment's PATH; without them the
check is skipped with the places it looked. ``OsuSourceCheck`` is the last
resort: the same checks on OSU built from its release tarball, for the
environments where no prebuilt OSU is found (``sentinel.site.sources``).

A ``+spack`` environment runs neither: ``OsuSpackCheck`` runs the same
checks on the ``osu-micro-benchmarks ^<mpi>`` of its Spack environment,
installed once per environment and reused across nights.
"""


import reframe as rfm
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)
from reframe.core.exceptions import SanityError

from sentinel.analysis.standard import OSU_BENCHMARKS, osu_options, osu_values
from sentinel.errors import SentinelError
from sentinel.parsers import osu
from sentinel.rfm.base import AffinityProbe, PartitionReferences, TransportMappingTest
from sentinel.rfm.build import OsuBuild, SpackOsuBuild
from sentinel.site.binaries import find_program


@rfm.simple_test
class OsuCheck(TransportMappingTest, AffinityProbe, PartitionReferences):
    """One OSU micro-benchmark over one transport and mapping."""

    #: The benchmark: ``(program, kind)`` with kind ``latency`` or ``bandwidth``.
    #:
    #: :type: :class:`Tuple[str, str]`
    benchmark_info = parameter(list(OSU_BENCHMARKS), fmt=lambda x: x[0], loggable=True)

    #: Largest message size of the point-to-point benchmarks. OSU's own
    #: maximum (4 MiB) passes no option; another value needs OSU >= 5.4 (``-m``).
    #:
    #: :type: :class:`int`
    max_size = variable(int, value=4194304)

    #: Largest message size of the collectives (OSU's own default: 1 MiB).
    #:
    #: :type: :class:`int`
    max_size_collective = variable(int, value=1048576)

    #: Timed iterations per size (OSU ``-i``; 0 keeps OSU's default; not
    #: passed to osu_mbw_mr and osu_barrier, which lack it in OSU 5.x).
    #:
    #: :type: :class:`int`
    iterations = variable(int, value=0)

    #: Warm-up iterations per size (OSU ``-x``; 0 keeps OSU's default).
    #:
    #: :type: :class:`int`
    warmup = variable(int, value=0)

    #: Directory holding the OSU binaries (or an install prefix), searched first.
    #:
    #: :type: :class:`str`
    osu_dir = variable(str, value="")

    #: The OSU program that ran.
    #:
    #: :type: :class:`str`
    osu_path = variable(str, value="", loggable=True)

    #: osu_latency sizes (bytes) where the latency curve steps, comma-separated.
    #:
    #: :type: :class:`str`
    protocol_switches = variable(str, value="", loggable=True)

    reference_index = ("$partition", "$environ", "transport_name", "mapping", "benchmark")
    # A +spack environment takes OSU from its Spack environment (OsuSpackCheck).
    environ_features = "-spack"
    tags = {"osu", "nightly", "acceptance"}

    @property
    def benchmark(self) -> str:
        """The OSU program name (a reference index key)."""
        return self.benchmark_info[0]

    @property
    def _collective(self) -> bool:
        return self.benchmark in ("osu_allreduce", "osu_bcast", "osu_alltoall", "osu_barrier")

    @run_after("setup")
    def find_osu(self) -> None:
        found = find_program(self.benchmark, "osu", self.current_environ, self.osu_dir)
        if found.path is None and self.is_dry_run() and found.declared:
            found.path = found.declared  # show the command the site's layout implies
        self.skip_if(found.path is None,
                     f"{found.reason(self.benchmark, self.current_environ.name)}; "
                     "OsuSourceCheck builds it from the release tarball")
        self.osu_path = found.path

    @run_before("run")
    def set_command(self) -> None:
        self.executable = self.osu_path
        self.executable_opts = osu_options(self.benchmark, self.max_size,
                                           self.max_size_collective, self.iterations,
                                           self.warmup)

    @sanity_function
    def validate(self):
        try:
            stdout, text = self.stdout_text()
            out = osu.parse(text, stdout)
            if self.benchmark != "osu_barrier":
                top = self.max_size_collective if self._collective else self.max_size
                osu.require_sizes(out, top, stdout)
            probe = self.probe_output()
            self.verify_world(probe)
            self.verify_transport()
            self.verify_placement(probe)
            self.values, switches = osu_values(out, self.benchmark)
        except (OSError, SentinelError) as err:
            raise SanityError(str(err)) from None
        self.protocol_switches = ",".join(map(str, switches))
        return True


@rfm.simple_test
class OsuSourceCheck(OsuCheck):
    """OsuCheck on OSU built from its release tarball, where no prebuilt OSU is found."""

    osu_build = fixture(OsuBuild, scope="environment")
    tags = {"osu", "source", "nightly", "acceptance"}

    @run_after("setup")
    def find_osu(self) -> None:
        self.osu_dir = self.osu_build.install_prefix
        super().find_osu()


@rfm.simple_test
class OsuSpackCheck(OsuCheck):
    """OsuCheck on OSU installed from the environment's Spack environment."""

    osu_build = fixture(SpackOsuBuild, scope="environment")
    environ_features = "+spack"
    tags = {"osu", "spack", "nightly", "acceptance"}

    @run_after("setup")
    def find_osu(self) -> None:
        build = self.osu_build
        # A dry run installs nothing: show where Spack's install would be.
        self.osu_dir = build.install_prefix or f"$(spack location -i {build.spack_spec})"
        super().find_osu()
