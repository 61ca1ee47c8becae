"""Point-to-point characterisation over every transport and rank mapping.

Runs ``src/bench/pt2pt`` (the methods of Qian 2004) between two ranks and reports:

* the latency curve (standard mode, half round trip, median of the samples,
  with the spread (max - min) / median at 8 B), the 8 B latency of the
  synchronous, buffered, ready and diffbuf modes, and the one-way latency;
* the peak bandwidth and bidirectional bandwidth, and the bandwidth curve;
* the fit ``t = lambda + size/b`` (lambda: the mean of the 0-16 B latencies,
  b: from the least-squares slope) and the protocol switch sizes
  (``protocol_switches`` field);
* LogP: L and g0, and classic L, o and g, with the send and receive
  overheads at 8 B;
* with ``verify`` > 0, that every byte of that many untimed messages per
  size and direction arrived as sent (a wrong byte fails the test, naming
  the pair, the size and the transport).

The variables are listed, from their declaration, on this check's page.

``Pt2ptGpuCheck`` reports the same with ``%buffers=host|device`` on
partitions with the ``gpu`` feature, in environments whose MPI is GPU-aware
(feature ``cuda`` or ``rocm``; the benchmark built with ``GPU=cuda`` or
``GPU=rocm``, ``extras['gpu_home']`` the toolkit); references indexed by
``buffers`` too.
"""

import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, variable

from sentinel.analysis import pt2pt
from sentinel.analysis.integrity import verified_sizes
from sentinel.analysis.variables import Values
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.gpu import DeviceBuffers
from sentinel.rfm.integrity import VerifiedPayloads
from sentinel.rfm.pt2pt import PT2PT_CHECK, feeds_jacobi
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.switches import ProtocolSwitches


@selection.simple_test
class Pt2ptCheck(TransportMappingTest, PartitionReferences, ProtocolSwitches,
                 VerifiedPayloads):
    """Latency, bandwidth, fits and LogP between two ranks over one transport and mapping."""

    #: JacobiCheck's weak-scaling model depends on variants of this check by
    #: name: registered whatever the session's filters select.
    dependency_of = ("JacobiCheck",)

    #: Largest message size in bytes (sizes: 0 and powers of two up to it).
    #:
    #: :type: :class:`int`
    max_size = variable(int, value=4194304)

    #: Operations per sample up to 64 KiB.
    #:
    #: :type: :class:`int`
    iterations = variable(int, value=1000)

    #: Operations per sample above 64 KiB.
    #:
    #: :type: :class:`int`
    iterations_large = variable(int, value=100)

    #: Windows per bandwidth sample up to 64 KiB.
    #:
    #: :type: :class:`int`
    windows = variable(int, value=100)

    #: Windows per bandwidth sample above 64 KiB.
    #:
    #: :type: :class:`int`
    windows_large = variable(int, value=20)

    #: Samples per value (median, min and max are reported).
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=10)

    #: Untimed operations per size before the samples, scaled by each
    #: sample's count over ``iterations`` (10 windows before 100).
    #:
    #: :type: :class:`int`
    warmup = variable(int, value=100)

    #: Messages in flight in the bandwidth tests.
    #:
    #: :type: :class:`int`
    window = variable(int, value=64)

    #: Send modes of the latency test.
    #:
    #: :type: :class:`List[str]`
    modes = variable(typ.List[typ.Str[r"standard|synchronous|buffered|ready|diffbuf"]],
                     value=["standard", "synchronous", "buffered", "ready", "diffbuf"])

    #: Untimed messages per size and direction whose every byte is checked
    #: where it lands, after the size's samples (0: none). A wrong byte
    #: fails the test naming the pair, the size and the transport.
    #:
    #: :type: :class:`int`
    verify = variable(int, value=0)

    #: A size whose first verified message the benchmark corrupts on purpose
    #: (one byte flipped after its pattern is written): the test of the
    #: verdict, never a site's setting (0: none).
    #:
    #: :type: :class:`int`
    corrupt_at = variable(int, value=0)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "pt2pt"})
    spec = pt2pt.SPEC
    bench = "pt2pt"
    bench_options = ("max_size", "iterations", "iterations_large", "windows", "windows_large",
                     "repetitions", "warmup", "window", "modes", "verify", "corrupt_at")
    tags = {"pt2pt", "nightly", "acceptance"}

    def expected_variables(self) -> list[str]:
        """Every size up to :attr:`max_size`, every mode, the fits and LogP."""
        return pt2pt.expected(self.max_size, self.modes)

    def analyse(self, out: BenchOutput) -> Values:
        """Every verified payload intact; curves, fits and LogP, the protocol switches aside."""
        self.require_intact(out, verified_sizes(self.max_size))
        values, switches = pt2pt.analyse(out)
        self.record_switches(switches)
        return values

    def feeds_requirement(self, doc: dict, transport: str) -> bool:
        """Whether a Jacobi series the file requires takes its model's B and T_L from here."""
        return feeds_jacobi(self, doc, transport)


@selection.simple_test
class Pt2ptGpuCheck(DeviceBuffers, Pt2ptCheck):
    """The same with the buffers (``%buffers``) in host or GPU memory, on partitions with GPUs.

    Runs on partitions with the ``gpu`` feature (and their ``devices``), in
    environments whose MPI is GPU-aware (feature ``cuda`` or ``rocm``); the
    benchmark is built with that runtime (``make pt2pt GPU=cuda``; the build
    skips, naming why, where the MPI is not) and told ``--buffers``. Its
    references are indexed by :attr:`buffers` too.
    """

    #: No check depends on this one by name.
    dependency_of = ()

    #: Where the message buffers live: ``host`` or ``device`` (GPU) memory.
    #:
    #: :type: :class:`str`
    buffers = parameter(list(pt2pt.BUFFERS), loggable=True)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "pt2pt", "gpu": True})
    spec = pt2pt.GPU_SPEC
    bench_options = (*Pt2ptCheck.bench_options, "buffers")
    valid_systems = ["+mpi +gpu"]
    tags = {"pt2pt", "gpu", "nightly", "acceptance"}


assert Pt2ptCheck.__name__ == PT2PT_CHECK  # other checks depend on it by this name
