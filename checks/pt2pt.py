"""Point-to-point characterisation over every transport and rank mapping.

Runs ``src/bench/pt2pt`` (seed 001's methods) between two ranks and reports:

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
"""


import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

from sentinel.build import BenchBuild
from sentinel.errors import SentinelError
from sentinel.mixins import PartitionReferences, TransportMappingTest
from sentinel.parsers.sentinel_output import parse, require_complete
from sentinel.pt2pt import analyse


@rfm.simple_test
class Pt2ptCheck(TransportMappingTest, PartitionReferences):
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

    #: Samples per value (median, min and max are reported).
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=10)

    #: Untimed operations per size.
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
    modes = variable(typ.List[str],
                     value=["standard", "synchronous", "buffered", "ready", "diffbuf"])

    #: Sizes (bytes) where the standard-mode latency curve steps, comma-separated.
    #:
    #: :type: :class:`str`
    protocol_switches = variable(str, value="", loggable=True)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "pt2pt"})
    tags = {"pt2pt", "nightly", "acceptance"}

    @run_before("run")
    def set_command(self) -> None:
        self.executable = self.build.executable_path
        self.executable_opts = [
            "--max-size", str(self.max_size), "--iterations", str(self.iterations),
            "--iterations-large", str(self.iterations_large),
            "--repetitions", str(self.repetitions), "--warmup", str(self.warmup),
            "--window", str(self.window), "--modes", ",".join(self.modes),
        ]

    @sanity_function
    def validate(self):
        try:
            stdout, text = self.stdout_text()
            out = parse(text, "pt2pt")
            require_complete(out, stdout)
            self.verify_world(out)
            self.verify_transport()
            self.verify_placement(out)
            self.values, switches = analyse(out)
        except (OSError, SentinelError) as err:
            raise SanityError(str(err)) from None
        self.protocol_switches = ",".join(map(str, switches))
        return True
