"""Intel MPI Benchmarks (IMB-MPI1) over every transport and rank mapping.

One IMB-MPI1 run per (transport, mapping) executes all selected benchmarks
(PingPong, PingPing, Sendrecv, Exchange, Allreduce, Alltoall, Bcast,
Barrier) and reports, for each benchmark, its latency at 8 B and at the
largest size (IMB's t[usec] for point-to-point, t_avg for collectives) and
its peak bandwidth where IMB reports one; for PingPong, the whole latency
and bandwidth curve, the fit ``t = lambda + size/b`` and the protocol
switch sizes (``protocol_switches``). The variables are listed, from their
declaration, on this check's page.

The job launches the program ``repetitions`` times (3) with the same command
line; each value is the median over the launches with their range (75 %
coverage at 3; ``-S ImbCheck.repetitions=5``: 93.75 %), and the protocol
switches are those most launches found.

IMB-MPI1 is looked up in ``-S ImbCheck.suite_dir``, the environment's
``extras['benchmark_dirs']['imb']``, then the environment's PATH (Intel MPI
ships it); without it the check is skipped with the places it looked.
``ImbSourceCheck`` is the last resort: the same check on IMB built from its
release tarball, for the environments where no prebuilt IMB-MPI1 is found.

A ``+spack`` environment runs neither: ``ImbSpackCheck`` runs the same check
on the ``intel-mpi-benchmarks ^<mpi>`` of its Spack environment.
"""


import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, variable

from sentinel.analysis.standard import IMB_BENCHMARKS, IMB_SPEC, imb_values
from sentinel.analysis.variables import Values
from sentinel.parsers import imb
from sentinel.rfm.compat import selection
from sentinel.rfm.standard import ImbLaunches, StandardSuiteCheck, build_variants
from sentinel.rfm.standard_build import ImbBuild, SpackImbBuild


@selection.simple_test
class ImbCheck(ImbLaunches, StandardSuiteCheck):
    """IMB-MPI1 point-to-point and collective benchmarks over one transport and mapping."""

    #: IMB-MPI1 benchmarks to run, in one invocation.
    #:
    #: :type: :class:`List[str]`
    benchmarks = variable(typ.List[typ.Str["|".join(IMB_BENCHMARKS)]],
                          value=list(IMB_BENCHMARKS))

    #: Largest message size as a power of two (IMB ``-msglog``; 22 = 4 MiB).
    #:
    #: :type: :class:`int`
    msglog = variable(int, value=22)

    #: ``-msglog`` of an environment where it is not :attr:`msglog`
    #: (``-S ImbCheck.msglog_by_environ=intelmpi:22``: a study that ran one
    #: MPI at IMB's default sizes and the other up to 256 MiB).
    #:
    #: :type: :class:`Dict[str, int]`
    msglog_by_environ = variable(typ.Dict[str, int], value={})

    spec = IMB_SPEC
    release_variant = "ImbSourceCheck"
    tags = {"imb", "nightly", "acceptance"}
    rotates = True

    @run_before("run")
    def set_options(self) -> None:
        msglog = self.msglog_by_environ.get(self.current_environ.name, self.msglog)
        self.executable_opts = [*self.benchmarks, "-msglog", str(msglog),
                                *self.imb_timing_options()]

    def suite_values(self, out: imb.ImbOutput) -> tuple[Values, list[int]]:
        return imb_values(out, self.benchmarks)


ImbSourceCheck, ImbSpackCheck = build_variants(ImbCheck, ImbBuild, SpackImbBuild, "IMB")
