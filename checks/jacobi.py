"""Hybrid MPI+OpenMP 3-D Jacobi against the performance model of Banerjee (2022).

One test per (mode, threads per rank, transport, mapping) runs the scaling
series N = 1, 2, 4, ... ranks in one job (one launch per N; up to
``max_ranks``, by default as many as the partition, or ``max_nodes`` of it,
holds at ``threads`` cores per rank, the largest N included when it is not
a power of two; :class:`~sentinel.rfm.scaling.RankSeries`), every rank's
placement proven in each launch. For each N it reports the time of an
iteration and of its phases (halo exchange, the residual's reduction, the
sweep, the rest) and the lattice updates per second; in weak scaling also
the model's P(L,N) and the measured performance over it, where T_s is the
sweep time of the series' N = 1 launch and B, T_L are ``fit_bw`` and
``fit_lambda`` of ``Pt2ptCheck`` on the same partition, environment,
transport and mapping (a ReFrame dependency: measured, never constants),
and N P(L,1) / P(L,N) measured, the ratio the Orfeo study tabulates, to set
results beside its table. In strong scaling: the efficiency T(1) / (N T(N)),
and every N must compute the same result. The variables are listed, from
their declaration, on this check's page. ``-S JacobiCheck.dims=16,4,2`` fixes the process grid of
the largest launch (the series then ends at its 128 ranks; the smaller
launches take MPI_Dims_create's); ``-S JacobiCheck.ranks_per_node=4`` puts 4
ranks on each node with mapping ``node``.
"""


import reframe.utility.typecheck as typ
import reframe.utility.udeps as udeps
from reframe.core.builtins import fixture, run_after, run_before, variable

from sentinel.analysis import jacobi
from sentinel.analysis.variables import Values
from sentinel.parsers.sentinel_output import BenchOutput
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.build import BenchBuild
from sentinel.rfm.compat import selection
from sentinel.rfm.pt2pt import jacobi_pt2pt
from sentinel.rfm.references import PartitionReferences
from sentinel.rfm.scaling import RankSeries, limit_series_to_memory
from sentinel.rfm.threads import ThreadedRanks, mode_and_threads, threaded_output

#: ``mode``: the benchmark's hybrid mode (``pure``, ``master``, ``funnelled``,
#: ``multiple``); ``threads``: OpenMP threads per rank (``one`` in pure mode).
JacobiModes = mode_and_threads(jacobi.MODES)


@selection.simple_test
class JacobiCheck(ThreadedRanks, RankSeries, TransportMappingTest, PartitionReferences,
                  JacobiModes):
    """The Jacobi scaling series in one mode over one transport and mapping."""

    #: ``weak`` (``local_size``^3 points per rank; the model applies) or
    #: ``strong`` (``global_size``^3 points in all).
    #:
    #: :type: :class:`str`
    scaling = variable(typ.Str[r"weak|strong"], value="weak", loggable=True)

    #: L: local cube edge in weak scaling.
    #:
    #: :type: :class:`int`
    local_size = variable(int, value=160)

    #: Global cube edge in strong scaling (divisible by every process grid).
    #:
    #: :type: :class:`int`
    global_size = variable(int, value=256)

    #: Sweeps per repetition.
    #:
    #: :type: :class:`int`
    iterations = variable(int, value=20)

    #: Repetitions per launch (the mean is reported, as Stathopoulos 2010 did).
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=3)

    #: The process grid of the series' largest launch (``16,4,2``); the
    #: series ends at its product. Empty: MPI_Dims_create's grid everywhere.
    #:
    #: :type: :class:`List[int]`
    dims = variable(typ.List[int], value=[], loggable=True)

    #: The series' N values and each launch's result checksum ("N:checksum,...").
    #:
    #: :type: :class:`str`
    checksums = variable(str, value="", loggable=True)

    build = fixture(BenchBuild, scope="environment", variables={"bench": "jacobi"})
    spec = jacobi.SPEC
    bench = "jacobi"
    bench_options = ("mode", "iterations", "repetitions")
    tags = {"jacobi", "hybrid", "nightly", "acceptance"}
    rotates = True

    @run_after("init")
    def select(self) -> None:
        """Drop combinations that make no sense; depend on the ping-pong for B and T_L."""
        self.skip_if(self.mode == "pure" and self.threads != "one",
                     "pure MPI runs one thread per rank")
        if self.scaling == "weak" and self.measures():
            for name in self.model_pt2pt().values():
                self.depends_on(name, udeps.by_case)

    def model_pt2pt(self) -> dict[str, str]:
        """The ping-pong giving the model's B and T_L, by the level of the halo exchange.

        ``on``: ranks of one node, ``off``: ranks on several; a production
        pair takes each from its half that carries that level (the off-node
        one between two nodes).
        """
        return jacobi_pt2pt(self.transport_info, self.transport, self.mapping)

    @run_after("setup")
    def fit_memory(self) -> None:
        """Keep the launches whose grids fit a node's memory (L = 1200: 27.8 GB a rank)."""
        limit_series_to_memory(self)

    def asked_ranks(self) -> int:
        """With ``dims``, the series ends at the grid's process count."""
        return jacobi.grid_ranks(self.dims, self.max_ranks) if self.dims else self.max_ranks

    def launch_options(self, n: int) -> list[str]:
        """The grid of ``dims`` for the launch of its size."""
        return ["--dims", ",".join(map(str, self.dims))] if self.dims and n == self.series[-1] \
            else []

    @run_before("run")
    def jacobi_options(self) -> None:
        """The problem size of the scaling."""
        self.executable_opts += ["--local", str(self.local_size)] if self.scaling == "weak" \
            else ["--global", str(self.global_size)]

    def read_output(self) -> dict[int, BenchOutput]:
        """One complete output per launch of the series (a skip without the thread level)."""
        self.stdout_path, out = threaded_output(self, "jacobi")
        return self.split_series(out, self.stdout_path)

    def analyse(self, runs: dict[int, BenchOutput]) -> Values:
        """Values per N, and the model (weak) or the efficiency (strong) of each."""
        results = {n: jacobi.analyse(run, self.stdout_path) for n, run in runs.items()}
        self.checksums = ",".join(f"{n}:{r.checksum!r}" for n, r in results.items())
        values = Values(self.spec)
        for result in results.values():
            values.merge(jacobi.values(result))
            values.merge(self._model(result, results[1]))
        return values

    def _model(self, result, single) -> Values:
        """The model (weak) or the efficiency (strong) of one launch."""
        if self.scaling == "strong":
            return jacobi.efficiency(result, single)
        names = self.model_pt2pt()
        pt2pt = self.getdep(names["off" if result.ranks > self.num_tasks_per_node else "on"])
        return jacobi.weak_model(result, single, pt2pt.values, pt2pt.unresolved,
                                 pt2pt.name)
