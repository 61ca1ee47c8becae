"""The point-to-point characterisation, a base more than one check file needs.

``checks/pt2pt.py`` registers :class:`Pt2ptBase` as ``Pt2ptCheck``; other
checks (the Jacobi model) depend on its variants by name through
:func:`pt2pt_check_name`.
"""

import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, variable

from sentinel.analysis import pt2pt
from sentinel.analysis.jacobi import SPEC as jacobi_spec
from sentinel.analysis.variables import Values
from sentinel.mpi.transports import Transport, lookup
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.gpu import DeviceBuffers
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.switches import ProtocolSwitches
from sentinel.rfm.variants import variant_name

#: The name under which checks/pt2pt.py registers :class:`Pt2ptBase`.
PT2PT_CHECK = "Pt2ptCheck"
#: The reference index's head that names a Jacobi series' transport and mapping.
_SERIES_KEYS = ("$partition", "$environ", "transport_name", "mapping")


class Pt2ptBase(TransportMappingTest, PartitionReferences, ProtocolSwitches):
    """Latency, bandwidth, fits and LogP between two ranks over one transport and mapping."""

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

    build = fixture(BenchBuild, scope="environment", variables={"bench": "pt2pt"})
    spec = pt2pt.SPEC
    bench = "pt2pt"
    bench_options = ("max_size", "iterations", "iterations_large", "windows", "windows_large",
                     "repetitions", "warmup", "window", "modes")
    tags = {"pt2pt", "nightly", "acceptance"}

    def expected_variables(self) -> list[str]:
        """Every size up to :attr:`max_size`, every mode, the fits and LogP."""
        return pt2pt.expected(self.max_size, self.modes)

    def analyse(self, out: BenchOutput) -> Values:
        """Curves, fits and LogP; the latency curve's protocol switches on the side."""
        values, switches = pt2pt.analyse(out)
        self.record_switches(switches)
        return values

    def feeds_requirement(self, doc: dict, transport: str) -> bool:
        """Whether a Jacobi series the file requires takes its model's B and T_L from here."""
        jacobi = doc.get(jacobi_spec.checks[0]) or {}
        if type(self).__name__ != PT2PT_CHECK or tuple(jacobi.get("$index", [])[:4]) != \
                jacobi_spec.index[:4] or jacobi_spec.index[:4] != _SERIES_KEYS:
            return False
        family = self.transport_info.family
        mine = pt2pt_check_name(f"{family}/{transport}", self.mapping)
        here = {str(k): v for k, v in jacobi.items()}.get(self.current_partition.fullname) or {}
        series = {str(k): v for k, v in here.items()}.get(self.current_environ.name) or {}
        return any(mine in jacobi_pt2pt(lookup(family, str(name)), f"{family}/{name}",
                                        str(mapping)).values()
                   for name, mappings in series.items() for mapping in (mappings or {}))


class Pt2ptGpuBase(DeviceBuffers, Pt2ptBase):
    """Pt2pt with its message buffers in host or GPU memory, where a partition has GPUs.

    Runs on partitions with the ``gpu`` feature (and their ``devices``), in
    environments whose MPI is GPU-aware (feature ``cuda`` or ``rocm``); the
    benchmark is built with that runtime (``make pt2pt GPU=cuda``; the build
    skips, naming why, where the MPI is not) and told ``--buffers``. Its
    references are indexed by :attr:`buffers` too.
    """

    #: Where the message buffers live: ``host`` or ``device`` (GPU) memory.
    #:
    #: :type: :class:`str`
    buffers = parameter(list(pt2pt.BUFFERS), loggable=True)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "pt2pt", "gpu": True})
    spec = pt2pt.GPU_SPEC
    bench_options = (*Pt2ptBase.bench_options, "buffers")
    valid_systems = ["+mpi +gpu"]
    tags = {"pt2pt", "gpu", "nightly", "acceptance"}


def pt2pt_check_name(transport: str, mapping: str) -> str:
    """The unique name of the ``Pt2ptCheck`` variant for ``transport`` and ``mapping``."""
    return variant_name(Pt2ptBase, PT2PT_CHECK, transport=transport, mapping=mapping)


def jacobi_pt2pt(transport: Transport, key: str, mapping: str) -> dict[str, str]:
    """The ``Pt2ptCheck`` variants giving a Jacobi series its B and T_L, by level.

    ``on``: the halo exchange between ranks of one node, ``off``: between
    nodes. A production pair takes each from the half that carries it (the
    off-node half between two nodes, mapping ``node``); any other transport
    from its own ping-pong at the series' mapping.
    """
    if not transport.halves:
        name = pt2pt_check_name(key, mapping)
        return {"on": name, "off": name}
    on, off = (f"{transport.family}/{half}" for half in transport.halves)
    return {"on": pt2pt_check_name(on, mapping), "off": pt2pt_check_name(off, "node")}
