"""Message-matching cost over every transport and rank mapping.

Runs ``src/bench/matching`` (the method of Song 2013, plus separate
unexpected-message and posted-receive queue patterns) between two ranks and
reports, per transport and mapping:

* ``match_time_tag`` / ``match_time_comm``: M, the time of one unsuccessful
  match (us), fitted over all batch sizes, with ``match_r2_*`` its R^2;
* ``match_time_umq_*`` / ``match_time_prq_*``: the same for each queue alone;
* ``iot_*``, ``rot_*``, ``diff_*``: in-order, reverse-order times and their
  difference at the check-point batch size;
* ``queue_ratio``: M(comm) / M(tag); with the inferred queue model
  (``shared`` or ``per-communicator``) in the ``queue_model`` field.

Defaults are the parameters of Song (2013); scale them with ``-S`` (see the
``quick`` mode in ``config/common.py``).
"""


import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, variable

from sentinel.analysis import matching
from sentinel.analysis.variables import Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.references import PartitionReferences


@rfm.simple_test
class MatchingCheck(TransportMappingTest, PartitionReferences):
    """Matching time per unsuccessful match over one transport and mapping."""

    #: Message lengths in doubles (Song 2013: 10 to 10^6, i.e. 80 B to 8 MB).
    #:
    #: :type: :class:`List[int]`
    lengths = variable(typ.List[int], value=[10, 100, 1000, 10000, 100000, 1000000])

    #: Messages per batch n.
    #:
    #: :type: :class:`List[int]`
    messages = variable(typ.List[int], value=[1, 10, 20, 30, 40, 45, 50, 60, 70, 80, 90])

    #: Batch size at which IOT, ROT and Diff are reported (Song 2013: 45).
    #:
    #: :type: :class:`int`
    checkpoint = variable(int, value=45)

    #: Timed iterations per repetition.
    #:
    #: :type: :class:`int`
    iterations = variable(int, value=10)

    #: Repetitions, each after a barrier; the median of all samples is used.
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=5)

    #: Untimed warm-up iterations per order.
    #:
    #: :type: :class:`int`
    warmup = variable(int, value=2)

    #: Algorithms: ``tag`` (one communicator, tag i) and ``comm`` (one
    #: communicator per message).
    #:
    #: :type: :class:`List[str]`
    algorithms = variable(typ.List[typ.Str[r"tag|comm"]], value=["tag", "comm"])

    #: Patterns: ``pingpong`` (Song 2013), ``umq`` and ``prq`` (one queue each).
    #:
    #: :type: :class:`List[str]`
    patterns = variable(typ.List[typ.Str[r"pingpong|umq|prq"]],
                        value=["pingpong", "umq", "prq"])

    #: Inferred matching-queue model (``shared``, ``per-communicator``,
    #: ``inconclusive`` or ``not measured``).
    #:
    #: :type: :class:`str`
    queue_model = variable(str, value="", loggable=True)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "matching"})
    spec = matching.SPEC
    bench = "matching"
    bench_options = ("lengths", "messages", "iterations", "repetitions", "warmup", "algorithms",
                     "patterns")
    tags = {"matching", "nightly", "acceptance"}

    @run_after("setup")
    def check_parameters(self) -> None:
        if len(set(self.messages)) < 3:
            raise SentinelError(f"MatchingCheck.messages={self.messages}: the fit needs "
                                "at least 3 distinct batch sizes")
        if self.checkpoint not in self.messages:
            raise SentinelError(f"MatchingCheck.checkpoint={self.checkpoint} is not one of "
                                f"messages={self.messages}")

    def expected_variables(self) -> list[str]:
        return matching.expected(self.lengths, self.algorithms, self.patterns)

    def analyse(self, out: BenchOutput) -> Values:
        result = matching.analyse(out, self.checkpoint, self.lengths[0] * 8)
        self.queue_model = result.queue_model
        return result.values
