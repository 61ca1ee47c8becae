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
  overheads at 8 B.

The variables are listed, from their declaration, on this check's page.

``Pt2ptGpuCheck`` reports the same with ``%buffers=host|device`` on
partitions with the ``gpu`` feature, in environments whose MPI is GPU-aware
(feature ``cuda`` or ``rocm``; the benchmark built with ``GPU=cuda`` or
``GPU=rocm``, ``extras['gpu_home']`` the toolkit); references indexed by
``buffers`` too.
"""

from sentinel.rfm.compat import selection
from sentinel.rfm.pt2pt import PT2PT_CHECK, Pt2ptBase, Pt2ptGpuBase


@selection.simple_test
class Pt2ptCheck(Pt2ptBase):
    """Latency, bandwidth, fits and LogP between two ranks over one transport and mapping."""

    #: JacobiCheck's weak-scaling model depends on variants of this check by
    #: name: registered whatever the session's filters select.
    dependency_of = ("JacobiCheck",)


@selection.simple_test
class Pt2ptGpuCheck(Pt2ptGpuBase):
    """The same with the buffers (``%buffers``) in host or GPU memory, on partitions with GPUs."""


assert Pt2ptCheck.__name__ == PT2PT_CHECK  # other checks depend on it by this name
