"""The fabric benchmark's pair matrix: which node, which link is slow.

Every directed node pair's bandwidth and 8-byte latency comes from the
pairs sweep, one rank per node. A node is judged by the median of all its
pairs (sent and received): a slow node drags every pair it is in, a slow
link only its own. The partition's level is the median of the node
medians, so one bad node (in 2 (N-1) of the N (N-1) pairs: half of them at
N = 4) does not move it. A node is an outlier when its median is both below
the level by a factor (latency: above) and far out by a robust z-score,
Iglewicz and Hoaglin's 0.6745 |x - median| / MAD over the node medians. A
pair is a slow link when the same holds for it among the pairs of the
nodes that are fine (the MAD over those pairs). Both are taken on the
logarithm of the values: bandwidth and latency go wrong by factors, and a
factor is a distance there, whatever the level (the medians of an even
count are the geometric means of the middle two).

The z-score needs the healthy nodes to agree: where they spread widely (a
shared or busy fabric), it can miss a node slow by far more than the
factor. A node is then named all the same when it is *separated*: every one
of its pairs with a healthy node is worse than every pair between healthy
nodes, with enough pairs on each side that the chance of that ordering
among exchangeable pairs, 1 / C(a + b, a), is at most :data:`SEPARATED_P`
(a rank-sum test at its extreme).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field

from sentinel.analysis.fits import median_coverage, median_interval
from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec, Level, PerfVar, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput

#: The benchmark's modes, and the permutation patterns of its patterns mode.
MODES = ("pairs", "aggregate", "loaded", "patterns")
PATTERNS = ("bitrev", "butterfly", "complement", "transpose", "shuffle", "neighbour", "cube",
            "baseline", "random")
#: The most chance, among exchangeable pairs, of a node's pairs all ordering
#: below the healthy ones' for it to be named by separation (see the module).
SEPARATED_P = 0.002

#: What FabricCheck reports, by mode (its reference index has the mode).
SPEC = CheckSpec(
    checks=("FabricCheck",),
    levels=(Level("mode", MODES),),
    figures="fabric",
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
                "concurrent node pairs, each streaming one way"),
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
    #: The order-statistics interval of the level over the fine nodes' medians,
    #: and its coverage (the range of 4 nodes: 87.5 %).
    interval: tuple[float, float] | None = None
    coverage: float = 0.0
    #: Why the partition's level cannot be trusted ('' when it can): more
    #: than a third of the nodes look slow.
    doubt: str = ""
    #: Nodes whose every pair is with a named node: not judged.
    unjudged: list[str] = field(default_factory=list)


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


def pairs_json(pairs: list[Pair]) -> str:
    """The pairs as JSON ``[[src, dst, MB/s, us], ...]`` (a check field the report reads)."""
    return json.dumps([[p.src, p.dst, p.bw_mbs, p.latency_us] for p in pairs])


def pairs_from_json(text: str, where: str) -> list[Pair]:
    """:func:`pairs_json`'s pairs again; SentinelError names ``where`` when it is not that."""
    try:
        rows = json.loads(text)
        return [Pair(str(a), str(b), float(bw), float(lat)) for a, b, bw, lat in rows]
    except (ValueError, TypeError) as err:
        raise SentinelError(f"{where}: fabric_pairs is not [[src, dst, MB/s, us], ...]: "
                            f"{err}") from None


def _mad(values: list[float]) -> float:
    mid = statistics.median(values)
    return statistics.median(abs(v - mid) for v in values)


def _z(x: float, centre: float, mad: float) -> float:
    """The robust z-score of ``x`` (infinite when the values do not spread at all)."""
    return 0.6745 * abs(x - centre) / mad if mad > 0 else math.inf


def _logs(pairs: list[Pair], higher_is_better: bool) -> dict[Pair, float]:
    """Each pair's bandwidth or latency, as its logarithm."""
    return {p: math.log(p.bw_mbs if higher_is_better else p.latency_us) for p in pairs}


def level(pairs: list[Pair], higher_is_better: bool) -> float:
    """The median of the node medians of bandwidth or latency: one slow node does not move it."""
    return math.exp(statistics.median(_scores(_by_node(_logs(pairs, higher_is_better)),
                                              set()).values()))


def _by_node(logs: dict[Pair, float]) -> dict[str, list[tuple[str, float]]]:
    """Each node's pairs (sent and received) as (peer, log value)."""
    out: dict[str, list[tuple[str, float]]] = {}
    for p, lg in logs.items():
        out.setdefault(p.src, []).append((p.dst, lg))
        out.setdefault(p.dst, []).append((p.src, lg))
    return out


def _scores(mine: dict[str, list[tuple[str, float]]], bad: set[str], trim: int = 0,
            sign: float = 1.0) -> dict[str, float]:
    """Each node's median over its pairs with peers not in ``bad`` (none left: no score).

    ``trim``: the pairs with that many of its peers, its worst (``sign``: > 0
    worse), are left out too, keeping one peer at least: a healthy node's
    pairs with culprits not yet named then do not drag it down to them, and
    a culprit, all of whose pairs are slow, stays slow.
    """
    out = {}
    for n, peers in mine.items():
        kept = [(peer, lg) for peer, lg in peers if peer not in bad]
        by_peer: dict[str, list[float]] = {}
        for peer, lg in kept:
            by_peer.setdefault(peer, []).append(lg)
        drop = min(trim, len(by_peer) - 1)
        if drop > 0:
            worst = sorted(by_peer, key=lambda q: sign * statistics.median(by_peer[q]))[-drop:]
            kept = [(peer, lg) for peer, lg in kept if peer not in worst]
        if kept:
            out[n] = statistics.median(lg for _, lg in kept)
    return out


def _offs(scores: dict[str, float], bad: set[str], sign: float,
          worse: float) -> dict[str, tuple[float, float]]:
    """Each node's distance to the others' centre (> 0: worse) and its robust z-score.

    Against the healthy others: at small N a node's own median would widen
    the spread it is measured by, and a culprit not yet named would widen it
    for the next, so the spread is that of the others within the factor of
    their centre.
    """
    out = {}
    for n, m in scores.items():
        others = [v for k, v in scores.items() if k != n and k not in bad]
        if n in bad or not others:
            continue
        centre = statistics.median(others)
        near = [v for v in others if abs(v - centre) < worse] or others
        out[n] = (sign * (m - centre), _z(m, centre, _mad(near)))
    return out


def separated(mine: dict[str, list[tuple[str, float]]], node: str, healthy: set[str],
              sign: float) -> bool:
    """Whether ``node`` is separated from the ``healthy`` nodes.

    Every pair of its with a healthy node is worse than every pair between
    two healthy nodes, with at most :data:`SEPARATED_P` chance of that order.
    """
    its = [sign * lg for peer, lg in mine[node] if peer in healthy]
    # each pair between healthy nodes is in both its nodes' lists: counted once
    theirs = [sign * lg for h in healthy for peer, lg in mine[h] if peer in healthy]
    a, b = len(its), len(theirs) // 2
    return (a > 0 and b > 0 and 1 / math.comb(a + b, a) <= SEPARATED_P
            and min(its) > max(theirs))


def _worst(mine: dict[str, list[tuple[str, float]]], scores: dict[str, float], bad: set[str],
           sign: float, worse: float, z: float) -> tuple[str, float] | None:
    """The node furthest out on the bad side, judged against the healthy others, if any is.

    Out means past the factor and either far out by its z-score or separated
    from the nodes within the factor.
    """
    offs = _offs(scores, bad, sign, worse)
    healthy = {n for n, (off, _) in offs.items() if off < worse}
    found = None
    for n, (off, score) in offs.items():
        if off < worse or (found and off <= found[1]):
            continue
        if score >= z or separated(mine, n, healthy, sign):
            found = (n, off)
    return found


def judge(pairs: list[Pair], higher_is_better: bool, factor: float, z: float) -> Verdict:
    """Outlier nodes and links of bandwidth (``higher_is_better``) or latency.

    Nodes are named one at a time, the worst first; each named node's pairs
    then leave the other nodes' medians, so that a healthy node's pairs with
    a slow one do not count against it and the spread is the healthy
    majority's. Up to a third of the nodes are named; more than that found
    slow leaves the partition's level itself in doubt (:attr:`Verdict.doubt`).
    """
    what = "bandwidth" if higher_is_better else "latency"
    side = "below" if higher_is_better else "above"
    sign = -1.0 if higher_is_better else 1.0  # log(value) - level, > 0: worse
    logs = _logs(pairs, higher_is_better)
    mine = _by_node(logs)
    nodes = sorted(mine)
    worse = math.log(factor)
    cap = max(len(nodes) // 3, 1)
    bad: set[str] = set()
    while True:
        # each node judged without its pairs with as many of its worst peers
        # as culprits may remain unnamed: with a third of the nodes slow, those
        # pairs can be most of a healthy node's slow side
        ranked = _scores(mine, bad, cap - len(bad), sign)
        found = _worst(mine, ranked, bad, sign, worse, z)
        if found is None or len(bad) == cap:
            break
        bad.add(found[0])
    scores = _scores(mine, bad)
    fine = [v for k, v in scores.items() if k not in bad]
    level = statistics.median(fine)
    lo, hi = median_interval(fine)
    verdict = Verdict(what, math.exp(level), interval=(math.exp(lo), math.exp(hi)),
                      coverage=median_coverage(len(fine)))
    for n in sorted(bad):
        kept = [lg for peer, lg in mine[n] if peer not in bad]
        slow = sum(sign * (lg - level) >= worse for lg in kept)
        verdict.nodes[n] = (f"node {n}: {what} {math.exp(sign * (scores[n] - level)):.1f}x "
                            f"{side} the partition median in {slow} of {len(kept)} pairs"
                            + (" with healthy nodes" if len(bad) > 1 else ""))
    if found is not None:
        verdict.doubt = (f"{what}: more than a third of the {len(nodes)} nodes look slow "
                         f"({', '.join(sorted(bad | {found[0]}))} and maybe more): the "
                         "partition's level itself is in doubt")
    verdict.unjudged = sorted(set(nodes) - set(scores))
    _judge_links(verdict, logs, sign, worse, z, level)
    return verdict


def _judge_links(verdict: Verdict, logs: dict[Pair, float], sign: float, worse: float,
                 z: float, level: float) -> None:
    """Pairs slow while both their nodes are fine, named once (both ways when so)."""
    side = "below" if sign < 0 else "above"
    fine = {p: lg for p, lg in logs.items() if not {p.src, p.dst} & verdict.nodes.keys()}
    spread = _mad(list(fine.values())) if fine else 0.0
    slow = {(p.src, p.dst): sign * (lg - level) for p, lg in fine.items()
            if sign * (lg - level) >= worse and _z(lg, level, spread) >= z}
    for (a, b), by in sorted(slow.items()):
        if (b, a) in slow and b < a:
            continue  # said with (b, a): both ways
        ways = (b, a) in slow
        verdict.links[(a, b)] = (f"link {a} {'<->' if ways else '->'} {b}: {verdict.what} "
                                 f"{math.exp(min(by, slow.get((b, a), by))):.1f}x {side} the "
                                 f"partition median{', both ways' if ways else ''}; "
                                 "both nodes fine")


def findings(bw: Verdict, latency: Verdict) -> list[str]:
    """What a sweep found, one line each: nodes, links, a level in doubt, nodes not judged."""
    found = [*bw.nodes.values(), *latency.nodes.values(), *bw.links.values(),
             *latency.links.values(), *filter(None, (bw.doubt, latency.doubt))]
    unjudged = sorted(set(bw.unjudged) | set(latency.unjudged))
    if unjudged and found:
        found.append(f"not judged: {', '.join(unjudged)} (every pair of theirs is with a "
                     "named node; run rounds=all)")
    return found


def values(pairs: list[Pair], bw: Verdict, latency: Verdict) -> Values:
    """The partition-level variables of a sweep."""
    out = Values(SPEC)
    out.put("pair_bw_median", bw.level, bw.interval, bw.coverage)
    out.put("pair_bw_worst", min(p.bw_mbs for p in pairs))
    out.put("pair_latency_median", latency.level, latency.interval, latency.coverage)
    out.put("pair_latency_worst", max(p.latency_us for p in pairs))
    # counts of what is wrong are zero when all is well: not a time or a rate
    out["outlier_nodes"] = (float(len(bw.nodes.keys() | latency.nodes.keys())), "1")
    out["outlier_links"] = (float(len(bw.links.keys() | latency.links.keys())), "1")
    return out


def _coverage(out: BenchOutput) -> float:
    """The coverage of the benchmark's intervals: the median's over its repetitions."""
    return median_coverage(out.of("CONFIG")[0].integer("repetitions"))


def _spread(rec, key: str, unit: str) -> tuple[float, tuple[float, float]]:
    """A record's median ``<key>_<unit>`` and its interval ``<key>_lo_<unit>`` .. ``_hi_``."""
    return rec.number(f"{key}_{unit}"), (rec.number(f"{key}_lo_{unit}"),
                                         rec.number(f"{key}_hi_{unit}"))


def aggregate_values(out: BenchOutput, stdout: str) -> Values:
    """``aggregate_bw_P<k>`` for k = 1 ... N/2 pairs, and ``aggregate_bw_half``."""
    found = Values(SPEC)
    recs = out.of("FABRIC_AGGREGATE")
    if not recs:
        raise SentinelError(f"{stdout}: no SENTINEL_FABRIC_AGGREGATE line")
    coverage = _coverage(out)
    for rec in recs:
        found.put("aggregate_bw_P{pairs}", *_spread(rec, "bw", "mbs"), coverage,
                  pairs=rec.integer("pairs"))
    found.put("aggregate_bw_half", *_spread(recs[-1], "bw", "mbs"), coverage)
    return found


def loaded_values(out: BenchOutput, stdout: str) -> Values:
    """Idle and loaded latency and their ratio.

    The ratio's interval is that of the loaded latency over the idle one's
    ends (loaded low / idle high .. loaded high / idle low): it holds the
    ratio of the medians whenever both intervals hold theirs, with at least
    the product of their coverages.
    """
    found = Values(SPEC)
    states = {rec.text("state"): _spread(rec, "latency", "us")
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
                found.put("{pattern}_{where}_bw", *_spread(rec, where, "mbs"), coverage,
                          pattern=rec.text("pattern"), where=where)
    return found
