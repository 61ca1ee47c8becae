"""The fabric benchmark's pairs sweep as it printed it: each directed node pair's figures.

The pairs measured in the sweep's steps, each beside the other pairs of its
step, and the suspect links measured again alone (``--confirm``), by node
name (one rank per node). What they say: :mod:`sentinel.analysis.fabric`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput


@dataclass(frozen=True)
class Pair:
    """One directed node pair of the sweep."""

    src: str
    dst: str
    bw_mbs: float
    latency_us: float


@dataclass(frozen=True)
class Alone:
    """The sweep's suspect links measured again alone, by (src, dst) node names.

    ``suspects`` is how many were suspect (``len(pairs)`` of them measured);
    ``None``: the sweep measured none again (``--confirm 0``).
    """

    pairs: dict[tuple[str, str], Pair] = field(default_factory=dict)
    suspects: int | None = None


def _hosts(out: BenchOutput, stdout: str) -> dict[int, str]:
    """The node of each rank, one rank per node as the pairs sweep needs."""
    hosts = {r.integer("rank"): r.text("host") for r in out.of("AFFINITY")}
    ranks = out.of("CONFIG")[0].integer("ranks")
    if sorted(hosts) != list(range(ranks)):
        raise SentinelError(f"{stdout}: affinity reported for ranks {sorted(hosts)}, "
                            f"not 0..{ranks - 1}")
    if len(set(hosts.values())) != ranks:
        raise SentinelError(f"{stdout}: the pairs sweep needs one rank per node; "
                            f"{ranks} ranks ran on {len(set(hosts.values()))} node(s)")
    return hosts


def _pairs(out: BenchOutput, hosts: dict[int, str], kind: str) -> list[Pair]:
    return [Pair(hosts[r.integer("src")], hosts[r.integer("dst")], r.number("bw_mbs"),
                 r.number("latency_us")) for r in out.of(kind)]


def pairs_of(out: BenchOutput, stdout: str) -> list[Pair]:
    """The sweep's pairs with the node of each rank (one rank per node, as asked)."""
    found = _pairs(out, _hosts(out, stdout), "FABRIC_PAIR")
    if not found:
        raise SentinelError(f"{stdout}: no SENTINEL_FABRIC_PAIR line")
    return found


def alone_of(out: BenchOutput, stdout: str) -> Alone:
    """The suspect links measured again alone; a sweep that measured them must say how many."""
    config = out.of("CONFIG")[0]
    if "confirm" not in config.fields or not config.integer("confirm"):
        return Alone()
    summary = out.of("FABRIC_CONFIRMS")
    if not summary:
        raise SentinelError(f"{stdout}: the sweep was to measure its suspect links again "
                            "(--confirm) and printed no SENTINEL_FABRIC_CONFIRMS line: "
                            "the output is truncated")
    found = _pairs(out, _hosts(out, stdout), "FABRIC_CONFIRM")
    return Alone({(p.src, p.dst): p for p in found}, summary[0].integer("suspects"))


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
