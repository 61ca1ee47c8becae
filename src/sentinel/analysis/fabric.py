"""The fabric benchmark's pair matrix: which node, which link is slow.

Every node pair's bandwidth (and one-way latency) comes from the pairs
sweep, one rank per node. A node is judged by the median of all its pairs
(sent and received): a slow node drags every pair it is in, a slow link
only its own. The partition's level is the median of the node medians, so
one bad node (in 2 (N-1) of the N (N-1) pairs: half of them at N = 4) does
not move it. A node is an outlier when its median is both far out by a
robust z-score (median and MAD of the node medians, Iglewicz and Hoaglin's
0.6745 (x - median) / MAD) and below the partition's by a factor; a pair
is a slow link when it is below the partition's level by the factor while
neither of its nodes is an outlier.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec, Level, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput

#: The benchmark's modes, and the permutation patterns of its patterns mode.
MODES = ("pairs", "aggregate", "loaded", "patterns")
PATTERNS = ("bitrev", "butterfly", "complement", "transpose", "shuffle", "neighbour", "cube",
            "baseline", "random")

#: What FabricCheck reports, by mode (its reference index has the mode).
SPEC = CheckSpec(
    checks=("FabricCheck",),
    levels=(Level("mode", MODES),),
    variables=(
        PerfVar("pair_bw_median", "MB/s", HIGHER, "median of the node medians of pair "
                "bandwidth: the partition's level", headline={}),
        PerfVar("pair_bw_worst", "MB/s", HIGHER, "the slowest pair's bandwidth"),
        PerfVar("pair_latency_median", "us", LOWER, "median of the node medians of pair "
                "latency (8 B, one way, under the sweep's concurrent traffic)", headline={}),
        PerfVar("pair_latency_worst", "us", LOWER, "the slowest pair's latency"),
        PerfVar("outlier_nodes", "1", LOWER, "nodes whose pairs are slow"),
        PerfVar("outlier_links", "1", LOWER, "pairs slow while both their nodes are fine"),
        PerfVar("aggregate_bw_P{pairs}", "MB/s", HIGHER, "summed bandwidth of this many "
                "concurrent node pairs, each streaming one way", scaling="pairs"),
        PerfVar("aggregate_bw_half", "MB/s", HIGHER, "summed bandwidth at N/2 pairs",
                headline={}),
        PerfVar("latency_{state}", "us", LOWER, "8-byte ping-pong between two nodes, one "
                "way, with the other nodes idle or streaming",
                choices={"state": ("idle", "loaded")}),
        PerfVar("loaded_latency_ratio", "1", LOWER, "latency loaded / idle", headline={}),
        PerfVar("{pattern}_{where}_bw", "MB/s", HIGHER, "accepted bandwidth per rank of a "
                "permutation pattern, ranks whose destination is on or off their node",
                choices={"pattern": PATTERNS, "where": ("onnode", "offnode")}),
    ),
)


@dataclass(frozen=True)
class Pair:
    """One directed node pair of the sweep."""

    src: str
    dst: str
    bw_mbs: float
    latency_us: float


@dataclass
class Verdict:
    """The outliers of one quantity (bandwidth or latency) of the matrix."""

    what: str
    level: float
    nodes: dict[str, str] = field(default_factory=dict)
    links: dict[tuple[str, str], str] = field(default_factory=dict)


def pairs_of(out: BenchOutput, stdout: str) -> list[Pair]:
    """The sweep's pairs with the node of each rank (one rank per node, as asked)."""
    hosts = {r.integer("rank"): r.text("host") for r in out.of("AFFINITY")}
    ranks = out.of("CONFIG")[0].integer("ranks")
    if sorted(hosts) != list(range(ranks)):
        raise SentinelError(f"{stdout}: affinity reported for ranks {sorted(hosts)}, "
                            f"not 0..{ranks - 1}")
    if len(set(hosts.values())) != ranks:
        raise SentinelError(f"{stdout}: the pairs sweep needs one rank per node; "
                            f"{ranks} ranks ran on {len(set(hosts.values()))} node(s)")
    found = [Pair(hosts[r.integer("src")], hosts[r.integer("dst")], r.number("bw_mbs"),
                  r.number("latency_us")) for r in out.of("FABRIC_PAIR")]
    if not found:
        raise SentinelError(f"{stdout}: no SENTINEL_FABRIC_PAIR line")
    return found


def _mad(values: list[float]) -> float:
    mid = statistics.median(values)
    return statistics.median(abs(v - mid) for v in values)


def judge(pairs: list[Pair], higher_is_better: bool, factor: float, z: float) -> Verdict:
    """Outlier nodes and links of bandwidth (``higher_is_better``) or latency."""
    what = "bandwidth" if higher_is_better else "latency"
    value = (lambda p: p.bw_mbs) if higher_is_better else (lambda p: p.latency_us)
    nodes = sorted({p.src for p in pairs} | {p.dst for p in pairs})
    mine = {n: [value(p) for p in pairs if n in (p.src, p.dst)] for n in nodes}
    medians = {n: statistics.median(v) for n, v in mine.items()}
    level = statistics.median(medians.values())
    mad = _mad(list(medians.values()))
    verdict = Verdict(what, level)

    def worse(x: float) -> float:  # how many times worse than the level (> 1: worse)
        return level / x if higher_is_better else x / level

    for n, m in medians.items():
        score = 0.6745 * abs(m - level) / mad if mad > 0 else float("inf")
        if worse(m) >= factor and score >= z:
            bad = sum(worse(v) >= factor for v in mine[n])
            verdict.nodes[n] = (f"node {n}: {what} {worse(m):.1f}x "
                                f"{'below' if higher_is_better else 'above'} the partition "
                                f"median in {bad} of {len(mine[n])} pairs")
    for p in pairs:
        if worse(value(p)) >= factor and not ({p.src, p.dst} & verdict.nodes.keys()):
            verdict.links[(p.src, p.dst)] = (f"link {p.src} -> {p.dst}: {what} "
                                             f"{worse(value(p)):.1f}x "
                                             f"{'below' if higher_is_better else 'above'} "
                                             "the partition median, both nodes fine")
    return verdict


def values(pairs: list[Pair], bw: Verdict, latency: Verdict) -> Values:
    """The partition-level variables of a sweep."""
    out = Values(SPEC)
    out.put("pair_bw_median", bw.level)
    out.put("pair_bw_worst", min(p.bw_mbs for p in pairs))
    out.put("pair_latency_median", latency.level)
    out.put("pair_latency_worst", max(p.latency_us for p in pairs))
    # counts of what is wrong are zero when all is well: not a time or a rate
    out["outlier_nodes"] = (float(len(bw.nodes.keys() | latency.nodes.keys())), "1")
    out["outlier_links"] = (float(len(bw.links.keys() | latency.links.keys())), "1")
    return out


def aggregate_values(out: BenchOutput, stdout: str) -> Values:
    """``aggregate_bw_P<k>`` for k = 1 ... N/2 pairs, and ``aggregate_bw_half``."""
    found = Values(SPEC)
    recs = out.of("FABRIC_AGGREGATE")
    if not recs:
        raise SentinelError(f"{stdout}: no SENTINEL_FABRIC_AGGREGATE line")
    for rec in recs:
        found.put("aggregate_bw_P{pairs}", rec.number("bw_mbs"), pairs=rec.integer("pairs"))
    found.put("aggregate_bw_half", recs[-1].number("bw_mbs"))
    return found


def loaded_values(out: BenchOutput, stdout: str) -> Values:
    """Idle and loaded latency and their ratio."""
    found = Values(SPEC)
    states = {rec.text("state"): rec.number("latency_us") for rec in out.of("FABRIC_LATENCY")}
    if set(states) != {"idle", "loaded"}:
        raise SentinelError(f"{stdout}: latency reported for {sorted(states) or 'no'} "
                            "state(s), not idle and loaded")
    for state, latency in states.items():
        found.put("latency_{state}", latency, state=state)
    found.put("loaded_latency_ratio", states["loaded"] / states["idle"])
    return found


def pattern_values(out: BenchOutput, stdout: str) -> Values:
    """Accepted bandwidth per rank of each pattern, on-node and off-node where there is any."""
    found = Values(SPEC)
    recs = out.of("FABRIC_PATTERN")
    missing = [p for p in PATTERNS if p not in {r.text("pattern") for r in recs}]
    if missing:
        raise SentinelError(f"{stdout}: no result for pattern(s) {', '.join(missing)}")
    for rec in recs:
        for where in ("onnode", "offnode"):
            if rec.integer(f"{where}_ranks"):  # no such traffic: nothing to report
                found.put("{pattern}_{where}_bw", rec.number(f"{where}_mbs"),
                          pattern=rec.text("pattern"), where=where)
    return found
