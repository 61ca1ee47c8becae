"""The mixed-mode micro-benchmarks' results as performance variables."""

from __future__ import annotations

from sentinel.analysis.fits import median_coverage
from sentinel.analysis.variables import COVERAGE, LOWER, CheckSpec, Level, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.mpi.thread_levels import THREAD_LEVELS
from sentinel.parsers.sentinel_output import BenchOutput, Record

#: The benchmark's modes and benchmarks.
MODES = ("serial", "funnelled", "multiple")
BENCHMARKS = ("barrier", "halo", "pingpong", "pingping")
#: The mixed-mode collectives (4-byte integers, root 0).
COLLECTIVES = ("reduce", "allreduce", "bcast", "scatter", "gather", "alltoall")


#: What HybridCheck reports, indexed by mode and threads per rank.
SPEC = CheckSpec(
    checks=("HybridCheck",),
    variables=(
        PerfVar("barrier", "s", LOWER, "seconds per barrier with the threads' own barrier",
                headline={}),
        PerfVar("{bench}_{size}B", "s", LOWER,
                "seconds per iteration; bytes of the whole message, all threads' parts",
                choices={"bench": ("halo", "pingpong", "pingping")},
                headline={"bench": "pingpong", "size": "8"}),
    ),
    levels=(Level("mode", MODES), Level("threads", THREAD_LEVELS)),
)

#: What HybridCollectivesCheck reports, indexed by mode and threads per rank.
COLLECTIVES_SPEC = CheckSpec(
    checks=("HybridCollectivesCheck",),
    variables=(
        PerfVar("{bench}_{size}B", "s", LOWER,
                "seconds per collective call with the threads' writes and reads; bytes of "
                "one rank's part, all threads'", choices={"bench": COLLECTIVES},
                headline={"size": "4"}),
    ),
    levels=(Level("mode", MODES), Level("threads", THREAD_LEVELS)),
)


#: What BarrierSplitCheck reports, indexed by mode.
SPLITS_SPEC = CheckSpec(
    checks=("BarrierSplitCheck",),
    figures="scaling",
    variables=(
        PerfVar("barrier_R{ranks}", "s", LOWER, "seconds per barrier of the whole node at "
                "this many ranks, the node's other cores their threads", headline={},
                scaling="ranks"),
    ),
    levels=(Level("mode", MODES),),
)


def split_values(runs: dict[int, BenchOutput], stdout: str) -> Values:
    """``barrier_R<ranks>`` of each ranks x threads split."""
    found = Values(SPLITS_SPEC)
    for ranks, run in runs.items():
        one = values(run, stdout, ["barrier"])
        found.put("barrier_R{ranks}", one["barrier"][0], one.intervals.get("barrier"),
                  one.coverage.get("barrier", COVERAGE), ranks=ranks)
    return found


def _interval(rec: Record) -> tuple[tuple[float, float] | None, float]:
    """The order-statistics interval of a point's median over its repetitions, if printed."""
    if "time_lo_s" not in rec.fields:  # an output of the suite before repetitions
        return None, COVERAGE
    interval = (rec.number("time_lo_s"), rec.number("time_hi_s"))
    return interval, median_coverage(rec.integer("repetitions"))


def values(out: BenchOutput, stdout: str, benchmarks: list[str],
           spec: CheckSpec = SPEC) -> Values:
    """Seconds per iteration: ``barrier`` and ``<benchmark>_<message bytes>B``.

    Every requested benchmark must have reported, and no data may be wrong.
    """
    found = Values(spec)
    for rec in out.of("HYBRID"):
        if rec.integer("wrong"):
            raise SentinelError(f"{stdout}:{rec.line}: {rec.text('bench')} at "
                                f"{rec.integer('bytes')} B received {rec.integer('wrong')} "
                                "wrong elements")
        bench = rec.text("bench")
        interval, coverage = _interval(rec)
        if bench == "barrier":
            found.put("barrier", rec.number("time_s"), interval, coverage)
        else:
            found.put("{bench}_{size}B", rec.number("time_s"), interval, coverage, bench=bench,
                      size=rec.integer("bytes"))
    missing = [b for b in benchmarks
               if not any(k == b or k.startswith(f"{b}_") for k in found)]
    if missing:
        raise SentinelError(f"{stdout}: no results for {', '.join(missing)}")
    return found
