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

A pair is measured beside the other pairs of its step. The benchmark
measures its suspect links again alone (``--confirm``); a link slow in the
sweep and within the factor alone is slow only beside the step's other
pairs (a path they share or, on shared hosts, their CPUs): it is not named
as a bad link but listed as cleared, with both figures. Contention itself
is the aggregate and patterns modes' to measure.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from sentinel.analysis.fabric_sweep import Alone, Pair
from sentinel.analysis.fits import median_coverage, median_interval
from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec, Level, PerfVar, Values

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
                "latency (8 B, one way, under the sweep's concurrent traffic)", followed={}),
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
    #: Links slow in the sweep and within the factor alone: not named.
    cleared: dict[tuple[str, str], str] = field(default_factory=dict)


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


def judge(pairs: list[Pair], higher_is_better: bool, factor: float, z: float,
          alone: Alone | None = None) -> Verdict:
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
    _judge_links(verdict, logs, sign, worse, z, level, alone or Alone())
    return verdict


def _judge_links(verdict: Verdict, logs: dict[Pair, float], sign: float, worse: float,
                 z: float, level: float, alone: Alone) -> None:
    """Pairs slow while both their nodes are fine, named once (both ways when so).

    A direction measured again alone within the factor is slow only beside
    the step's other pairs: a link none of whose slow directions stay slow
    alone is cleared, not named.
    """
    side = "below" if sign < 0 else "above"
    fine = {p: lg for p, lg in logs.items() if not {p.src, p.dst} & verdict.nodes.keys()}
    spread = _mad(list(fine.values())) if fine else 0.0
    slow = {(p.src, p.dst): sign * (lg - level) for p, lg in fine.items()
            if sign * (lg - level) >= worse and _z(lg, level, spread) >= z}
    for (a, b), by in sorted(slow.items()):
        if (b, a) in slow and b < a:
            continue  # said with (b, a): both ways
        ways = (b, a) in slow
        said = (f"link {a} {'<->' if ways else '->'} {b}: {verdict.what} "
                f"{math.exp(min(by, slow.get((b, a), by))):.1f}x {side} the partition "
                f"median{', both ways' if ways else ''}")
        directions = [(a, b), (b, a)] if ways else [(a, b)]
        offs = [_alone_off(alone, d, verdict.what, sign, level) for d in directions]
        if all(off is not None and off < worse for off in offs):
            verdict.cleared[(a, b)] = (f"{said} beside the step's other pairs; "
                                       f"{_alone_said(alone, directions, verdict.what)} "
                                       "alone, within the factor: not a bad link")
        else:
            verdict.links[(a, b)] = (f"{said}; both nodes fine"
                                     f"{_alone_note(alone, directions, verdict.what)}")


def _alone_off(alone: Alone, pair: tuple[str, str], what: str, sign: float,
               level: float) -> float | None:
    """How far ``pair`` measured alone is past the level (> 0: worse); None: not measured."""
    p = alone.pairs.get(pair)
    if p is None:
        return None
    return sign * (math.log(p.bw_mbs if what == "bandwidth" else p.latency_us) - level)


def _alone_said(alone: Alone, directions: list[tuple[str, str]], what: str) -> str:
    unit = "MB/s" if what == "bandwidth" else "us"
    figures = [alone.pairs[d].bw_mbs if what == "bandwidth" else alone.pairs[d].latency_us
               for d in directions if d in alone.pairs]
    return " and ".join(f"{x:.4g} {unit}" for x in figures)


def _alone_note(alone: Alone, directions: list[tuple[str, str]], what: str) -> str:
    """What the measurement alone said of a named link ('' when the sweep measured none)."""
    if alone.suspects is None:
        return ""
    if any(d in alone.pairs for d in directions):
        return f"; {_alone_said(alone, directions, what)} alone"
    return (f"; not measured alone ({len(alone.pairs)} of {alone.suspects} suspect links "
            "were: raise confirm)")


def findings(bw: Verdict, latency: Verdict) -> list[str]:
    """What a sweep found, one line each: nodes, links, a level in doubt, nodes not judged."""
    found = [*bw.nodes.values(), *latency.nodes.values(), *bw.links.values(),
             *latency.links.values(), *filter(None, (bw.doubt, latency.doubt))]
    unjudged = sorted(set(bw.unjudged) | set(latency.unjudged))
    if unjudged and found:
        found.append(f"not judged: {', '.join(unjudged)} (every pair of theirs is with a "
                     "named node; run rounds=all)")
    return found


def cleared(bw: Verdict, latency: Verdict) -> list[str]:
    """Links slow in the sweep but not alone: listed, not failed."""
    return [*bw.cleared.values(), *latency.cleared.values()]


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
