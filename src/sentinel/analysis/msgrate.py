"""From the msgrate benchmark's records to message rates as threads are added.

Each ``SENTINEL_MSGRATE`` line is one thread count T: the median over the
repetitions of the messages per second all T threads of the sending rank
sent together (each thread pair on a communicator of its own, or a tag),
with the order-statistics interval of the median. The scaling at T is the
rate at T over the rate at one thread, its interval from the two intervals
(the lower end over the upper, and the upper over the lower), of their
coverages' product: what a library that serialises its threads loses
shows there, at the thread count where it starts, whatever the rate of
one thread is.
"""

from __future__ import annotations

from collections.abc import Sequence

from sentinel.analysis.fits import median_coverage
from sentinel.analysis.variables import HIGHER, CheckSpec, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput, Record

#: How the benchmark gives each thread pair its own matching space.
SPACES = ("comm", "tag")

#: What ThreadRateCheck reports. Judged: the scaling at every thread count
#: (a library that serialises its threads, or loses its per-thread
#: resources, after an upgrade) and the rate of one thread.
SPEC = CheckSpec(
    checks=("ThreadRateCheck",),
    figures="scaling",
    variables=(
        PerfVar("rate_T{threads}", "messages/s", HIGHER,
                "messages per second the sending rank's threads sent together, each thread "
                "to its own peer thread, under MPI_THREAD_MULTIPLE (median of the "
                "repetitions)", headline={"threads": "1"}, followed={}, scaling="threads"),
        PerfVar("scaling_T{threads}", "1", HIGHER,
                "message rate at this many threads over the rate at one thread",
                headline={}, scaling="threads"),
    ),
)


def thread_counts(cores_per_rank: int, cap: int = 0) -> list[int]:
    """1, 2, 4, ... up to the cores a rank holds (and ``cap``, when set), and that count."""
    top = min(cores_per_rank, cap) if cap else cores_per_rank
    if top < 1:
        raise SentinelError(f"no thread count fits {cores_per_rank} core(s) per rank"
                            + (f" and max_threads={cap}" if cap else ""))
    counts = [1 << k for k in range(top.bit_length()) if 1 << k <= top]
    return sorted({*counts, top})


def expected(counts: Sequence[int]) -> list[str]:
    """Every variable a complete run of these thread counts reports."""
    return [*(f"rate_T{t}" for t in counts), *(f"scaling_T{t}" for t in counts if t > 1)]


def _interval(rec: Record) -> tuple[tuple[float, float], float]:
    return ((rec.number("rate_lo"), rec.number("rate_hi")),
            median_coverage(rec.integer("repetitions")))


def _wrong(rec: Record, out: BenchOutput, transport: str) -> str:
    hosts = {r.integer("rank"): r.text("host") for r in out.of("AFFINITY")}
    return (f"{rec.integer('wrong')} message(s) of {rec.integer('size')} bytes from rank 0 on "
            f"{hosts.get(0, '?')} to rank 1 on {hosts.get(1, '?')} over {transport} arrived "
            f"wrong at {rec.integer('threads')} thread(s)")


def values(out: BenchOutput, stdout: str, counts: Sequence[int], transport: str) -> Values:
    """``rate_T<t>`` of every thread count and ``scaling_T<t>`` beyond one thread.

    Every requested count must have reported, and no message may be wrong.
    """
    found = Values(SPEC)
    recs = {rec.integer("threads"): rec for rec in out.of("MSGRATE")}
    missing = [str(t) for t in counts if t not in recs]
    if missing:
        raise SentinelError(f"{stdout}: no message rate at {', '.join(missing)} thread(s)")
    wrong = [_wrong(rec, out, transport) for rec in recs.values() if rec.integer("wrong")]
    if wrong:
        raise SentinelError(f"{stdout}: " + "; ".join(wrong))
    for t, rec in sorted(recs.items()):
        interval, coverage = _interval(rec)
        found.put("rate_T{threads}", rec.number("rate"), interval, coverage, threads=t)
    if 1 in recs:
        one, (one_lo, one_hi) = recs[1].number("rate"), _interval(recs[1])[0]
        one_cover = _interval(recs[1])[1]
        for t, rec in sorted(recs.items()):
            if t > 1:
                (lo, hi), coverage = _interval(rec)
                found.put("scaling_T{threads}", rec.number("rate") / one,
                          (lo / one_hi, hi / one_lo), coverage * one_cover, threads=t)
    return found
