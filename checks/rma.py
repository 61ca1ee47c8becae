"""One-sided communication (RMA) over every transport and rank mapping.

Runs ``src/bench/rma`` between two ranks, rank 0 the origin and rank 1 the
target of a window over the target's own memory (``MPI_Win_create``), and
reports for each operation (``put``, ``get``, ``acc``: ``MPI_Accumulate`` of
integers with ``MPI_SUM``) and each synchronisation (``fence``; ``lock``:
passive target, a shared lock; ``pscw``: post, start, complete, wait):

* the latency: the origin's time for an epoch holding one operation, its
  synchronisation included, at every size;
* the bandwidth: an epoch holding a window of operations, at every size,
  and its peak over sizes;
* that the data of one verified epoch per operation, synchronisation and
  size landed as sent (a wrong byte fails the test naming the operation,
  the synchronisation, the size, the pair and the transport; a corruption
  is never retried away).

Before its values, every launch proves its one-sided path from the
library's log, besides the transport and the placement every check proves:
the path written down for the transport in ``sentinel.mpi.onesided`` (Open
MPI's one-sided component, ``osc rdma``, ``pt2pt`` or ``ucx``, selected
through ``OMPI_MCA_osc``; UCX's native or emulated RMA lanes; the OFI RMA
capability of MPICH and Intel MPI). A run that fell back to an emulated
path where the native one is expected fails, naming the path it used. The
paths of every transport are in the manual's *Transports* page (*One-sided
paths*).

``ImbRmaCheck`` runs IMB-RMA (``Unidir_put``, ``Unidir_get``,
``Accumulate``) over the same transports and mappings, its one-sided path
proven the same way, and reports its times as the ``flush``
synchronisation's variables: one passive epoch over a sample, every
operation completed with ``MPI_Win_flush`` (IMB's ``NON-AGGREGATE`` mode,
the latency) or a sample's operations with one (``AGGREGATE``, the
bandwidth). IMB-RMA is looked up as IMB-MPI1 is (``-S
ImbRmaCheck.suite_dir``, the environment's ``benchmark_dirs['imb']``, its
PATH: Intel MPI ships it); without it the check is skipped, saying where it
looked. The job launches it ``repetitions`` times (3): each value is the
median over the launches with their range.

The variables are listed, from their declaration, on this check's page.
"""

import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_before, variable

from sentinel.analysis import rma
from sentinel.analysis.variables import Values
from sentinel.parsers.imb import ImbOutput
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.integrity import VerifiedPayloads
from sentinel.rfm.onesided import OneSidedPaths
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.standard import ImbLaunches, StandardSuiteCheck


@selection.simple_test
class RmaCheck(OneSidedPaths, TransportMappingTest, PartitionReferences, VerifiedPayloads):
    """Put, get and accumulate under fence, lock and PSCW between two ranks, one transport."""

    #: Operations to measure.
    #:
    #: :type: :class:`List[str]`
    ops = variable(typ.List[typ.Str["|".join(rma.OPS)]], value=list(rma.OPS))

    #: Synchronisations that close the epochs.
    #:
    #: :type: :class:`List[str]`
    syncs = variable(typ.List[typ.Str["|".join(rma.SYNCS)]], value=list(rma.SYNCS))

    #: Smallest and largest size in bytes (powers of two between them).
    #:
    #: :type: :class:`int`
    min_size = variable(int, value=8)
    max_size = variable(int, value=1048576)

    #: Epochs per latency sample up to 64 KiB, and above.
    #:
    #: :type: :class:`int`
    iterations = variable(int, value=100)
    iterations_large = variable(int, value=20)

    #: Epochs per bandwidth sample up to 64 KiB, and above.
    #:
    #: :type: :class:`int`
    windows = variable(int, value=20)
    windows_large = variable(int, value=5)

    #: Operations in each bandwidth epoch.
    #:
    #: :type: :class:`int`
    window = variable(int, value=32)

    #: Samples per value (median, min and max are reported).
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=10)

    #: Untimed epochs per size before the samples, scaled by each sample's
    #: count over ``iterations``.
    #:
    #: :type: :class:`int`
    warmup = variable(int, value=10)

    #: A size whose verified epochs the benchmark corrupts on purpose (a
    #: byte flipped, an element changed, after it is written): the test of
    #: the verdict, never a site's setting (0: none).
    #:
    #: :type: :class:`int`
    corrupt_at = variable(int, value=0)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "rma"})
    spec = rma.SPEC
    bench = "rma"
    bench_options = ("ops", "syncs", "min_size", "max_size", "iterations", "iterations_large",
                     "windows", "windows_large", "window", "repetitions", "warmup",
                     "corrupt_at")
    tags = {"rma", "nightly", "acceptance"}

    def expected_variables(self) -> list[str]:
        """Each operation and synchronisation: latency and bandwidth at every size, the peak."""
        return rma.expected(self.ops, self.syncs, self.min_size, self.max_size)

    def analyse(self, out: BenchOutput) -> Values:
        """Every verified epoch's data intact; then the latencies and bandwidths."""
        self.judge_payloads(lambda: rma.require_intact(
            out, self.transport, self.ops, self.syncs, self.min_size, self.max_size))
        return rma.values(out)


@selection.simple_test
class ImbRmaCheck(OneSidedPaths, ImbLaunches, StandardSuiteCheck):
    """IMB-RMA's put, get and accumulate completed by flush, as RmaCheck's flush variables."""

    #: Operations to measure (IMB-RMA's ``Unidir_put``, ``Unidir_get``, ``Accumulate``).
    #:
    #: :type: :class:`List[str]`
    ops = variable(typ.List[typ.Str["|".join(rma.OPS)]], value=list(rma.OPS))

    #: Largest size as a power of two (IMB ``-msglog 3:msglog``; 20 = 1 MiB).
    #:
    #: :type: :class:`int`
    msglog = variable(int, value=20)

    spec = rma.IMB_SPEC
    program = "IMB-RMA"
    release_variant = ""
    tags = {"imb", "rma", "nightly", "acceptance"}
    #: The standard suite's view of what RmaCheck measures every night (it
    #: judges nothing by default): within the week, as IMB-MPI1's.
    rotates = True

    @run_before("run")
    def set_options(self) -> None:
        """The benchmarks of the operations, the sizes, IMB's timing options."""
        self.executable_opts = [*(rma.IMB_BENCHMARKS[op] for op in self.ops),
                                "-msglog", f"3:{self.msglog}", *self.imb_timing_options()]

    def expected_variables(self) -> list[str]:
        """Each operation's flush latency and bandwidth at every size, and the peak."""
        return rma.imb_expected(self.ops, self.msglog)

    def suite_values(self, out: ImbOutput) -> tuple[Values, list[int]]:
        return rma.imb_values(out, self.ops), []
