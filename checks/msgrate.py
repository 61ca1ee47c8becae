"""Multithreaded message rate between two ranks over every transport and rank mapping.

Runs ``src/bench/msgrate`` between two ranks under ``MPI_THREAD_MULTIPLE``,
each rank with one OpenMP thread per core it holds; for 1, 2, 4, ... threads
(up to the cores a rank holds on its socket: half a socket's for ``core``, a
whole socket's for ``socket`` and ``node``) thread t of rank 0 sends windows of
``window`` messages of ``size`` bytes to thread t of rank 1, which answers
each window, every thread pair on a communicator of its own (``space=comm``)
or a tag of its own on one (``space=tag``), as ``osu_latency_mt`` and IMB-MT
give each thread its own. It reports, per thread count:

* the message rate: messages per second all the threads sent together,
  the median over ``repetitions`` timed runs with its interval;
* the scaling: that rate over the rate of one thread, with its interval.

A library that serialises its threads (a global lock, one shared network
context) keeps the one-thread rate and loses the scaling at the thread count
where the threads start to queue for it. Every thread is proven on a core of
its own (a rank squeezed onto fewer cores than it has threads fails before
its values), every message of each run's last window is checked outside the
timed region, and a library that does not provide ``MPI_THREAD_MULTIPLE`` is
skipped, naming the level it provides.

The variables are listed, from their declaration, on this check's page.
"""

import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, run_before, variable

from sentinel.analysis import msgrate
from sentinel.analysis.variables import Values
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.placing import socket_cores
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.threads import ThreadedRanks


@selection.simple_test
class ThreadRateCheck(ThreadedRanks, TransportMappingTest, PartitionReferences):
    """Messages per second between two ranks at 1, 2, 4, ... threads each, one transport."""

    #: Bytes per message.
    #:
    #: :type: :class:`int`
    size = variable(int, value=8)

    #: Messages each thread sends before its peer answers.
    #:
    #: :type: :class:`int`
    window = variable(int, value=64)

    #: Each thread pair's matching space: a communicator (``comm``) or a tag (``tag``).
    #:
    #: :type: :class:`str`
    space = variable(typ.Str["|".join(msgrate.SPACES)], value="comm")

    #: The largest thread count (0: as many as a rank holds cores on its socket).
    #:
    #: :type: :class:`int`
    max_threads = variable(int, value=0)

    #: Seconds per thread count, shared by its ``repetitions`` timed runs.
    #:
    #: :type: :class:`float`
    target_time = variable(float, value=1.0)

    #: Timed runs per thread count (the median and its interval are reported).
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=6)

    #: Every MPI call of every thread holds one lock of the process (the
    #: threads take turns, as under a library that serialises them): the test
    #: of the verdict, never a site's setting.
    #:
    #: :type: :class:`bool`
    serialise = variable(bool, value=False)

    #: The thread counts measured (set at setup).
    #:
    #: :type: :class:`List[int]`
    thread_counts = variable(typ.List[int], value=[], loggable=True)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "msgrate"})
    spec = msgrate.SPEC
    bench = "msgrate"
    bench_options = ("thread_counts", "size", "window", "space", "target_time", "repetitions")
    tags = {"msgrate", "threads", "nightly", "acceptance"}

    @run_after("setup")
    def plan_threads(self) -> None:
        """1, 2, 4, ... threads, up to the cores a rank holds on its socket; a core each."""
        cores = socket_cores(self)
        self.thread_counts = msgrate.thread_counts(cores, self.max_threads)
        self.num_threads = self.num_cpus_per_task = self.thread_counts[-1]

    @run_before("run")
    def serialise_threads(self) -> None:
        """The verdict's test: ``--serialise``."""
        if self.serialise:
            self.executable_opts.append("--serialise")

    def expected_variables(self) -> list[str]:
        """The rate at every thread count, the scaling beyond one."""
        return msgrate.expected(self.thread_counts)

    def analyse(self, out: BenchOutput) -> Values:
        return msgrate.values(out, self.stdout_path, self.thread_counts, self.transport)
