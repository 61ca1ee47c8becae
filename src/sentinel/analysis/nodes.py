"""Each node of a partition judged against the reference band and against the other nodes.

An each-node job (:mod:`sentinel.rfm.each_node`) measures the same check on
every node at once. A node is named when a referenced variable of its is
worse than the band (``[reference, lower, upper, unit]``, the partition's
entry), or when a headline variable of its is ``factor`` times worse than
the median of the nodes: the second needs no reference (a new partition,
``sentinel init``), and needs three nodes or more, since the median of two
is their midpoint, which neither can be far from.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from sentinel.analysis.baseline import worse_edge
from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec

#: Fewest nodes whose median a node is compared with.
MIN_NODES = 3

NodeValues = Mapping[str, Mapping[str, tuple[float, str]]]


def outside_band(name: str, value: float, unit: str, better: str,
                 entry: Mapping[str, list[str]]) -> str:
    """Why ``value`` is worse than its reference band ('' when within, or no band)."""
    found = worse_edge(entry[name], better) if name in entry else None
    if found is None:
        return ""
    ref, edge = found
    if (value < edge) if better == HIGHER else (value > edge):
        side = "below" if better == HIGHER else "above"
        return (f"{name} {value:.4g} {unit}, {side} its reference band "
                f"({ref:.4g} {unit} {100 * (edge / ref - 1):+.0f} %)")
    return ""


def off_median(name: str, value: float, unit: str, better: str, median: float,
               factor: float) -> str:
    """Why ``value`` is ``factor`` times worse than the nodes' median ('' when it is not)."""
    if median <= 0 or value <= 0 or better not in (HIGHER, LOWER):
        return ""
    times = median / value if better == HIGHER else value / median
    if times < factor:
        return ""
    return (f"{name} {value:.4g} {unit}, {times:.1f}x {'below' if better == HIGHER else 'above'}"
            f" the median of the nodes ({median:.4g} {unit})")


def node_findings(values: NodeValues, spec: CheckSpec, entry: Mapping[str, list[str]],
                  factor: float) -> list[str]:
    """``node N: ...`` for each node with a value outside its band or far off the nodes' median."""
    medians: dict[str, float] = {}
    names = {name for per_node in values.values() for name in per_node}
    for name in names:
        measured = [v[name][0] for v in values.values() if name in v]
        if len(measured) >= MIN_NODES:
            medians[name] = statistics.median(measured)
    found = []
    for node in sorted(values):
        why = []
        for name, (value, unit) in sorted(values[node].items()):
            var = spec.lookup(name)
            if var is None:
                continue
            reason = outside_band(name, value, unit, var.better, entry)
            if not reason and name in medians and var.is_headline(name):
                reason = off_median(name, value, unit, var.better, medians[name], factor)
            if reason:
                why.append(reason)
        if why:
            found.append(f"node {node}: " + "; ".join(why))
    return found
