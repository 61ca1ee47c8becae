"""Where ranks and threads ran, and what is wrong with it for the mapping asked.

The benchmarks report each rank's host and CPU binding (``SENTINEL_AFFINITY``)
and each OpenMP thread's (``SENTINEL_THREAD``); these are checked against the
node's topology and the mapping (:mod:`sentinel.mpi.mappings`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

from sentinel.errors import SentinelError


@dataclass(frozen=True)
class Topology:
    """Which core and socket each CPU of a node belongs to."""

    core_of: Mapping[int, int]
    socket_of: Mapping[int, int]

    @classmethod
    def from_masks(cls, cores: Sequence[str], sockets: Sequence[str]) -> Topology:
        """Build from ReFrame's processor topology (hexadecimal CPU masks)."""
        return cls(_index(cores), _index(sockets))

    @property
    def num_sockets(self) -> int:
        """Number of sockets."""
        return len(set(self.socket_of.values()))


def _index(masks: Sequence[str]) -> dict[int, int]:
    out = {}
    for i, mask in enumerate(masks):
        bits = int(mask, 16)
        cpu = 0
        while bits:
            if bits & 1:
                out[cpu] = i
            bits >>= 1
            cpu += 1
    return out


@dataclass(frozen=True)
class RankPlacement:
    """Where one rank ran, from its SENTINEL_AFFINITY line."""

    rank: int
    host: str
    cpus: frozenset[int]


def parse_cpu_list(text: str) -> frozenset[int]:
    """'0-2,5' -> {0, 1, 2, 5}; raises SentinelError on anything else."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise SentinelError(f"malformed CPU list {text!r} in affinity report") from None
    return frozenset(cpus)


def _one_of(cpus: frozenset[int], group: Mapping[int, int]) -> int | None:
    """The single group (core or socket) that holds all of cpus, else None."""
    groups = {group.get(c) for c in cpus}
    return groups.pop() if len(groups) == 1 and None not in groups else None


def placement_problems(mapping: str, ranks: Sequence[RankPlacement],
                       topo: Topology | None) -> list[str]:
    """What is wrong with where ranks 0 and 1 ran, for ``mapping``."""
    pair = sorted(ranks, key=lambda r: r.rank)[:2]
    if len(pair) < 2:
        return [f"affinity reported for {len(pair)} rank(s), need ranks 0 and 1"]
    a, b = pair
    same_host = a.host == b.host
    if mapping == "node":
        return [] if not same_host else [f"mapping node: ranks 0 and 1 both ran on {a.host}"]
    out = [] if same_host else [f"mapping {mapping}: ranks ran on {a.host} and {b.host}"]
    if topo is None:
        return out + ["processor topology unknown: cannot validate binding"]
    cores = [_one_of(r.cpus, topo.core_of) for r in pair]
    for r, core in zip(pair, cores):
        if core is None:
            out.append(f"rank {r.rank} is not bound to one core (cpus {sorted(r.cpus)})")
    if None not in cores and cores[0] == cores[1]:
        out.append(f"ranks 0 and 1 share core {cores[0]}")
    sockets = [_one_of(r.cpus, topo.socket_of) for r in pair]
    if mapping == "core" and sockets[0] != sockets[1]:
        out.append(f"mapping core: rank 0 on socket {sockets[0]}, rank 1 on socket "
                   f"{sockets[1]}; both belong on one")
    if mapping == "socket" and (None in sockets or sockets[0] == sockets[1]):
        where = (f"both on socket {sockets[0]}" if sockets[0] is not None
                 and sockets[0] == sockets[1] else
                 f"on sockets {', '.join('?' if s is None else str(s) for s in sockets)}")
        out.append(f"mapping socket: ranks 0 and 1 {where}, not on two different sockets")
    return out


@dataclass(frozen=True)
class Levels:
    """Which levels of the machine a job's launches put ranks on.

    ``shares``: where two ranks shared a node (``ranks 0, 1 on m1``), ``''``
    if none did; ``spans``: the nodes of a launch whose ranks ran on more
    than one (``m1, m2``), ``''`` if none.
    """

    shares: str
    spans: str

    @classmethod
    def of(cls, launches: Sequence[Sequence[RankPlacement]]) -> Levels:
        """The levels of ``launches``, each the placement of its ranks."""
        shares = spans = ""
        for ranks in launches:
            per_host: dict[str, list[int]] = {}
            for r in sorted(ranks, key=lambda r: r.rank):
                per_host.setdefault(r.host, []).append(r.rank)
            crowded = [(h, rs) for h, rs in per_host.items() if len(rs) > 1]
            if crowded and not shares:
                host, rs = crowded[0]
                shares = f"ranks {', '.join(map(str, rs[:4]))}{', ...' if len(rs) > 4 else ''} " \
                         f"on {host}"
            if len(per_host) > 1 and not spans:
                spans = ", ".join(sorted(per_host))
        return cls(shares, spans)


@dataclass(frozen=True)
class ThreadPlacement:
    """Where one OpenMP thread ran, from its SENTINEL_THREAD line."""

    rank: int
    thread: int
    cpu: int
    cpus: frozenset[int]


def thread_problems(ranks: Sequence[RankPlacement], threads: Sequence[ThreadPlacement],
                    per_rank: int, topo: Topology | None) -> list[str]:
    """What is wrong with where the threads ran (OMP_PLACES=cores, OMP_PROC_BIND=close).

    Every rank must report ``per_rank`` threads, each bound to one core and
    running on it, no two threads of a node on the same core.
    """
    out = []
    host = {r.rank: r.host for r in ranks}
    by_rank: dict[int, list[ThreadPlacement]] = {}
    for t in threads:
        by_rank.setdefault(t.rank, []).append(t)
    for rank in sorted(host):
        got = len(by_rank.get(rank, []))
        if got != per_rank:
            out.append(f"rank {rank} reported {got} thread(s), expected {per_rank}")
    used: dict[tuple[str, int], tuple[int, int]] = {}
    for t in threads:
        if t.cpu not in t.cpus:
            out.append(f"rank {t.rank} thread {t.thread} ran on CPU {t.cpu} outside its "
                       f"binding {sorted(t.cpus)}")
        if topo is None:
            continue
        core = _one_of(t.cpus, topo.core_of)
        if core is None:
            out.append(f"rank {t.rank} thread {t.thread} is not bound to one core "
                       f"(cpus {sorted(t.cpus)})")
            continue
        key = (host.get(t.rank, "?"), core)
        if key in used:
            out.append(f"rank {t.rank} thread {t.thread} shares core {core} with rank "
                       f"{used[key][0]} thread {used[key][1]}")
        used[key] = (t.rank, t.thread)
    if topo is None:
        out.append("processor topology unknown: cannot validate thread binding")
    return out


def series_placement_problems(mapping: str, ranks: Sequence[RankPlacement], per_node: int,
                              topo: Topology | None, cores_per_rank: int = 1,
                              shared_ok: bool = False) -> list[str]:
    """What is wrong with where every rank of an N-rank launch ran, for ``mapping``.

    At most ``per_node`` ranks on a host, every host but one full; no two
    ranks of a host sharing a CPU, and where a host holds several ranks of
    one core each, each bound to one core, unless ``shared_ok``
    (oversubscription asked).
    """
    ordered = sorted(ranks, key=lambda r: r.rank)
    if [r.rank for r in ordered] != list(range(len(ordered))):
        return [f"affinity reported for ranks {[r.rank for r in ordered]}, "
                f"not 0..{len(ordered) - 1}"]
    per_host: dict[str, list[RankPlacement]] = {}
    for r in ordered:
        per_host.setdefault(r.host, []).append(r)
    want = per_node
    out = [f"mapping {mapping}: {len(rs)} ranks ({', '.join(str(r.rank) for r in rs)}) on "
           f"{host}, at most {want} per node" for host, rs in per_host.items() if len(rs) > want]
    short = sorted(host for host, rs in per_host.items() if len(rs) < want)
    if len(short) > 1:
        out.append(f"mapping {mapping}: {len(short)} nodes hold fewer than {want} ranks "
                   f"({', '.join(short)}); only one may")
    if shared_ok:
        return out
    for host, rs in per_host.items():
        out += _shared_cpus(host, rs)
    # A rank alone on its node shares nothing: its binding is the mapping's business.
    crowded = [r for rs in per_host.values() if len(rs) > 1 for r in rs]
    if cores_per_rank == 1 and crowded:
        if topo is None:
            return out + ["processor topology unknown: cannot validate binding"]
        unbound = [r for r in crowded if _one_of(r.cpus, topo.core_of) is None]
        out += [f"rank {r.rank} on {r.host} is not bound to one core (cpus {sorted(r.cpus)})"
                for r in unbound]
        if not unbound and mapping in ("core", "socket"):
            out += [p for host, rs in per_host.items() if len(rs) > 1
                    for p in _socket_problems(mapping, host, rs, topo)]
    return out


def _socket_problems(mapping: str, host: str, ranks: Sequence[RankPlacement],
                     topo: Topology) -> list[str]:
    """Whether one host's ranks (each on one core) sit on its sockets as ``mapping`` asks.

    ``socket``: spread evenly over the sockets (cyclic); ``core``: packed
    onto as few sockets as their cores need (block).
    """
    by_socket: dict[int, list[int]] = {s: [] for s in sorted(set(topo.socket_of.values()))}
    for r in ranks:
        socket = _one_of(r.cpus, topo.socket_of)
        by_socket.setdefault(-1 if socket is None else socket, []).append(r.rank)
    detail = "; ".join(f"socket {s}: " + (", ".join(map(str, rs)) if rs else "none")
                       for s, rs in by_socket.items())
    counts = [len(rs) for rs in by_socket.values()]
    if mapping == "socket" and max(counts) - min(counts) > 1:
        return [f"mapping socket: the {len(ranks)} ranks on {host} are not spread evenly "
                f"over its sockets (ranks by socket: {detail})"]
    cores_per_socket = max(Counter(topo.socket_of[c] for c in set(topo.core_of)).values())
    need = -(-len(ranks) // cores_per_socket)
    used = sum(1 for n in counts if n)
    if mapping == "core" and used > need:
        return [f"mapping core: the {len(ranks)} ranks on {host} use {used} sockets, "
                f"{need} hold them (ranks by socket: {detail})"]
    return []


def prefix_span_problems(ranks: Sequence[RankPlacement], per_node: int,
                         counts: Sequence[int]) -> list[str]:
    """What is wrong with the nodes the first P ranks span, for each P of ``counts``.

    A series measured on prefixes of one world (IMB ``-npmin``) is a node
    count series only if ranks fill nodes in order: the first P ranks must
    span ceil(P / ``per_node``) nodes.
    """
    ordered = sorted(ranks, key=lambda r: r.rank)
    out = []
    for count in counts:
        hosts = sorted({r.host for r in ordered[:count]})
        want = -(-count // per_node)
        if len(hosts) != want:
            out.append(f"the first {count} ranks span {len(hosts)} node(s) "
                       f"({', '.join(hosts)}), not {want} at {per_node} per node")
    return out


def _shared_cpus(host: str, ranks: Sequence[RankPlacement]) -> list[str]:
    """The pairs of ``ranks`` (all on ``host``) whose CPU sets overlap."""
    out = []
    for i, a in enumerate(ranks):
        for b in ranks[i + 1:]:
            both = sorted(a.cpus & b.cpus)
            if both:
                out.append(f"ranks {a.rank} and {b.rank} share CPU(s) "
                           f"{','.join(map(str, both))} on {host}")
    return out
