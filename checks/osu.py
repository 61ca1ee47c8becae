"""OSU Micro-Benchmarks over every transport and rank mapping.

One test per OSU benchmark (one tuple parameter generates them all, as in
ReFrame's hpctestlib): osu_latency, osu_bw, osu_bibw, osu_mbw_mr,
osu_allreduce, osu_bcast, osu_alltoall, osu_barrier. Each reports:

* a latency benchmark: its latency at 8 B and at the largest size (the
  barrier's, once); osu_latency also the whole curve, the fit
  ``t = lambda + size/b`` and the protocol switch sizes
  (``protocol_switches``);
* a bandwidth benchmark: its peak bandwidth; osu_bw also the curve,
  osu_mbw_mr also the peak message rate.

The variables are listed, from their declaration, on this check's page.

The job launches the program ``repetitions`` times (3) with the same command
line; each value is the median over the launches with their range (75 %
coverage at 3; ``-S OsuCheck.repetitions=5``: 93.75 %), and the protocol
switches are those most launches found.

The binaries are looked up in ``-S OsuCheck.suite_dir``, the environment's
``extras['benchmark_dirs']['osu']`` (an install prefix or a build tree: 5.x
``mpi/``, 7.x ``c/mpi/``), then the environment's PATH; without them the
check is skipped with the places it looked. ``OsuSourceCheck`` is the last
resort: the same checks on OSU built from its release tarball, for the
environments where no prebuilt OSU is found (``sentinel.site.sources``).

``OsuGpuCheck`` runs osu_latency, osu_bw and osu_bibw with GPU buffers
(``-d cuda D D``, ``H D``, ``D H``: ``%buffers=device``, ``host-device``,
``device-host``) on partitions with the ``gpu`` feature, in environments
whose MPI is GPU-aware (feature ``cuda`` or ``rocm``); their OSU must be
built with that runtime (``--enable-cuda``). References indexed by the
benchmark and the buffers.

A ``+spack`` environment runs neither: ``OsuSpackCheck`` runs the same
checks on the ``osu-micro-benchmarks ^<mpi>`` of its Spack environment,
installed once per environment and reused across nights.
"""


from reframe.core.builtins import parameter, run_after, run_before, variable

from sentinel.analysis.standard import (
    OSU_BENCHMARKS,
    OSU_BUFFERS,
    OSU_GPU_BENCHMARKS,
    OSU_GPU_SPEC,
    OSU_SPEC,
    osu_gpu_options,
    osu_options,
    osu_values,
)
from sentinel.analysis.variables import Values
from sentinel.parsers import osu
from sentinel.rfm.compat import selection
from sentinel.rfm.gpu import DeviceBuffers
from sentinel.rfm.gpu_aware import gpu_runtime, require_gpu_aware
from sentinel.rfm.standard import StandardSuiteCheck, build_variants
from sentinel.rfm.standard_build import OsuBuild, SpackOsuBuild


@selection.simple_test
class OsuCheck(StandardSuiteCheck):
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

    suite = "osu"
    spec = OSU_SPEC
    release_variant = "OsuSourceCheck"
    tags = {"osu", "nightly", "acceptance"}
    rotates = True

    @property
    def program(self) -> str:
        """The OSU program name."""
        return self.benchmark_info[0]

    @property
    def benchmark(self) -> str:
        """The OSU program name (a reference index key)."""
        return self.program

    @run_before("run")
    def set_options(self) -> None:
        self.executable_opts = osu_options(self.benchmark, self.max_size,
                                           self.max_size_collective, self.iterations,
                                           self.warmup)

    def read_output(self) -> list[osu.OsuOutput]:
        stdout, text = self.stdout_text()
        collective = self.benchmark_info[1] == "latency" and self.benchmark != "osu_latency"
        largest = self.max_size_collective if collective else self.max_size
        outs = []
        for chunk in self.require_launches(osu.split(text), stdout):
            out = osu.parse(chunk, stdout)
            if self.benchmark != "osu_barrier":
                osu.require_sizes(out, largest, stdout)
            outs.append(out)
        return outs

    def suite_values(self, out: osu.OsuOutput) -> tuple[Values, list[int]]:
        return osu_values(out, self.benchmark)


@selection.simple_test
class OsuGpuCheck(DeviceBuffers, OsuCheck):
    """osu_latency, osu_bw or osu_bibw with GPU buffers, on partitions with GPUs."""

    benchmark_info = parameter(list(OSU_GPU_BENCHMARKS), fmt=lambda x: x[0], loggable=True)

    #: Where the buffers of ranks 0 and 1 live: ``device`` (OSU ``D D``),
    #: ``host-device`` (``H D``), ``device-host`` (``D H``).
    #:
    #: :type: :class:`str`
    buffers = parameter(list(OSU_BUFFERS), loggable=True)

    spec = OSU_GPU_SPEC
    valid_systems = ["+mpi +gpu"]
    tags = {"osu", "gpu", "nightly", "acceptance"}

    @run_after("setup")
    def need_gpu_aware_mpi(self) -> None:
        require_gpu_aware(self)

    @run_before("run")
    def set_gpu_options(self) -> None:
        self.executable_opts += osu_gpu_options(gpu_runtime(self.current_environ), self.buffers)


OsuSourceCheck, OsuSpackCheck = build_variants(OsuCheck, OsuBuild, SpackOsuBuild, "OSU")
