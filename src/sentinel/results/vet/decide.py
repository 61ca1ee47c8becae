"""Which named nodes are drained: the guards against draining a healthy machine.

A node is drained only when all of these hold:

* **no doubt**: no node-local check failed on more than a third of the
  nodes it measured, and the node was not named by a sweep that found the
  partition's level itself in doubt (such a sweep names no node:
  :mod:`sentinel.results.vet.findings`). A shift of the whole partition,
  or of its references, is a change point to look at, not a set of bad
  nodes;
* **the cap**: the nodes to drain are at most ``--max-drain`` (a count, or
  a percentage of the nodes measured; at least one node);
* **the repeat rule**: a second measurement, taken after the first, names
  the node again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sentinel.errors import SentinelError
from sentinel.results.vet.findings import Finding, Measured
from sentinel.site.nodes import NodeState

#: More than this share of a check's nodes failing is the partition's shift.
SHIFT = 1 / 3


@dataclass
class Decision:
    """Nodes to drain (with the findings of both measurements) and why others are not."""

    drain: dict[str, list[Finding]] = field(default_factory=dict)
    held: list[str] = field(default_factory=list)


def cap(text: str, measured_nodes: int) -> int:
    """The most nodes one session may drain: ``N`` nodes or ``P%`` of those measured."""
    try:
        if text.endswith("%"):
            share = float(text[:-1]) / 100
            if not 0 <= share <= 1:
                raise ValueError
            return max(1, math.floor(share * measured_nodes))
        count = int(text)
        if count < 0:
            raise ValueError
        return count
    except ValueError:
        raise SentinelError(f"--max-drain {text!r}: a count of nodes (3) or a percentage of "
                            "the nodes measured (5%)") from None


def doubts(m: Measured) -> list[str]:
    """Why the measurement cannot tell bad nodes from a shifted partition ([] when it can).

    A node-local check that failed on more than a third of the nodes; a
    sweep in doubt only drops its own findings (:attr:`Measured.doubts`).
    """
    out = []
    by_check: dict[str, set[str]] = {}
    for f in m.findings:
        if f.check != "FabricCheck":
            by_check.setdefault(f"{f.where} {f.check}", set()).add(f.node)
    for check, nodes in sorted(by_check.items()):
        if m.nodes and len(nodes) > SHIFT * len(m.nodes):
            out.append(f"{check} failed on {len(nodes)} of the {len(m.nodes)} nodes measured "
                       f"({', '.join(sorted(nodes))}): more than a third, a shift of the "
                       "partition or its references, not bad nodes")
    return out


def first_guards(first: Measured, most: int) -> list[str]:
    """Why nothing may be drained after the first measurement ([]: measure again)."""
    held = doubts(first)
    if held:
        return [*held, "nothing drained: the band itself is in doubt"]
    named = first.named()
    if len(named) > most:
        return [f"{len(named)} nodes named ({', '.join(sorted(named))}), more than the cap "
                f"of {most} (--max-drain) for the {len(first.nodes)} nodes measured: nothing "
                "drained; so many at once is rarely the nodes' own fault"]
    return []


def decide(first: Measured, again: Measured, most: int) -> Decision:
    """The nodes named by both measurements, within the cap and without doubt."""
    out = Decision()
    held = first_guards(first, most)
    held += [f"second measurement: {d}" for d in doubts(again)]
    if held:
        out.held = held
        return out
    again_named = again.named()
    for node, findings in sorted(first.named().items()):
        if node in again_named:
            out.drain[node] = findings + again_named[node]
        elif node in again.nodes:
            out.held.append(f"{node}: named once, not again by session "
                            f"{', '.join(s[:8] for s in again.sessions)}: not drained")
        else:
            out.held.append(f"{node}: not measured again (not in the second measurement's "
                            "nodes): not drained")
    if len(out.drain) > most:  # named again beyond the cap: nothing
        out.held.append(f"{len(out.drain)} nodes named twice, more than the cap of {most}: "
                        "nothing drained")
        out.drain = {}
    return out


def health_guard(states: list[NodeState], node: str, most: int, window_h: float,
                 now: float) -> str:
    """Why a health check may not drain ``node`` ('' when it may).

    Each node's health check runs alone, so the count is the scheduler's:
    the nodes of ``node``'s partition (``states``) the suite drained
    (their reason starts with ``sentinel:``) in the last ``window_h``
    hours, a drain of unknown time counted. At ``most`` of them, nothing
    more is drained: so many nodes failing at once is a shift of the
    partition, its software or its references, not bad nodes.
    """
    recent = sorted(s.name for s in states if s.ours and s.name != node
                    and (s.since is None or s.since >= now - window_h * 3600))
    if len(recent) < most:
        return ""
    return (f"{len(recent)} node(s) of the partition drained by the suite in the last "
            f"{window_h:g} h ({', '.join(recent)}), the most --max-drain allows of its "
            f"{len(states)} nodes: nothing more is drained; the partition's level is in doubt "
            "(a shift of the partition, its software or its references, not bad nodes)")
