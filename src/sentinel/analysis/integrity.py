"""Payload integrity: what a benchmark's verification pass found (``--verify``).

After its timed measurements the benchmark sends untimed messages whose
every byte carries a pattern of its own (size, message, sender), checks
each where it lands and prints ``SENTINEL_VERIFY bytes= messages= errors=``
per size, and ``SENTINEL_CORRUPT bytes= from= to= message= offset=
expected= got= errors=`` for the first wrong byte of each direction (pt2pt:
its pair; the fabric sweep: each directed pair of the sweep). A wrong byte is
the run's failure, named by pair, size and where; a size the pass should
have covered and did not is one too.
"""

from __future__ import annotations

from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput, Record


def verified_sizes(max_size: int) -> list[int]:
    """The sizes a verification pass covers: the powers of two up to ``max_size``."""
    sizes, size = [], 1
    while size <= max_size:
        sizes.append(size)
        size *= 2
    return sizes


def _hosts(out: BenchOutput) -> dict[int, str]:
    """Rank -> host, from the benchmark's affinity lines."""
    return {r.integer("rank"): r.text("host") for r in out.of("AFFINITY")
            if "rank" in r.fields and "host" in r.fields}


def _rank(rank: int, hosts: dict[int, str]) -> str:
    return f"rank {rank}" + (f" on {hosts[rank]}" if rank in hosts else "")


def _wrong(rec: Record, hosts: dict[int, str], verified: int) -> str:
    """One direction's first wrong byte, as a clause."""
    return (f"a {rec.integer('bytes')}-byte message from {_rank(rec.integer('from'), hosts)} "
            f"to {_rank(rec.integer('to'), hosts)} arrived with byte {rec.integer('offset')} = "
            f"{rec.text('got')} instead of {rec.text('expected')} (message "
            f"{rec.integer('message')}; {rec.integer('errors')} of the {verified} verified "
            "messages of that size in that direction wrong)")


def require_intact(out: BenchOutput, over: str, per_direction: int, sizes: list[int],
                   least: int | None = None) -> None:
    """Raise naming the first corrupted payload, or a size the pass did not cover.

    ``per_direction``: the verified messages asked per size and direction
    (0: no pass was asked, nothing to judge); ``sizes``: those the pass
    covers, a ``SENTINEL_VERIFY`` line each; ``least``: the messages each
    line must count at least (default: both directions of one pair, as
    pt2pt's); ``over``: the transport, named in the error.
    """
    if not per_direction:
        return
    least = 2 * per_direction if least is None else least
    hosts = _hosts(out)
    wrong = out.of("CORRUPT")
    if wrong:
        raise SentinelError(f"data corrupted over {over}: " + "; ".join(
            _wrong(rec, hosts, per_direction) for rec in wrong))
    seen = {r.integer("bytes"): r for r in out.of("VERIFY")}
    missing = [s for s in sizes if s not in seen]
    if missing:
        raise SentinelError(f"payload verification asked ({per_direction} messages a size and "
                            f"direction) but not reported for size(s) "
                            f"{', '.join(map(str, missing))} B")
    short = [s for s, r in seen.items() if r.integer("messages") < least]
    if short:
        raise SentinelError(f"payload verification covered fewer than the {least} "
                            f"messages asked at size(s) {', '.join(map(str, sorted(short)))} B")
    failed = [s for s, r in seen.items() if r.integer("errors")]
    if failed:  # counted, yet no line saying where: still a corruption
        raise SentinelError(f"data corrupted over {over} at size(s) "
                            f"{', '.join(map(str, sorted(failed)))} B (the benchmark counted "
                            "wrong payloads without naming them)")
