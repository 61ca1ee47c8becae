"""Message-matching cost over every transport and rank mapping.

Runs ``src/bench/matching`` (the method of Song 2013, plus separate
unexpected-message and posted-receive queue patterns) between two ranks and
reports, per transport and mapping:

* M, the time of one unsuccessful match (ns), when messages differ by tag
  and when they differ by communicator, fitted over the batch sizes with its
  95 % interval, and the fit's R^2; an M whose interval reaches zero (or
  whose fit is poor) is unresolved, reported by its bound (``M < 0.05 ns``);
* the same for the unexpected-message and the posted-receive queue alone;
* the in-order and reverse-order times and their difference at the
  check-point batch size;
* M(comm) / M(tag), and the model of each queue (``shared``,
  ``per-communicator``, ``no per-message search cost``, ``inconclusive``) in
  ``queue_model``, with the numbers behind it in ``queue_evidence``.

The variables are listed, from their declaration, on this check's page.

By default the batch sizes adapt: n doubles until the reverse-order extra
time is resolved against the run's own noise (or a time budget is spent),
then a grid up to that n is fitted. ``batches=fixed`` measures ``messages``,
the sizes of Song (2013), sized for hardware where M was 16-60 ns.
"""


import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, variable

from sentinel.analysis import matching
from sentinel.analysis.variables import Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.references import PartitionReferences


@selection.simple_test
class MatchingCheck(TransportMappingTest, PartitionReferences):
    """Matching time per unsuccessful match over one transport and mapping."""

    #: Message lengths in doubles (Song 2013: 10 to 10^6, i.e. 80 B to 8 MB).
    #:
    #: :type: :class:`List[int]`
    lengths = variable(typ.List[int], value=[10, 100, 1000, 10000, 100000, 1000000])

    #: ``adaptive``: batch sizes grow until Diff(n) is resolved (see
    #: ``resolution``, ``budget``); ``fixed``: the sizes in ``messages``.
    #:
    #: :type: :class:`str`
    batches = variable(typ.Str[r"adaptive|fixed"], value="adaptive")

    #: Messages per batch n of fixed batches (Song 2013).
    #:
    #: :type: :class:`List[int]`
    messages = variable(typ.List[int], value=[1, 10, 20, 30, 40, 45, 50, 60, 70, 80, 90])

    #: Largest n of adaptive batches (also held to 256 MiB per buffer).
    #:
    #: :type: :class:`int`
    max_messages = variable(int, value=1024)

    #: Largest n of adaptive batches of the unexpected-message pattern: it
    #: holds all n unmatched while the ranks synchronise, and past a
    #: transport's buffering that barrier can wait behind them for ever
    #: (Intel MPI over ofi-tcp between two nodes hung at n = 128).
    #:
    #: :type: :class:`int`
    max_unexpected = variable(int, value=64)

    #: Adaptive batches stop doubling once Diff(n) is this many times the
    #: largest noise of the sweep so far (the half-widths of the medians' 95 %
    #: intervals). At 20 against each size's own noise, ob1 over shared
    #: memory stopped at n = 32 in a quiet moment, and the grid, noisier,
    #: fitted with R^2 0.92; at 100 against the largest noise every sweep ran
    #: to the cap or the budget.
    #:
    #: :type: :class:`int`
    resolution = variable(int, value=50)

    #: Seconds one adaptive sweep may take: it stops doubling before the next
    #: step and the grid after it would overrun them.
    #:
    #: :type: :class:`int`
    budget = variable(int, value=10)

    #: Batch sizes of the adaptive grid, evenly spaced up to the n found.
    #:
    #: :type: :class:`int`
    points = variable(int, value=8)

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

    #: Inferred model of each queue measured (``umq: shared; prq:
    #: per-communicator``), or ``not measured``.
    #:
    #: :type: :class:`str`
    queue_model = variable(str, value="", loggable=True)

    #: Per pattern (``pingpong``, ``umq``, ``prq``): the model and the
    #: numbers it rests on (each algorithm's M with its interval and R^2, how
    #: far the batches went and why they stopped).
    #:
    #: :type: :class:`Dict[str, str]`
    queue_evidence = variable(typ.Dict[str, str], value={}, loggable=True)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "matching"})
    spec = matching.SPEC
    bench = "matching"
    bench_options = ("lengths", "batches", "messages", "max_messages", "max_unexpected",
                     "resolution", "budget", "points", "checkpoint", "iterations",
                     "repetitions", "warmup", "algorithms", "patterns")
    tags = {"matching", "nightly", "acceptance"}

    @run_after("setup")
    def check_parameters(self) -> None:
        if self.batches == "fixed" and len(set(self.messages)) < 3:
            raise SentinelError(f"MatchingCheck.messages={self.messages}: the fit needs "
                                "at least 3 distinct batch sizes")

    def expected_variables(self) -> list[str]:
        return matching.expected(self.lengths, self.algorithms, self.patterns)

    def analyse(self, out: BenchOutput) -> Values:
        result = matching.analyse(out, self.checkpoint, self.lengths[0] * 8)
        self.queue_model = result.queue_model
        self.queue_evidence = result.queue_evidence
        return result.values
