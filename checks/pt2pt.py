"""Point-to-point characterisation over every transport and rank mapping.

Runs ``src/bench/pt2pt`` (the methods of Qian 2004) between two ranks and reports:

* the latency curve ``latency_<size>B`` (standard mode, half round trip,
  median of the samples; ``latency_8B_spread`` = (max - min) / median at 8 B),
  ``latency_<mode>_8B`` for the synchronous, buffered, ready and diffbuf
  modes, ``unilatency_8B``;
* ``bw_peak``, ``bibw_peak`` and the bandwidth curve ``bw_<size>B`` (MB/s);
* the fit ``t = lambda + size/b`` (``fit_lambda``: mean of the 0-16 B
  latencies, ``fit_bw``: from the least-squares slope) and the protocol switch
  sizes (``protocol_switches`` field);
* LogP: ``logp_L``, ``logp_g0`` and classic ``logp_L_classic``, ``logp_o``,
  ``logp_g``; ``logp_os_8B``, ``logp_or_8B``.

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
