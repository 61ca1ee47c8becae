"""From the rma benchmark's records to one-sided latencies and bandwidths.

Each ``SENTINEL_RMA`` line is one (operation, synchronisation, metric,
size): the median of the samples with their range, whose coverage of the
median is ``1 - 2^(1-n)`` for n samples (as pt2pt's). Each verified epoch's
``SENTINEL_VERIFY`` line (and ``SENTINEL_CORRUPT`` for its first wrong
byte) says whether the data landed as sent.

IMB-RMA reports the same variables where it measures the same thing: its
one-sided benchmarks from rank 0 to rank 1 (``Unidir_put``, ``Unidir_get``,
``Accumulate``) hold a passive-target epoch over each sample and complete
every operation with ``MPI_Win_flush`` (``NON-AGGREGATE``: the latency of
one operation and its flush) or a sample's operations with one
(``AGGREGATE``: their bandwidth): the ``flush`` synchronisation's
latencies and bandwidths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sentinel.analysis.pt2pt import BANDWIDTH_RANGE, LATENCY_RANGE, range_coverage
from sentinel.analysis.variables import (
    HIGHER,
    HOST_VARIABLES,
    LOWER,
    CheckSpec,
    PerfVar,
    Values,
)
from sentinel.errors import SentinelError
from sentinel.parsers.imb import ImbOutput
from sentinel.parsers.sentinel_output import BenchOutput, Record

#: The one-sided operations, and the synchronisations that close their epochs.
OPS = ("put", "get", "acc")
SYNCS = ("fence", "lock", "pscw", "flush")
METRICS = ("latency", "bw")

_CHOICES = {"op": OPS, "sync": SYNCS}

#: What RmaCheck reports. Judged: the passive-target (lock) latency of each
#: operation at 8 B and the put and get bandwidth under lock, the one-sided
#: traffic of the PGAS-style codes; the other synchronisations are followed.
SPEC = CheckSpec(
    checks=("RmaCheck",),
    variables=(
        PerfVar("{op}_{sync}_latency_{size}B", "us", LOWER,
                "origin's time for one epoch holding one operation of that size, closed by "
                "the synchronisation (median of the samples)",
                choices=_CHOICES, headline={"sync": "lock", "size": "8"},
                followed={"size": "8"}, plausible=LATENCY_RANGE),
        PerfVar("{op}_{sync}_bw_{size}B", "MB/s", HIGHER,
                "bytes per second of an epoch holding a window of operations of that size",
                choices=_CHOICES, plausible=BANDWIDTH_RANGE),
        PerfVar("{op}_{sync}_bw_peak", "MB/s", HIGHER,
                "largest bandwidth of the operation under the synchronisation over sizes",
                choices=_CHOICES, headline={"op": ("put", "get"), "sync": "lock"},
                followed={}, plausible=BANDWIDTH_RANGE),
    ),
)


def sizes(min_size: int, max_size: int) -> list[int]:
    """The sizes the benchmark measures: powers of two from ``min_size`` to ``max_size``."""
    out, size = [], min_size
    while size <= max_size:
        out.append(size)
        size *= 2
    return out


def expected(ops: Sequence[str], syncs: Sequence[str], min_size: int,
             max_size: int) -> list[str]:
    """Every variable a complete run of these operations and synchronisations reports."""
    names = []
    for op in ops:
        for sync in syncs:
            for size in sizes(min_size, max_size):
                names += [f"{op}_{sync}_latency_{size}B", f"{op}_{sync}_bw_{size}B"]
            names.append(f"{op}_{sync}_bw_peak")
    return names


def values(out: BenchOutput) -> Values:
    """Every latency and bandwidth, with the peak bandwidth of each operation and sync."""
    cover = range_coverage(out)
    result = Values(SPEC)
    peaks: dict[tuple[str, str], Record] = {}
    for rec in out.of("RMA"):
        op, sync, size = rec.text("op"), rec.text("sync"), rec.integer("bytes")
        fields = {"op": op, "sync": sync, "size": size}
        if rec.text("metric") == "latency":
            result.put("{op}_{sync}_latency_{size}B", rec.number("median_us"),
                       (rec.number("min_us"), rec.number("max_us")), cover, **fields)
            continue
        result.put("{op}_{sync}_bw_{size}B", rec.number("median_mbs"),
                   (rec.number("min_mbs"), rec.number("max_mbs")), cover, **fields)
        best = peaks.get((op, sync))
        if best is None or rec.number("median_mbs") > best.number("median_mbs"):
            peaks[(op, sync)] = rec
    for (op, sync), rec in peaks.items():
        result.put("{op}_{sync}_bw_peak", rec.number("median_mbs"),
                   (rec.number("min_mbs"), rec.number("max_mbs")), cover, op=op, sync=sync)
    return result


def _hosts(out: BenchOutput) -> dict[int, str]:
    return {r.integer("rank"): r.text("host") for r in out.of("AFFINITY")}


def _wrong(rec: Record, hosts: dict[int, str]) -> str:
    """One verified epoch's first wrong value, as a clause."""
    unit = "element" if rec.fields.get("unit") == "int" else "byte"
    src, dst = rec.integer("from"), rec.integer("to")
    return (f"the {rec.integer('bytes')}-byte {rec.text('op')} under {rec.text('sync')} from "
            f"rank {src} on {hosts.get(src, '?')} to rank {dst} on {hosts.get(dst, '?')} "
            f"landed with the {unit} at offset {rec.integer('offset')} = {rec.text('got')} "
            f"instead of {rec.text('expected')} ({rec.integer('errors')} wrong)")


def require_intact(out: BenchOutput, over: str, ops: Sequence[str], syncs: Sequence[str],
                   min_size: int, max_size: int) -> None:
    """Raise naming the first epoch whose data landed wrong, or one the run did not verify."""
    hosts = _hosts(out)
    wrong = out.of("CORRUPT")
    if wrong:
        more = f"; and {len(wrong) - 3} more epoch(s)" if len(wrong) > 3 else ""
        raise SentinelError(f"one-sided data corrupted over {over}: " + "; ".join(
            _wrong(rec, hosts) for rec in wrong[:3]) + more)
    seen = {(r.text("op"), r.text("sync"), r.integer("bytes")): r for r in out.of("VERIFY")}
    missing = [f"{op} under {sync} at {size} B" for op in ops for sync in syncs
               for size in sizes(min_size, max_size) if (op, sync, size) not in seen]
    if missing:
        raise SentinelError(f"the rma benchmark verified no epoch of {', '.join(missing[:4])}"
                            f"{f' and {len(missing) - 4} more' if len(missing) > 4 else ''}")
    counted = sorted(f"{k[0]} under {k[1]} at {k[2]} B" for k, r in seen.items()
                     if r.integer("errors"))
    if counted:  # counted, yet no line saying where: still a corruption
        raise SentinelError(f"one-sided data corrupted over {over}: {', '.join(counted)} "
                            "(the benchmark counted wrong values without naming them)")


#: IMB-RMA's benchmark of each operation, from rank 0 to rank 1.
IMB_BENCHMARKS = {"put": "Unidir_put", "get": "Unidir_get", "acc": "Accumulate"}

#: What ImbRmaCheck reports: RmaCheck's variables, of the flush synchronisation,
#: followed and never judged by default (RmaCheck judges the same transports).
IMB_SPEC = replace(SPEC, checks=("ImbRmaCheck",),
                   variables=tuple(replace(v, headline=None) for v in SPEC.variables
                                   if v not in HOST_VARIABLES))


def imb_sizes(msglog: int) -> list[int]:
    """The sizes of ``-msglog 3:msglog`` that are judged (IMB's 0 B row is not)."""
    return sizes(8, 1 << msglog)


def imb_expected(ops: Sequence[str], msglog: int) -> list[str]:
    """Every variable a complete IMB-RMA run of these operations reports."""
    return expected(ops, ("flush",), 8, 1 << msglog)


def imb_values(out: ImbOutput, ops: Sequence[str]) -> Values:
    """The flush synchronisation's latencies and bandwidths from IMB-RMA's two modes."""
    result = Values(IMB_SPEC)
    for op in ops:
        name = IMB_BENCHMARKS[op]
        times = out.table(name, mode="NON-AGGREGATE").column("t[usec]")
        rates = out.table(name, mode="AGGREGATE").column("Mbytes/sec")
        for size, t in times.items():
            if size:
                result.put("{op}_{sync}_latency_{size}B", t, op=op, sync="flush", size=size)
        for size, rate in rates.items():
            if size:
                result.put("{op}_{sync}_bw_{size}B", rate, op=op, sync="flush", size=size)
        if any(rates.values()):
            result.put("{op}_{sync}_bw_peak", max(rates.values()), op=op, sync="flush")
    return result
