"""The fabric benchmark's modes but the pairs sweep: their values and intervals.

``aggregate`` (k concurrent pairs summed), ``loaded`` (a ping-pong while the
other nodes stream) and ``patterns`` (permutation traffic): each figure is
the median of the benchmark's repetitions with its order-statistics range.
The pairs sweep and its verdicts: :mod:`sentinel.analysis.fabric`.
"""

from __future__ import annotations

from sentinel.analysis.fabric import PATTERNS, SPEC
from sentinel.analysis.fits import median_coverage
from sentinel.analysis.variables import Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput


def _coverage(out: BenchOutput) -> float:
    """The coverage of the benchmark's intervals: the median's over its repetitions."""
    return median_coverage(out.of("CONFIG")[0].integer("repetitions"))


def aggregate_values(out: BenchOutput, stdout: str) -> Values:
    """``aggregate_bw_P<k>`` for k = 1 ... N/2 pairs, and ``aggregate_bw_half``."""
    found = Values(SPEC)
    recs = out.of("FABRIC_AGGREGATE")
    if not recs:
        raise SentinelError(f"{stdout}: no SENTINEL_FABRIC_AGGREGATE line")
    coverage = _coverage(out)
    for rec in recs:
        found.put("aggregate_bw_P{pairs}", *rec.spread("bw", "mbs"), coverage,
                  pairs=rec.integer("pairs"))
    found.put("aggregate_bw_half", *recs[-1].spread("bw", "mbs"), coverage)
    return found


def loaded_values(out: BenchOutput, stdout: str) -> Values:
    """Idle and loaded latency and their ratio.

    The ratio's interval is that of the loaded latency over the idle one's
    ends (loaded low / idle high .. loaded high / idle low): it holds the
    ratio of the medians whenever both intervals hold theirs, with at least
    the product of their coverages.
    """
    found = Values(SPEC)
    states = {rec.text("state"): rec.spread("latency", "us")
              for rec in out.of("FABRIC_LATENCY")}
    if set(states) != {"idle", "loaded"}:
        raise SentinelError(f"{stdout}: latency reported for {sorted(states) or 'no'} "
                            "state(s), not idle and loaded")
    coverage = _coverage(out)
    for state, (latency, interval) in states.items():
        found.put("latency_{state}", latency, interval, coverage, state=state)
    (idle, (idle_lo, idle_hi)), (busy, (busy_lo, busy_hi)) = states["idle"], states["loaded"]
    found.put("loaded_latency_ratio", busy / idle, (busy_lo / idle_hi, busy_hi / idle_lo),
              coverage ** 2)
    return found


def pattern_values(out: BenchOutput, stdout: str) -> Values:
    """Accepted bandwidth per rank of each pattern, on-node and off-node where there is any."""
    found = Values(SPEC)
    recs = out.of("FABRIC_PATTERN")
    missing = [p for p in PATTERNS if p not in {r.text("pattern") for r in recs}]
    if missing:
        raise SentinelError(f"{stdout}: no result for pattern(s) {', '.join(missing)}")
    coverage = _coverage(out)
    for rec in recs:
        for where in ("onnode", "offnode"):
            if rec.integer(f"{where}_ranks"):  # no such traffic: nothing to report
                found.put("{pattern}_{where}_bw", *rec.spread(where, "mbs"), coverage,
                          pattern=rec.text("pattern"), where=where)
    return found
