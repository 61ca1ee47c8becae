"""The Jacobi benchmark's results and the weak-scaling performance model of Banerjee (2022).

``P(L,N) = L^3 N / (T_s(L) + T_c(L,N))`` lattice updates per second, with
``T_c = c/B + k T_L`` and ``c = L^2 k 2 8`` bytes: the halo volume through
one node's link. ``T_s`` is the time of one sweep with N = 1, ``B`` (MB/s)
and ``T_L`` (us) come from the suite's ping-pong on the same partition,
environment, transport and mapping, and ``k`` is the number of grid
dimensions with more than one process.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from sentinel.analysis.fits import median_coverage, median_interval
from sentinel.analysis.variables import HIGHER, LOWER, NEUTRAL, CheckSpec, Level, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.mpi.thread_levels import THREAD_LEVELS
from sentinel.parsers.sentinel_output import BenchOutput, Record

#: The benchmark's modes.
MODES = ("pure", "master", "funnelled", "multiple")

#: Phases of one iteration, as the benchmark names them.
PHASES = ("jacobi", "halo", "delta", "other")

#: What JacobiCheck reports per N of its series, indexed by mode and threads per rank.
SPEC = CheckSpec(
    checks=("JacobiCheck",),
    figures="jacobi",
    variables=(
        PerfVar("t_{phase}_N{n}", "s", LOWER, "seconds per iteration in one phase, or the sweep",
                choices={"phase": (*PHASES, "sweep")}),
        PerfVar("mlups_N{n}", "MLUP/s", HIGHER, "million lattice updates per second",
                followed={}),
        PerfVar("model_mlups_N{n}", "MLUP/s", NEUTRAL, "the weak-scaling model's P(L,N)"),
        PerfVar("model_ratio_N{n}", "1", HIGHER, "measured / modelled MLUP/s", headline={}),
        PerfVar("efficiency_N{n}", "1", HIGHER, "strong scaling: T(1) / (N T(N))"),
        PerfVar("scaling_ratio_N{n}", "1", LOWER, "weak scaling: N P(L,1) / P(L,N) measured, "
                "the ratio of the Orfeo study's table (Banerjee 2022; 1 is linear)"),
    ),
    levels=(Level("mode", MODES), Level("threads", THREAD_LEVELS)),
)


#: The share of a node's memory the grids of one launch may take (the rest:
#: the system, MPI's buffers, the page cache).
MEMORY_SHARE = 0.9


def grid_bytes_per_core(edge: int) -> int:
    """Bytes of the two ``edge``^3 grids with their halos that each core's share holds.

    Weak scaling gives every rank ``edge``^3 points (threads replace ranks
    along the first dimension, so a core's share is the same).
    """
    return 2 * (edge + 2) ** 3 * 8


def fitting_series(series: list[int], per_node: int, cores_per_rank: int, edge: int,
                   memory_bytes: int) -> list[int]:
    """The N of ``series`` whose grids fit :data:`MEMORY_SHARE` of a node's memory."""
    need = grid_bytes_per_core(edge) * cores_per_rank
    return [n for n in series if min(n, per_node) * need <= MEMORY_SHARE * memory_bytes]


@dataclass(frozen=True)
class JacobiRun:
    """What one run of the benchmark was and measured (means over repetitions)."""

    ranks: int
    threads: int
    mode: str
    local: tuple[int, int, int]
    k: int
    scaling: str
    phases: dict[str, float]   # seconds per iteration, mean over ranks and repetitions
    sweep_s: float             # seconds per iteration of the slowest rank
    mlups: float
    checksum: float
    #: The range of the sweep time over the repetitions (its interval)
    sweep_interval_s: tuple[float, float] = (0.0, 0.0)
    coverage: float = 0.0  # of sweep_interval_s (and so of the rates')

    @property
    def mlups_interval(self) -> tuple[float, float]:
        """The interval of MLUP/s that the sweep time's interval gives."""
        lo, hi = self.sweep_interval_s
        rate = self.mlups * self.sweep_s
        return (rate / hi if hi > 0 else 0.0, rate / lo if lo > 0 else float("inf"))


def halo_bytes(edge: int, k: int) -> float:
    """c(L,N): bytes of halo through one node's link per iteration."""
    return float(edge) ** 2 * k * 2 * 8


def comm_time(edge: int, k: int, bandwidth_mbs: float, latency_us: float) -> float:
    """T_c(L,N) in seconds."""
    if bandwidth_mbs <= 0:
        raise SentinelError(f"model: bandwidth B = {bandwidth_mbs} MB/s is not positive")
    return halo_bytes(edge, k) / (bandwidth_mbs * 1e6) + k * latency_us * 1e-6


def model_mlups(edge: int, ranks: int, k: int, sweep_s: float, bandwidth_mbs: float,
                latency_us: float) -> float:
    """P(L,N) in MLUP/s."""
    if sweep_s <= 0:
        raise SentinelError(f"model: single-process sweep time T_s = {sweep_s} s is not positive")
    t_c = comm_time(edge, k, bandwidth_mbs, latency_us)
    return float(edge) ** 3 * ranks / (sweep_s + t_c) / 1e6


def _one(out: BenchOutput, kind: str, stdout: str) -> Record:
    found = out.of(kind)
    if len(found) != 1:
        raise SentinelError(f"{stdout}: expected one SENTINEL_{kind} line, found {len(found)}")
    return found[0]


def analyse(out: BenchOutput, stdout: str) -> JacobiRun:
    """Means over the repetitions of one complete jacobi output."""
    cfg = _one(out, "CONFIG", stdout)
    reps = out.of("JACOBI")
    if len(reps) != cfg.integer("repetitions"):
        raise SentinelError(f"{stdout}: {len(reps)} SENTINEL_JACOBI lines for "
                            f"{cfg.integer('repetitions')} repetitions")
    iterations = cfg.integer("iterations")
    local = tuple(int(x) for x in cfg.text("local").split(","))
    if len(local) != 3:
        raise SentinelError(f"{stdout}: line {cfg.line}: local={cfg.text('local')} "
                            "is not three sizes")
    phases = {p: statistics.fmean(r.number(f"{p}_s") for r in reps) / iterations
              for p in PHASES}
    sweeps = [r.number("sweep_s") for r in reps]
    sweep = statistics.median(sweeps)
    points = local[0] * local[1] * local[2] * cfg.integer("ranks")
    return JacobiRun(
        ranks=cfg.integer("ranks"), threads=cfg.integer("threads"), mode=cfg.text("mode"),
        local=local, k=cfg.integer("k"), scaling=cfg.text("scaling"), phases=phases,
        # the rate of the median sweep time, so that mlups and t_sweep agree
        sweep_s=sweep, mlups=points / sweep / 1e6,
        checksum=_one(out, "JACOBI_RESULT", stdout).number("checksum"),
        # the order-statistics interval of the median, and its exact coverage
        # (the range of 3 repetitions: 75 %; 6 or more: at least 95 %)
        sweep_interval_s=median_interval(sweeps), coverage=median_coverage(len(sweeps)),
    )


def values(run: JacobiRun) -> Values:
    """Performance variables of one run, suffixed ``_N<ranks>``.

    Seconds per iteration of each phase and of the sweep, and MLUP/s.
    """
    out = Values(SPEC)
    for phase, t in run.phases.items():
        out.put("t_{phase}_N{n}", t, phase=phase, n=run.ranks)
    out.put("t_{phase}_N{n}", run.sweep_s, run.sweep_interval_s, run.coverage, phase="sweep",
            n=run.ranks)
    lo, hi = run.mlups_interval
    if hi == float("inf"):  # the sweep time's interval reaches 0: no upper bound
        out.put("mlups_N{n}", run.mlups, n=run.ranks)
    else:
        out.put("mlups_N{n}", run.mlups, (lo, hi), run.coverage, n=run.ranks)
    return out


def model_values(run: JacobiRun, single_sweep_s: float, bandwidth_mbs: float,
                 latency_us: float) -> Values:
    """The model's P(L,N) and measured/model for a weak-scaling run."""
    if run.scaling != "weak" or len(set(run.local)) != 1:
        raise SentinelError(f"the model needs weak scaling on a cube (got {run.scaling}, "
                            f"local {run.local})")
    model = model_mlups(run.local[0], run.ranks, run.k, single_sweep_s, bandwidth_mbs,
                        latency_us)
    out = Values(SPEC)
    out.put("model_mlups_N{n}", model, n=run.ranks)
    lo, hi = run.mlups_interval
    interval = (lo / model, hi / model) if hi != float("inf") else None
    out.put("model_ratio_N{n}", run.mlups / model, interval, run.coverage, n=run.ranks)
    return out


def grid_ranks(dims: list[int], max_ranks: int) -> int:
    """The ranks of the process grid ``dims``; a grid that is not one is an error."""
    shown = ",".join(map(str, dims))
    if len(dims) != 3 or min(dims) < 1:
        raise SentinelError(f"JacobiCheck.dims={shown}: a process grid is three positive "
                            "counts (16,4,2)")
    ranks = dims[0] * dims[1] * dims[2]
    if max_ranks and max_ranks != ranks:
        raise SentinelError(f"JacobiCheck.dims={shown} is {ranks} ranks, "
                            f"JacobiCheck.max_ranks is {max_ranks}")
    return ranks


def scaling_ratio(run: JacobiRun, single: JacobiRun) -> Values:
    """N P(L,1) / P(L,N) of a weak-scaling run: how far below N times one rank it fell."""
    out = Values(SPEC)
    out.put("scaling_ratio_N{n}", run.ranks * single.mlups / run.mlups, n=run.ranks)
    return out


def efficiency(run: JacobiRun, single: JacobiRun) -> Values:
    """Strong-scaling parallel efficiency T(1) / (N T(N)); the results must agree."""
    if not math.isclose(run.checksum, single.checksum, rel_tol=1e-10):
        raise SentinelError(f"the {run.ranks}-rank result {run.checksum!r} differs from the "
                            f"1-rank result {single.checksum!r} for the same problem")
    out = Values(SPEC)
    out.put("efficiency_N{n}", single.sweep_s / (run.ranks * run.sweep_s), n=run.ranks)
    return out


def weak_model(run: JacobiRun, single: JacobiRun, pt2pt: dict[str, tuple[float, str]],
               unresolved: dict[str, str], source: str) -> Values:
    """A weak-scaling launch's ratio to one rank and its model from the ping-pong's fit.

    ``pt2pt`` and ``unresolved`` are the ping-pong's values and unresolved
    ones (``source``: its test); ``fit_bw`` and ``fit_lambda`` give the
    model's B and T_L, and either of them unresolved there is an error naming
    why, never a model on a guess.
    """
    lost = {n: unresolved[n] for n in ("fit_bw", "fit_lambda") if n in unresolved}
    if lost:
        raise SentinelError(f"the model needs {source}'s fit, unresolved there: "
                            + "; ".join(f"{n}: {why}" for n, why in lost.items()))
    ratio = scaling_ratio(run, single)
    ratio.merge(model_values(run, single.sweep_s, pt2pt["fit_bw"][0], pt2pt["fit_lambda"][0]))
    return ratio
